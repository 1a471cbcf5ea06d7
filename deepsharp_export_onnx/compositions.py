"""Compositions of ONNX nodes for layers whose numbers depend on a series' length, which the
graph leaves free (the symbol `steps`): the length is read from the graph's `Shape` at run time.

One function per composition, used by the writer that writes it and by the reader that reads it
back (the reader rebuilds the composition and compares it node by node), so the two cannot come
to disagree. Every value is channels-first, x (N, C, L).

- adaptive pooling to `size` bins: bin i covers places [floor(i L / size), ceil((i + 1) L / size))
  (integer arithmetic on the length); an average is a product by the bins' weights (L, size), a
  max a ReduceMax of the places inside each bin, the others made -inf by a Where;
- an upsampling to `size` places: Resize given the sizes (N, C, size), N and C from the Shape.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from onnx import TensorProto

from deepsharp_export_onnx.write.nodes import Emit


def _length(emit: Emit, x: str) -> str:
    """The 0-d length of x's last axis."""
    shape = emit("Shape", [x], suffix="shape")
    return emit("Gather", [shape, emit.constant("axis", 2)], {"axis": 0}, suffix="length")


def adaptive_pool_over_length(emit: Emit, x: str, size: int, average: bool) -> str:
    """Nodes pooling x (N, C, L) into `size` of PyTorch's adaptive bins; returns (N, C, size)."""
    length = _length(emit, x)
    places = emit("Range", [emit.constant("zero", 0), length, emit.constant("one", 1)],
                  suffix="places")
    scaled = emit("Mul", [emit.constant("bins", np.arange(size)), length], suffix="scaled")
    starts = emit("Div", [scaled, emit.constant("size", size)], suffix="starts")
    scaled_next = emit("Mul", [emit.constant("next_bins", np.arange(1, size + 1)), length],
                       suffix="scaled_next")
    rounded = emit("Add", [scaled_next, emit.constant("size_less_one", size - 1)], suffix="rounded")
    ends = emit("Div", [rounded, emit.constant("size", size)], suffix="ends")
    if average:  # a column of places against a row of bins: (L, size)
        places = emit("Unsqueeze", [places], {"axes": [1]}, suffix="column")
    else:        # a column of bins against a row of places: (size, L)
        starts = emit("Unsqueeze", [starts], {"axes": [1]}, suffix="start_column")
        ends = emit("Unsqueeze", [ends], {"axes": [1]}, suffix="end_column")
    before = emit("Less", [places, starts], suffix="before")
    after_start = emit("Not", [before], suffix="after_start")
    before_end = emit("Less", [places, ends], suffix="before_end")
    inside = emit("And", [after_start, before_end], suffix="inside")
    if average:
        count = emit("Sub", [ends, starts], suffix="count")
        widths = emit("Cast", [count], {"to": TensorProto.FLOAT}, suffix="widths")
        mask = emit("Cast", [inside], {"to": TensorProto.FLOAT}, suffix="mask")
        weights = emit("Div", [mask, widths], suffix="weights")
        return emit("MatMul", [x, weights])
    spread = emit("Unsqueeze", [x], {"axes": [2]}, suffix="spread")          # (N, C, 1, L)
    lowest = emit.constant("lowest", -np.inf, np.float32)
    masked = emit("Where", [inside, spread, lowest], suffix="masked")       # (N, C, size, L)
    return emit("ReduceMax", [masked], {"axes": [3], "keepdims": 0})


def resize_over_length(emit: Emit, x: str, size: int, coordinates: dict[str, Any]) -> str:
    """Resize of x (N, C, L) to (N, C, size), the sizes made from x's Shape."""
    shape = emit("Shape", [x], suffix="shape")
    kept = emit("Slice", [shape, emit.constant("keep_from", [0]), emit.constant("keep_to", [2])],
                suffix="kept")
    sizes = emit("Concat", [kept, emit.constant("size", [size])], {"axis": 0}, suffix="sizes")
    empty = emit.constant("empty", [], np.float32)
    return emit("Resize", [x, empty, empty, sizes], coordinates)
