"""Node groups for reductions over the real steps of a masked series (channels-last, the mask
(batch, steps) bool), the graph forms of `deepsharp.layers.masks`:

- mean: ReduceSum(x * real) / Max(ReduceSum(real), 1), real = Unsqueeze(Cast(mask, float));
- max: ReduceMax(Where(Unsqueeze(mask), x, -inf)), then Where(Cast(ReduceSum(real), bool), ., 0);
- moments (the norms): the mean and biased variance over the real places of `axes`.

`readers/masked.py` reads these groups back.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
from onnx import TensorProto

from deepsharp_export_onnx.write.nodes import Emit

FLOAT, BOOL = TensorProto.FLOAT, TensorProto.BOOL


def real_nodes(emit: Emit, mask: str, rank: int) -> str:
    """The mask as 0/1 floats of shape (batch, steps, 1, ...) for a value of `rank`."""
    real = emit("Cast", [mask], {"to": FLOAT}, suffix="real")
    return emit("Unsqueeze", [real], {"axes": list(range(2, rank))}, suffix="real_steps")


def _count(emit: Emit, real: str, axes: Sequence[int], keepdims: int) -> str:
    return emit("ReduceSum", [real], {"axes": list(axes), "keepdims": keepdims}, suffix="count")


def masked_mean_nodes(emit: Emit, x: str, mask: str, keepdims: int) -> str:
    real = real_nodes(emit, mask, 3)
    total = emit("ReduceSum", [emit("Mul", [x, real], suffix="masked")],
                 {"axes": [1], "keepdims": keepdims}, suffix="total")
    count = emit("Max", [_count(emit, real, [1], keepdims),
                         emit.constant("one", np.asarray(1.0, np.float32), np.float32)],
                 suffix="at_least_one")
    return emit("Div", [total, count])


def masked_max_nodes(emit: Emit, x: str, mask: str, keepdims: int) -> str:
    real = real_nodes(emit, mask, 3)
    condition = emit("Unsqueeze", [mask], {"axes": [2]}, suffix="real_condition")
    filled = emit("Where", [condition, x, emit.constant("padding", np.asarray(-np.inf, np.float32),
                                                        np.float32)], suffix="masked")
    largest = emit("ReduceMax", [filled], {"axes": [1], "keepdims": keepdims}, suffix="largest")
    has_real = emit("Cast", [_count(emit, real, [1], keepdims)], {"to": BOOL}, suffix="has_real")
    return emit("Where", [has_real, largest,
                          emit.constant("empty", np.asarray(0.0, np.float32), np.float32)])
