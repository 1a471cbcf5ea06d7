"""dense -> MatMul by the (in, out) kernel, then Add of the bias.

After a flatten of a channels-first image (Order.FLAT_CHANNELS_FIRST) the kernel's rows are put in
ONNX's channel-by-channel order by `layout`, so the flatten needs no Transpose.
"""

from __future__ import annotations

from deepsharp.layers.dense import DenseStep
from deepsharp_export_onnx.values import Value
from deepsharp_export_onnx.write.writers.base import Writing, writes
from layout import Order, dense_kernel_to_matmul, flat_rows_to_channels_first


@writes(DenseStep, flat_rows=True)
def write_dense(step: DenseStep, x: Value, w: Writing) -> Value:
    kernel = step.weight._data
    if x.order is Order.FLAT_CHANNELS_FIRST:
        kernel = flat_rows_to_channels_first(kernel, x.image)
    kernel = w.slot("weight", dense_kernel_to_matmul(kernel))
    if step.spec.bias:
        y = w.node("MatMul", [x.name, kernel], suffix="matmul")
        y = w.node("Add", [y, w.slot("bias", step.bias._data)])
    else:
        y = w.node("MatMul", [x.name, kernel])
    return w.value(y, x.dims[:-1] + (step.spec.units,), x, order=Order.CHANNELS_LAST, image=None)
