"""Activations -> the ONNX operator of the same name (SiLU as x * Sigmoid(x)), from the shared
primitive table. Elementwise ones take any axis order; softmax works on the channel axis, so it
is told where that axis is."""

from __future__ import annotations

from deepsharp.layers.activations import ActivationStep, PreluStep
from deepsharp_export_onnx.values import Value
from deepsharp_export_onnx.write.writers.base import Writing, writes
from layout import Order


@writes(ActivationStep, order=None)
def write_activation(step: ActivationStep, x: Value, w: Writing) -> Value:
    attrs = step.spec.attrs(x.rank)
    if "axis" in attrs and x.order is Order.CHANNELS_FIRST:
        attrs["axis"] = 1  # the channel axis, where a channels-first value holds it
    y = w.primitive(step.spec.primitive(), [x.name], attrs, [x.rank])
    return w.value(y, x.dims, x)


@writes(PreluStep, order=None)
def write_prelu(step: PreluStep, x: Value, w: Writing) -> Value:
    """PRelu by the slot's slope, along the channel axis of the value's order."""
    axis = 1 if x.order is Order.CHANNELS_FIRST and x.rank > 2 else x.rank - 1
    slope = w.slot("weight", step.weight._data)
    y = w.primitive("prelu", [x.name, slope], {"axis": axis}, [x.rank, 1])
    return w.value(y, x.dims, x)
