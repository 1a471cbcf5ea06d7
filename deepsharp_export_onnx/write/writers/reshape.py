"""flatten -> Flatten, reshape -> Reshape.

A flatten of a channels-first image followed (through activations and training-only layers) by a
step whose writer takes such rows (a dense layer, which permutes its kernel's rows) is one
Flatten of the channels-first value and no Transpose. Anywhere else (the end of the network, a
concatenation, a normalisation) the image is first turned channels-last, so the row holds its
values in the network's order: one Transpose, the one where the data leaves the spatial part.
"""

from __future__ import annotations

import numpy as np

from deepsharp.layers.activations import ActivationStep
from deepsharp.layers.reshape import FlattenStep, ReshapeStep
from deepsharp_export_onnx.values import Value
from deepsharp_export_onnx.write.writers.base import Writing, writer_for, writes
from deepsharp_export_onnx.write.writers.windows import fresh
from layout import Order


def _rows_taken_as_they_are(w: Writing) -> bool:
    """Whether the next step that computes across values takes a channels-first row."""
    for step in w.following:
        if step.spec.training_only or isinstance(step, ActivationStep):
            continue  # elementwise or per-row: any order of the row's values gives the same
        entry = writer_for(step)
        return entry is not None and entry.flat_rows
    return False


@writes(FlattenStep, order=None)
def write_flatten(step: FlattenStep, x: Value, w: Writing) -> Value:
    keep_first = x.order is Order.CHANNELS_FIRST and _rows_taken_as_they_are(w)
    if not keep_first:
        x = w.turn(x, Order.CHANNELS_LAST)
    y = w.node("Flatten", [x.name], {"axis": 1})
    rest = x.dims[1:]
    width = int(np.prod(rest)) if all(isinstance(n, int) for n in rest) else fresh(w, "values")
    if keep_first:
        return w.value(y, (x.dims[0], width), x, order=Order.FLAT_CHANNELS_FIRST,
                       image=tuple(step.input_shape))
    return w.value(y, (x.dims[0], width), x, order=Order.CHANNELS_LAST)


@writes(ReshapeStep)
def write_reshape(step: ReshapeStep, x: Value, w: Writing) -> Value:
    target = tuple(step.spec.shape)
    y = w.node("Reshape", [x.name, w.constant("shape", [0, *target])])
    return w.value(y, (x.dims[0], *target), x)
