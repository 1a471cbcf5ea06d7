"""conv1d/2d/3d -> Conv and conv_transpose1d/2d/3d -> ConvTranspose, channels-first, kernels
turned by `layout`, the border worked out for the places that reach the step.

Over a masked series (a kernel keeping each series' length: the others are refused by the
step's `mask_refusal`), the kernel runs on each series' real steps alone, as the network's
`masks.over_real_steps` does, channels-last around it:

    real = Unsqueeze(Cast(mask, float), [2])
    front = GatherND(x * real, order)           (`real_first_nodes`: the real steps first)
    y = Transpose(Conv(Transpose(front)))       (the kernel, channels-first)
    out = GatherND(y, places) * real            (the answers at their steps, the padding 0)

The graph cannot branch, so it always reorders (the identity for padding at the end).
`readers/conv.py` reads the form back.
"""

from __future__ import annotations

from typing import Callable

from onnx import TensorProto

from deepsharp.layers.conv import ConvStep, ConvTransposeStep, KernelStep
from deepsharp_export_onnx.write.nodes import Emit
from deepsharp_export_onnx.write.sequence_nodes import along_steps_nodes, real_first_nodes
from deepsharp_export_onnx.write.spatial_nodes import conv_attrs, conv_transpose_attrs
from deepsharp_export_onnx.values import Value
from deepsharp_export_onnx.write.writers.base import Refusal, Writing, writes
from deepsharp_export_onnx.write.writers.windows import fresh, window_dims
from layout import Order, conv_kernel_to_onnx, conv_transpose_kernel_to_onnx

FLOAT = TensorProto.FLOAT


def _inputs(step, x: Value, w: Writing, kernel) -> list[str]:
    inputs = [x.name, w.slot("weight", kernel)]
    if step.spec.bias:
        inputs.append(w.slot("bias", step.bias._data))
    return inputs


def _masked_or_plain(write: Callable[[KernelStep, Value, Writing], Value]):
    """The writer of a kernel step: `write` (on a channels-first value) as it is, or between the
    nodes running it on a masked series' real steps alone."""

    def writer(step: KernelStep, x: Value, w: Writing) -> Value:
        if x.mask is None:
            return write(step, w.turn(x, Order.CHANNELS_FIRST), w)
        return _over_real_steps(step, w.turn(x, Order.CHANNELS_LAST), w, write)

    writer.__name__ = write.__name__
    writer.__doc__ = write.__doc__
    return writer


def _over_real_steps(step: KernelStep, x: Value, w: Writing, write) -> Value:
    """The kernel on each series' real steps alone (the module's docstring); x channels-last."""
    emit = Emit(w.tape, w.base)
    places, order = real_first_nodes(emit, x.mask)
    real = emit("Unsqueeze", [emit("Cast", [x.mask], {"to": FLOAT}, suffix="kept")],
                {"axes": [2]}, suffix="kept_steps")
    zeroed = emit("Mul", [x.name, real], suffix="padding_zeroed")
    front = w.value(along_steps_nodes(emit, zeroed, order, "real_first"), x.dims, x)
    y = w.turn(write(step, w.turn(front, Order.CHANNELS_FIRST), w), Order.CHANNELS_LAST)
    back = along_steps_nodes(emit, y.name, places, "own_places")
    return w.value(emit("Mul", [back, real], suffix="padding_out"), y.dims, y)


def write_conv(step: ConvStep, x: Value, w: Writing) -> Value:
    spec = step.spec
    kernel, strides, dilations = spec.kernel_size, spec.strides, spec.dilations
    places = x.dims[2:]
    attrs = conv_attrs(spec.attrs(), kernel, places)
    y = w.node("Conv", _inputs(step, x, w, conv_kernel_to_onnx(step.weight._data)), attrs)
    out = window_dims(w, places, attrs, kernel, strides, dilations)
    return w.value(y, (x.dims[0], spec.filters, *out), x)


def write_conv_transpose(step: ConvTransposeStep, x: Value, w: Writing) -> Value:
    spec = step.spec
    kernel, strides, dilations = spec.kernel_size, spec.strides, spec.dilations
    extra, pads = spec.output_paddings, spec.pads()
    if any(e >= s for e, s in zip(extra, strides)):  # PyTorch allows it below the dilation
        raise Refusal(f"output_padding {tuple(extra)} is not below the stride {tuple(strides)}: "
                      f"ONNX Runtime's ConvTranspose refuses that at run time (PyTorch allows "
                      f"it below the dilation)")
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


writes(ConvStep, order=None)(_masked_or_plain(write_conv))
writes(ConvTransposeStep, order=None)(_masked_or_plain(write_conv_transpose))
