"""Normalisations -> the ONNX operator of the same name.

layer_norm -> LayerNormalization (17) and rms_norm -> RMSNormalization (23) over the last axis,
so channels-last (a channels-first image is turned for them); batch_norm -> BatchNormalization
from the running statistics, group_norm -> GroupNormalization (21), instance_norm ->
InstanceNormalization, channels-first as those operators take them.
"""

from __future__ import annotations

from deepsharp.layers.norm import (
    BatchNormStep, GroupNormStep, InstanceNormStep, LayerNormStep, RmsNormStep,
)
from deepsharp_export_onnx.write.masked_nodes import masked_group_norm_nodes
from deepsharp_export_onnx.write.nodes import Emit
from deepsharp_export_onnx.write.spatial_nodes import norm_node
from deepsharp_export_onnx.values import Value
from deepsharp_export_onnx.write.writers.base import Writing, writes
from layout import Order


def _slots(step, w: Writing, *names: str) -> list[str]:
    return [w.slot(name, getattr(step, name)._data) for name in names]


def _norm(step, x: Value, w: Writing, primitive: str, slots: tuple[str, ...], **attrs) -> Value:
    inputs = [x.name, *_slots(step, w, *slots)]
    y = norm_node(Emit(w.tape, w.base), primitive, inputs, {"eps": step.spec.eps, **attrs})
    return w.value(y, x.dims, x)


@writes(LayerNormStep)
def write_layer_norm(step: LayerNormStep, x: Value, w: Writing) -> Value:
    return _norm(step, x, w, "layer_norm", ("weight", "bias"))


@writes(RmsNormStep)
def write_rms_norm(step: RmsNormStep, x: Value, w: Writing) -> Value:
    return _norm(step, x, w, "rms_norm", ("weight",))


@writes(BatchNormStep, order=Order.CHANNELS_FIRST)
def write_batch_norm(step: BatchNormStep, x: Value, w: Writing) -> Value:
    return _norm(step, x, w, "batch_norm_eval", ("weight", "bias", "running_mean", "running_var"))


def _masked_group_norm(step: GroupNormStep, x: Value, w: Writing) -> Value:
    """Over a masked series, statistics from the real steps only (`masked_nodes`)."""
    x = w.turn(x, Order.CHANNELS_LAST)
    weight, bias = _slots(step, w, "weight", "bias")
    y = masked_group_norm_nodes(Emit(w.tape, w.base), x.name, x.mask, channels=x.dims[-1],
                                groups=step.groups(), eps=float(step.spec.eps), weight=weight,
                                bias=bias)
    return w.value(y, x.dims, x)


@writes(GroupNormStep, order=None)
def write_group_norm(step: GroupNormStep, x: Value, w: Writing) -> Value:
    if x.mask is not None:
        return _masked_group_norm(step, x, w)
    x = w.turn(x, Order.CHANNELS_FIRST)
    return _norm(step, x, w, "group_norm", ("weight", "bias"), groups=step.groups())


@writes(InstanceNormStep, order=None)
def write_instance_norm(step: InstanceNormStep, x: Value, w: Writing) -> Value:
    if x.mask is not None:
        return _masked_group_norm(step, x, w)
    x = w.turn(x, Order.CHANNELS_FIRST)
    y = w.node("InstanceNormalization", [x.name, *_slots(step, w, "weight", "bias")],
               {"epsilon": float(step.spec.eps)})
    return w.value(y, x.dims, x)
