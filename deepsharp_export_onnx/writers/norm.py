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
from deepsharp_export_onnx.values import Value
from deepsharp_export_onnx.writers.base import Writing, writes
from layout import Order


def _slots(step, w: Writing, *names: str) -> list[str]:
    return [w.slot(name, getattr(step, name)._data) for name in names]


@writes(LayerNormStep)
def write_layer_norm(step: LayerNormStep, x: Value, w: Writing) -> Value:
    y = w.node("LayerNormalization", [x.name, *_slots(step, w, "weight", "bias")],
               {"axis": -1, "epsilon": float(step.spec.eps)})
    return w.value(y, x.dims, x)


@writes(RmsNormStep)
def write_rms_norm(step: RmsNormStep, x: Value, w: Writing) -> Value:
    y = w.node("RMSNormalization", [x.name, *_slots(step, w, "weight")],
               {"axis": -1, "epsilon": float(step.spec.eps)})
    return w.value(y, x.dims, x)


@writes(BatchNormStep, order=Order.CHANNELS_FIRST)
def write_batch_norm(step: BatchNormStep, x: Value, w: Writing) -> Value:
    # no `momentum`: a training setting, which the reference evaluator of sets 9-13 would apply
    attrs = {"epsilon": float(step.spec.eps)}
    slots = _slots(step, w, "weight", "bias", "running_mean", "running_var")
    return w.value(w.node("BatchNormalization", [x.name, *slots], attrs), x.dims, x)


@writes(GroupNormStep, order=Order.CHANNELS_FIRST)
def write_group_norm(step: GroupNormStep, x: Value, w: Writing) -> Value:
    attrs = {"num_groups": step.groups(), "epsilon": float(step.spec.eps)}
    y = w.node("GroupNormalization", [x.name, *_slots(step, w, "weight", "bias")], attrs)
    return w.value(y, x.dims, x)


@writes(InstanceNormStep, order=Order.CHANNELS_FIRST)
def write_instance_norm(step: InstanceNormStep, x: Value, w: Writing) -> Value:
    y = w.node("InstanceNormalization", [x.name, *_slots(step, w, "weight", "bias")],
               {"epsilon": float(step.spec.eps)})
    return w.value(y, x.dims, x)
