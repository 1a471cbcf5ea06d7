"""LayerNormalization, RMSNormalization, BatchNormalization, GroupNormalization and
InstanceNormalization -> the normalisation layers of the same names."""

from __future__ import annotations

import onnx

from deepsharp_export_onnx.read.readers.base import Read, Reading, reads
from deepsharp_export_onnx.read.readers.windows import channels_first, decimal32, spec_of
from layout import Order


def _slots(node: onnx.NodeProto, r: Reading, *names: str) -> dict:
    if len([i for i in node.input[1:] if i]) != len(names):
        raise r.unreadable(node, f"it needs the inputs {', '.join(names)} as constants")
    return {name: r.need_constant(node, i + 1, name) for i, name in enumerate(names)}


def _last_axis(node: onnx.NodeProto, r: Reading, attrs: dict) -> None:
    axis = int(attrs.get("axis", -1))
    if axis % r.rank != r.rank - 1 or (r.order is not Order.CHANNELS_LAST and r.rank >= 3):
        raise r.unreadable(node, f"axis {axis} of a rank-{r.rank} {r.order.value} value: the layer "
                                 f"normalises the channels, the last axis of a channels-last value")


@reads("LayerNormalization")
def read_layer_norm(node: onnx.NodeProto, r: Reading) -> Read:
    attrs = r.view.attrs(node)
    _last_axis(node, r, attrs)
    spec = spec_of(node, r, "layer_norm", eps=decimal32(attrs.get("epsilon", 1e-5)))
    return Read(node.output[0], [node], [spec], [_slots(node, r, "weight", "bias")])


@reads("RMSNormalization")
def read_rms_norm(node: onnx.NodeProto, r: Reading) -> Read:
    attrs = r.view.attrs(node)
    _last_axis(node, r, attrs)
    spec = spec_of(node, r, "rms_norm", eps=decimal32(attrs.get("epsilon", 1e-5)))
    return Read(node.output[0], [node], [spec], [_slots(node, r, "weight")])


@reads("BatchNormalization")
def read_batch_norm(node: onnx.NodeProto, r: Reading) -> Read:
    channels_first(node, r)
    attrs = r.view.attrs(node)
    if attrs.get("training_mode", 0) or len(node.output) > 1:
        raise r.unreadable(node, "training mode: a network's graph normalises by running "
                                 "statistics")
    # the graph holds no momentum (a training setting): the layer takes PyTorch's 0.1
    spec = spec_of(node, r, "batch_norm", eps=decimal32(attrs.get("epsilon", 1e-5)))
    slots = _slots(node, r, "weight", "bias", "running_mean", "running_var")
    return Read(node.output[0], [node], [spec], [slots])


@reads("GroupNormalization")
def read_group_norm(node: onnx.NodeProto, r: Reading) -> Read:
    channels_first(node, r)
    attrs = r.view.attrs(node)
    if r.view.opset < 21:
        raise r.unreadable(node, "GroupNormalization before operator set 21 scales each group, "
                                 "not each channel")
    spec = spec_of(node, r, "group_norm", groups=int(attrs["num_groups"]),
                   eps=decimal32(attrs.get("epsilon", 1e-5)))
    return Read(node.output[0], [node], [spec], [_slots(node, r, "weight", "bias")])


@reads("InstanceNormalization")
def read_instance_norm(node: onnx.NodeProto, r: Reading) -> Read:
    channels_first(node, r)
    attrs = r.view.attrs(node)
    spec = spec_of(node, r, "instance_norm", eps=decimal32(attrs.get("epsilon", 1e-5)))
    return Read(node.output[0], [node], [spec], [_slots(node, r, "weight", "bias")])
