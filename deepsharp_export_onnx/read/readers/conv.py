"""Conv -> conv1d/2d/3d, ConvTranspose -> conv_transpose1d/2d/3d. Kernels are turned by `layout`
only; the border becomes the padding argument that gives it.

Over a masked series the exporter writes a kernel between the nodes running it on each series'
real steps alone (`write/writers/conv.py`): Mul by Unsqueeze(Cast(mask, float), [2]), GatherND by
the order putting the real steps first, Transpose, the node, Transpose, GatherND by the places,
and Mul by the same real steps. A Conv reading a masked series directly (a graph written before
convolutions honoured masks, which convolves the padding as real steps) is refused: no layer
means that.
"""

from __future__ import annotations

from dataclasses import replace

import onnx

from deepsharp_export_onnx.read.readers.base import Read, Reading, reads, reads_pattern
from deepsharp_export_onnx.read.readers.masked import read_along_steps, read_order, read_real
from deepsharp_export_onnx.read.readers.patterns import consumer, perm_of
from deepsharp_export_onnx.read.readers.windows import (
    border_of, channels_first, compact, int_attr_list, padding_of, spec_of,
)
from layout import Order, onnx_to_conv_kernel, onnx_to_conv_transpose_kernel

MASKED_FORM = ("a kernel over a masked series is written x * Unsqueeze(Cast(mask, float), [2]), "
               "GatherND by the order putting the real steps first, Transpose [0, 2, 1], the "
               "Conv or ConvTranspose, Transpose [0, 2, 1], GatherND by the places, and Mul by "
               "the same real steps")


def _slots(node: onnx.NodeProto, r: Reading, kernel) -> dict:
    slots = {"weight": kernel}
    if len(node.input) > 2 and node.input[2]:
        slots["bias"] = r.need_constant(node, 2, "bias")
    return slots


def _window(node: onnx.NodeProto, r: Reading, attrs: dict, w) -> tuple[int, list, list]:
    nd = w.ndim - 2
    if nd not in (1, 2, 3):
        raise r.unreadable(node, f"a kernel of {nd} place axes; conv layers have 1, 2 or 3")
    shape = int_attr_list(attrs, "kernel_shape", w.shape[2:])
    if tuple(shape) != tuple(w.shape[2:]):
        raise r.unreadable(node, f"kernel_shape {shape} differs from the kernel's {w.shape[2:]}")
    return nd, int_attr_list(attrs, "strides", [1] * nd), int_attr_list(attrs, "dilations", [1] * nd)


def _channels_match(node: onnx.NodeProto, r: Reading, channels: int) -> None:
    dims = r.view.dims(node.input[0]) or ()
    if len(dims) > 1 and isinstance(dims[1], int) and dims[1] != channels:
        raise r.unreadable(node, f"its kernel reads {channels} channels, the value {node.input[0]!r} "
                                 f"(dims {list(dims)}) has {dims[1]} on its channel axis")


def _unmasked(node: onnx.NodeProto, r: Reading) -> None:
    if r.extra.get("mask") is not None:
        raise r.unreadable(node, f"it reads a masked series as it is, convolving the padding as "
                                 f"real steps (a graph written before convolutions honoured "
                                 f"masks: export it again); {MASKED_FORM}")


@reads("Conv")
def read_conv(node: onnx.NodeProto, r: Reading) -> Read:
    _unmasked(node, r)
    channels_first(node, r)
    attrs = r.view.attrs(node)
    w = r.need_constant(node, 1, "kernel")
    nd, strides, dilations = _window(node, r, attrs, w)
    groups = int(attrs.get("group", 1))
    _channels_match(node, r, w.shape[1] * groups)
    slots = _slots(node, r, onnx_to_conv_kernel(w))
    spec = spec_of(node, r, f"conv{nd}d",
        filters=w.shape[0], kernel=compact(w.shape[2:]), stride=compact(strides),
        padding=border_of(node, r, attrs, nd), dilation=compact(dilations), groups=groups,
        bias="bias" in slots)
    return Read(node.output[0], [node], [spec], [slots])


