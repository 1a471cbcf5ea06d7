"""dense -> MatMul by the (in, out) kernel, then Add of the bias."""

from __future__ import annotations

from deepsharp.layers.dense import DenseStep
from deepsharp_export_onnx.values import Value
from deepsharp_export_onnx.writers.base import Writing, writes
from layout import dense_kernel_to_matmul


@writes(DenseStep)
def write_dense(step: DenseStep, x: Value, w: Writing) -> Value:
    kernel = w.slot("weight", dense_kernel_to_matmul(step.weight._data))
    if step.spec.bias:
        y = w.node("MatMul", [x.name, kernel], suffix="matmul")
        y = w.node("Add", [y, w.slot("bias", step.bias._data)])
    else:
        y = w.node("MatMul", [x.name, kernel])
    return w.value(y, x.dims[:-1] + (step.spec.units,), x)
