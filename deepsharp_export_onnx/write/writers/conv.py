"""conv1d/2d/3d -> Conv and conv_transpose1d/2d/3d -> ConvTranspose, channels-first, kernels
turned by `layout`, the border worked out for the places that reach the step."""

from __future__ import annotations

from deepsharp.layers.conv import ConvStep, ConvTransposeStep
from deepsharp_export_onnx.write.spatial_nodes import conv_attrs, conv_transpose_attrs
from deepsharp_export_onnx.values import Value
from deepsharp_export_onnx.write.writers.base import Writing, writes
from deepsharp_export_onnx.write.writers.windows import fresh, window_dims
from layout import Order, conv_kernel_to_onnx, conv_transpose_kernel_to_onnx


def _inputs(step, x: Value, w: Writing, kernel) -> list[str]:
    inputs = [x.name, w.slot("weight", kernel)]
    if step.spec.bias:
        inputs.append(w.slot("bias", step.bias._data))
    return inputs


@writes(ConvStep, order=Order.CHANNELS_FIRST)
def write_conv(step: ConvStep, x: Value, w: Writing) -> Value:
    spec = step.spec
    kernel, strides, dilations = spec.kernel_size, spec.strides, spec.dilations
    places = x.dims[2:]
    attrs = conv_attrs(spec.attrs(), kernel, places)
    y = w.node("Conv", _inputs(step, x, w, conv_kernel_to_onnx(step.weight._data)), attrs)
    out = window_dims(w, places, attrs, kernel, strides, dilations)
    return w.value(y, (x.dims[0], spec.filters, *out), x)


@writes(ConvTransposeStep, order=Order.CHANNELS_FIRST)
def write_conv_transpose(step: ConvTransposeStep, x: Value, w: Writing) -> Value:
    spec = step.spec
    kernel, strides, dilations = spec.kernel_size, spec.strides, spec.dilations
    extra, pads = spec.output_paddings, spec.pads()
    attrs = conv_transpose_attrs(spec.attrs(), kernel)
    y = w.node("ConvTranspose", _inputs(step, x, w, conv_transpose_kernel_to_onnx(step.weight._data)),
               attrs)
    nd = len(kernel)
    out = []
    for i, n in enumerate(x.dims[2:]):
        if isinstance(n, int):
            out.append(spec.output_lengths([n] * nd)[i])
        elif strides[i] == 1 and pads[i] + pads[nd + i] == (kernel[i] - 1) * dilations[i] + extra[i]:
            out.append(n)
        else:
            out.append(fresh(w, n))
    return w.value(y, (x.dims[0], spec.filters, *out), x)