@reads("ConvTranspose")
def read_conv_transpose(node: onnx.NodeProto, r: Reading) -> Read:
    _unmasked(node, r)
    channels_first(node, r)
    attrs = r.view.attrs(node)
    if int(attrs.get("group", 1)) != 1 or "output_shape" in attrs:
        raise r.unreadable(node, "group != 1 and output_shape have no conv_transpose argument")
    if attrs.get("auto_pad", "NOTSET") != "NOTSET":
        raise r.unreadable(node, f"auto_pad {attrs['auto_pad']!r}: conv_transpose layers are "
                                 f"written with explicit pads")
    w = r.need_constant(node, 1, "kernel")
    nd, strides, dilations = _window(node, r, attrs, w)
    extra = int_attr_list(attrs, "output_padding", [0] * nd)
    slots = _slots(node, r, onnx_to_conv_transpose_kernel(w))
    spec = spec_of(node, r, f"conv_transpose{nd}d",
        filters=w.shape[1], kernel=compact(w.shape[2:]), stride=compact(strides),
        padding=padding_of(int_attr_list(attrs, "pads", [0] * (2 * nd)), nd),
        output_padding=compact(extra), dilation=compact(dilations), bias="bias" in slots)
    return Read(node.output[0], [node], [spec], [slots])


# -- over a masked series' real steps --------------------------------------------------------------
KERNELS = {"Conv": read_conv, "ConvTranspose": read_conv_transpose}


def _zeroing(r: Reading, node: onnx.NodeProto | None, value: str, real: str | None = None
             ) -> list[onnx.NodeProto] | None:
    """The nodes making the real steps [Cast, Unsqueeze] when `node` is Mul(value, real steps)
    (`real` given: that value), else None."""
    if node is None or node.op_type != "Mul" or list(node.input[:1]) != [value]:
        return None
    found = read_real(r, node.input[1])
    if found is None or (real is not None and node.input[1] != real):
        return None
    return found


@reads_pattern("Mul")
def read_masked_kernel(node: onnx.NodeProto, r: Reading) -> Read | None:
    """A conv1d or conv_transpose1d on a masked series' real steps alone (the module's form)."""
    real = _zeroing(r, node, r.value) if r.rank == 3 and r.order is Order.CHANNELS_LAST else None
    front = consumer(r, node.output[0], "GatherND") if real is not None else None
    if front is None:
        return None
    order, gathered = read_along_steps(r, front)
    moved = read_order(r, front, order)
    turn = consumer(r, front.output[0], "Transpose")
    kernel = consumer(r, turn.output[0], *KERNELS) if turn is not None else None
    if kernel is None or perm_of(turn) != [0, 2, 1]:
        raise r.unreadable(front, MASKED_FORM)
    inner = replace(r, value=kernel.input[0], order=Order.CHANNELS_FIRST, extra={})
    read = KERNELS[kernel.op_type](kernel, inner)
    back_turn = consumer(r, kernel.output[0], "Transpose")
    back = consumer(r, back_turn.output[0], "GatherND") if back_turn is not None else None
    places, put_back = read_along_steps(r, back) if back is not None else (None, [])
    out = consumer(r, back.output[0], "Mul") if back is not None else None
    if perm_of(back_turn) != [0, 2, 1] or places != moved.places \
            or _zeroing(r, out, back.output[0], node.input[1]) is None:
        raise r.unreadable(kernel, MASKED_FORM)
    _refuse_unless_exact(kernel, r, read)
    nodes = [*real, node, *moved.nodes, *gathered, turn, *read.nodes, back_turn, *put_back, out]
    return Read(out.output[0], nodes, read.specs, read.slots, order=Order.CHANNELS_LAST)


def _refuse_unless_exact(node: onnx.NodeProto, r: Reading, read: Read) -> None:
    """The layer read must keep each series' length, to run on its real steps alone."""
    spec = read.specs[0]
    if not spec.keeps_length():
        raise r.unreadable(node, f"{spec.describe()} does not keep a series' length (stride 1, "
                                 f"pads adding up to the dilated window less one), so it cannot "
                                 f"run on a masked series' real steps alone")
