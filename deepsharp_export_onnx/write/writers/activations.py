"""Activations -> the ONNX operator of the same name (SiLU as x * Sigmoid(x)), from the shared
primitive table. Elementwise ones take any axis order; softmax works on the channel axis, so it
is told where that axis is."""

from __future__ import annotations

import numpy as np

from deepsharp.layers.activations import ActivationStep, PreluStep, SoftplusStep
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


@writes(SoftplusStep, order=None)
def write_softplus(step: SoftplusStep, x: Value, w: Writing) -> Value:
    """PyTorch's nn.Softplus(beta, threshold) as torch.export writes it: Where(Greater(x * beta,
    threshold), x, Softplus(x * beta) / beta); without a threshold, the Div alone."""
    beta = w.constant("beta", np.asarray(step.spec.beta, np.float32), np.float32)
    scaled = w.node("Mul", [x.name, beta], suffix="scaled")
    y = w.node("Div", [w.node("Softplus", [scaled], suffix="soft"), beta],
               suffix=None if step.spec.threshold is None else "back")
    if step.spec.threshold is not None:
        limit = w.constant("threshold", np.asarray(step.spec.threshold, np.float32), np.float32)
        y = w.node("Where", [w.node("Greater", [scaled, limit], suffix="big"), x.name, y])
    return w.value(y, x.dims, x)
