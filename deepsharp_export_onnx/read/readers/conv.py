"""Conv -> conv1d/2d/3d, ConvTranspose -> conv_transpose1d/2d/3d. Kernels are turned by `layout`
only; the border becomes the padding argument that gives it."""

from __future__ import annotations

import onnx

from deepsharp_export_onnx.read.readers.base import Read, Reading, reads
from deepsharp_export_onnx.read.readers.windows import (
    border_of, channels_first, compact, int_attr_list, padding_of, spec_of,
)
from layout import onnx_to_conv_kernel, onnx_to_conv_transpose_kernel


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


@reads("Conv")
def read_conv(node: onnx.NodeProto, r: Reading) -> Read:
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
