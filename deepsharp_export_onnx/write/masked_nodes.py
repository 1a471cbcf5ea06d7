"""Node groups for reductions over the real steps of a masked series (channels-last, the mask
(batch, steps) bool), the graph forms of `deepsharp.layers.masks`:

- mean: ReduceSum(x * real) / Max(ReduceSum(real), 1), real = Unsqueeze(Cast(mask, float));
- max: ReduceMax(Where(Unsqueeze(mask), x, -inf)), then Where(Cast(ReduceSum(real), bool), ., 0);
- group and instance norms: each group's mean and biased variance over the real steps;
- attention pooling: the padded steps' scores -1e9 before the softmax, their weights then zero.

`readers/masked.py` reads these groups back.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
from onnx import TensorProto

from deepsharp.layers.attention_pool import LEFT_OUT
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


def masked_group_norm_nodes(emit: Emit, x: str, mask: str, *, channels: int, groups: int,
                            eps: float, weight: str, bias: str) -> str:
    """A group norm (an instance norm: a group per channel) over the real steps of each series:
    the steps' channels cut into groups, each group's mean and biased variance over the real
    steps, (x - mean) / sqrt(var + eps), the channels joined again, then * weight + bias."""
    real = real_nodes(emit, mask, 4)                                             # (N, T, 1, 1)
    grouped = emit("Reshape", [x, emit.constant("groups", [0, 0, groups, channels // groups])],
                   suffix="grouped")                                             # (N, T, G, C/G)
    counted = emit("ReduceSum", [real], {"axes": [1, 3], "keepdims": 1}, suffix="count")
    count = emit("Max", [emit("Mul", [counted, emit.constant(
        "group_width", np.asarray(channels // groups, np.float32), np.float32)], suffix="places"),
        emit.constant("one", np.asarray(1.0, np.float32), np.float32)], suffix="at_least_one")
    total = emit("ReduceSum", [emit("Mul", [grouped, real], suffix="masked")],
                 {"axes": [1, 3], "keepdims": 1}, suffix="total")
    mean = emit("Div", [total, count], suffix="mean")
    centred = emit("Sub", [grouped, mean], suffix="centred")
    kept = emit("Mul", [centred, real], suffix="centred_real")
    spread = emit("ReduceSum", [emit("Mul", [kept, kept], suffix="squares")],
                  {"axes": [1, 3], "keepdims": 1}, suffix="spread")
    var = emit("Div", [spread, count], suffix="var")
    scale = emit("Sqrt", [emit("Add", [var, emit.constant("eps", np.asarray(eps, np.float32),
                                                          np.float32)], suffix="var_eps")],
                 suffix="std")
    normalised = emit("Div", [centred, scale], suffix="normalised")
    joined = emit("Reshape", [normalised, emit.constant("channels", [0, 0, channels])],
                  suffix="joined")
    return emit("Add", [emit("Mul", [joined, weight], suffix="scaled"), bias])


def attention_pool_nodes(emit: Emit, x: str, mask: str | None, weight: str) -> str:
    """Attention pooling: scores ReduceSum(x * w) over the channels, Where(mask, ., -1e9),
    Softmax over the steps, * Cast(mask) (a series with no real step then weighs nothing), and
    the steps weighed: ReduceSum(x * Unsqueeze(weights)) over the steps."""
    scores = emit("ReduceSum", [emit("Mul", [x, weight], suffix="scored")],
                  {"axes": [2], "keepdims": 0}, suffix="scores")
    if mask is not None:
        scores = emit("Where", [mask, scores, emit.constant(
            "left_out", np.asarray(LEFT_OUT, np.float32), np.float32)], suffix="masked_scores")
    weights = emit("Softmax", [scores], {"axis": 1}, suffix="weights")
    if mask is not None:
        real = emit("Cast", [mask], {"to": FLOAT}, suffix="real")
        weights = emit("Mul", [weights, real], suffix="real_weights")
    spread = emit("Unsqueeze", [weights], {"axes": [2]}, suffix="per_step")
    return emit("ReduceSum", [emit("Mul", [x, spread], suffix="weighted")],
                {"axes": [1], "keepdims": 0})
