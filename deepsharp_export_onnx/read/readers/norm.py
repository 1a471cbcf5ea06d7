"""LayerNormalization, RMSNormalization, BatchNormalization, GroupNormalization and
InstanceNormalization -> the normalisation layers of the same names; PyTorch's GroupNorm below
operator set 21 (an InstanceNormalization of the groups between Reshapes) -> group_norm."""

from __future__ import annotations

import numpy as np
import onnx

from deepsharp_export_onnx.read.readers.base import Read, Reading, reads, reads_pattern
from deepsharp_export_onnx.read.readers.patterns import (
    attrs, constant_list, consumer, other_input, reshaped_dims,
)
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
    """InstanceNormalization by its scale and bias; at scale 1 and bias 0 followed by a Mul and
    an Add along the channels (PyTorch's GroupNorm of one channel a group, its Reshapes dropped
    as no-ops), those are its weight and bias."""
    channels_first(node, r)
    attrs = r.view.attrs(node)
    spec = spec_of(node, r, "instance_norm", eps=decimal32(attrs.get("epsilon", 1e-5)))
    slots = _slots(node, r, "weight", "bias")
    if np.all(slots["weight"] == 1) and np.all(slots["bias"] == 0):
        affine, nodes, out = _affine_after(r, node.output[0], slots["weight"].size)
        if len(nodes) == 2:
            return Read(out, [node, *nodes], [spec], [affine])
    return Read(node.output[0], [node], [spec], [slots])


@reads_pattern("Reshape")
def read_group_norm_by_instances(node: onnx.NodeProto, r: Reading) -> Read | None:
    """nn.GroupNorm as PyTorch writes it below operator set 21: Reshape to [0, G, -1],
    InstanceNormalization (scale 1, bias 0), Reshape back, Mul by the weight and Add of the bias
    (C, 1, ...) -> group_norm(G)."""
    dims = r.view.dims(r.value)
    if node.input[0] != r.value or r.order is not Order.CHANNELS_FIRST or r.rank < 3 \
            or dims is None or not isinstance(dims[1], int):
        return None
    into = constant_list(r, node.input[1]) if len(node.input) > 1 else None
    norm = consumer(r, node.output[0], "InstanceNormalization")
    back = consumer(r, norm.output[0], "Reshape") if norm is not None else None
    restored = _restores(r, back, dims) if back is not None else None
    if into is None or len(into) != 3 or into[0] != 0 or into[2] != -1 or restored is None \
            or attrs(node).get("allowzero", 0):
        return None
    groups, channels = int(into[1]), int(dims[1])
    scale, shift = (r.view.constant(n) for n in norm.input[1:3])
    if scale is None or shift is None or not (np.all(scale == 1) and np.all(shift == 0)) \
            or scale.size != groups or groups < 1 or channels % groups:
        return None
    slots, nodes, out = _affine_after(r, back.output[0], channels)
    eps = decimal32(r.view.attrs(norm).get("epsilon", 1e-5))
    spec = spec_of(node, r, "group_norm", groups=groups, eps=eps)
    return Read(out, [node, norm, *restored, back, *nodes], [spec], [slots])


def _affine_after(r: Reading, out: str, channels: int) -> tuple[dict, list, str]:
    """The weight and bias of a Mul and an Add along the channels after `out` (each (C, 1, ...)
    or one value; 1 and 0 where absent): (slots, their nodes, the value after them)."""
    slots = {"weight": np.ones(channels, np.float32), "bias": np.zeros(channels, np.float32)}
    nodes = []
    for op, slot in (("Mul", "weight"), ("Add", "bias")):
        step = consumer(r, out, op)
        value = r.view.constant(other_input(step, out)) if step is not None else None
        along = value is not None and value.ndim == r.rank - 1 and value.shape[0] == channels \
            and value.size == channels  # (C, 1, ...): along a channels-first value's channels
        if value is None or not (along or (value.size == 1 and value.ndim <= r.rank - 1)):
            break  # (affine=False writes 1 and 0 of shape (1, 1, ...))
        slots[slot] = np.broadcast_to(value.reshape(-1), (channels,)).astype(np.float32)
        nodes.append(step)
        out = step.output[0]
    return slots, nodes, out


def _restores(r: Reading, back: onnx.NodeProto, dims: tuple) -> list | None:
    """The nodes computing its shape (none for a constant) when the Reshape gives back the dims
    the group norm's input has: the same dims, [0, C, -1] of a series, or Shape(input) itself
    (sizes not known: after a pool over a symbolic length); else None."""
    out = reshaped_dims(r, back)
    if out is not None and len(out) == len(dims) and all(
            a == b and a is not None for a, b in zip(out, dims)):
        return []
    if len(back.input) < 2 or attrs(back).get("allowzero", 0):
        return None
    if len(dims) == 3 and constant_list(r, back.input[1]) == [0, dims[1], -1]:
        return []
    shape = r.view.producer.get(back.input[1])
    if shape is not None and shape.op_type == "Shape" and shape.input[0] == r.value \
            and not attrs(shape) and r.view.open_consumers(shape.output[0]) == [back]:
        return [shape]
    return None
