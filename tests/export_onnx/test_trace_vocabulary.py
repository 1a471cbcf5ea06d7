"""The tensor vocabulary traced: every op, at every element type it takes, runs in ONNX Runtime
(and the reference evaluator) at the traced size and other sizes of every symbolic axis, and the
graph passes check_model(full_check=True) at the operator set chosen for its element types."""

from __future__ import annotations

import math

import numpy as np
import pytest

from deepsharp import Module, Parameter
from deepsharp import functional as F
from deepsharp.errors import TraceErrorKind, TraceException
from deepsharp.tensors import Tensor
from tests.support.trace_check import check_trace

_rng = np.random.default_rng(11)
W = Tensor(_rng.standard_normal((5, 4)).astype(np.float32))      # (out, in) for F.linear
BIAS = Tensor(_rng.standard_normal(5).astype(np.float32))
LOW = Tensor(_rng.standard_normal(4).astype(np.float32) * 0.3 - 0.4)
POSITIONS = Tensor(np.array([3, 0, -1, 1]))
MASK = np.array([True, False, True, True])

B = {"batch": (7, 1, 8)}
BT = {"batch": (7, 1, 6), "steps": (5, 2, 9)}
X = {"x": ("batch", 4)}
XY = {"x": ("batch", 4), "y": ("batch", 4)}
XS = {"x": ("batch", "steps", 4)}
IJ = {"i": ("batch", 4), "j": ("batch", 4)}
FM = {"flag": ("batch", 4), "mask": ("batch", 4)}


def _away(y):
    """y moved at least 0.5 away from zero, its sign kept (a divisor)."""
    return F.where(y < 0, y - 0.5, y + 0.5)


def _twins(x):
    """Written as PyTorch code writes it: in place on an intermediate."""
    y = x * 2.0
    y.masked_fill_(y < -1.0, 0.0)
    y.relu_()
    y.clamp_(max=1.5)
    y.add_(x, alpha=0.5)
    return y


def _set_through_arrays(x):
    """x[i, j] = v written as PyTorch code writes it, on an intermediate."""
    y = (x * 1.5).T
    y[POSITIONS[:2]] = LOW[:2].reshape(2, 1)
    y[[1, 3], 0] = 2.5
    return y.T


def _set_mixed(x):
    """x[:, i] = v (integer arrays mixed with slices) over the symbolic batch, as PyTorch code
    writes it, on an intermediate: PyTorch's region, index_put through a moved view."""
    y = x * 1.5
    y[:, POSITIONS[:2]] = LOW[:2]
    return y


def _set_mixed_series(x):
    y = x * 1.0
    y[:, :, POSITIONS[:2]] = x[:, :, :2].exp()
    return y


def _set_a_region_empty_at_some_sizes(x):
    """y[1:, 2] = v over the symbolic batch: no place at a batch of 1 (the graph must still run:
    the value gets a spare entry before it is gathered)."""
    y = x * 1.5
    y[1:, 2] = x[1:, 0] * 2.0
    flags = x > 0
    flags[1:, 1:3] = x[1:, :2] < 0.5
    return {"y": y, "flags": flags}


def inputs_by_name(name: str, shape: tuple[int, ...], generator: np.random.Generator) -> np.ndarray:
    """i, j: int64 -4..4; ids: int64 0..9; pos: int64 0..3 (positions in an axis of 4);
    flag, mask: bool; p: positive float32; else normal float32."""
    if name in ("i", "j"):
        return generator.integers(-4, 5, shape)
    if name == "ids":
        return generator.integers(0, 10, shape)
    if name == "pos":
        return generator.integers(0, 4, shape)
    if name in ("flag", "mask"):
        return generator.random(shape) > 0.4
    if name == "p":
        return generator.uniform(0.2, 2.0, shape).astype(np.float32)
    return generator.standard_normal(shape).astype(np.float32)


def pair(result):
    """(values, indices) as two named outputs."""
    return {"values": result[0], "indices": result[1]}


# (id, function, inputs, sizes, an ONNX op the graph must hold)
CASES = [
    # comparisons, at float, int64, bool and mixed types
    ("gt-scalar", lambda x: x > 0, X, B, "Greater"),
    ("lt-tensors", lambda x, y: x < y, XY, B, "Less"),
    ("le-float", lambda x, y: x <= y, XY, B, "LessOrEqual"),
    ("ge-int", lambda i, j: i >= j, IJ, B, "GreaterOrEqual"),
    ("eq-int", lambda i, j: i == j, IJ, B, "Equal"),
    ("eq-float", lambda x, y: F.maximum(x, y) == x, XY, B, "Equal"),
    ("ne-bool", lambda flag, mask: flag != mask, FM, B, "Not"),
    ("lt-bool", lambda flag, mask: flag < mask, FM, B, "Less"),
    ("gt-int-against-float", lambda i: i > 0.5, {"i": ("batch", 4)}, B, "Greater"),
    ("eq-method", lambda i: i.eq(2), {"i": ("batch", 4)}, B, "Equal"),
    # logic
    ("and-or-xor-not", lambda flag, mask: (flag & mask) | (~flag ^ mask), FM, B, "Xor"),
    ("logical-and-of-floats", lambda x, y: F.logical_and(x, y > 0), XY, B, "And"),
    ("logical-not-of-ints", lambda i: i.logical_not(), {"i": ("batch", 4)}, B, "Not"),
    # bitwise on integers (operator set 18), a bool operand and a number promoted to them
    ("bitwise-and-or-of-ints", lambda i, j: (i & j) | (j & 6), IJ, B, "BitwiseOr"),
    ("bitwise-xor-not-of-ints", lambda i, j: ~i ^ j.bitwise_not(), IJ, B, "BitwiseXor"),
    ("bitwise-of-an-int-and-a-bool", lambda i, flag: F.bitwise_and(i, flag) + (flag ^ 3),
     {"i": ("batch", 4), "flag": ("batch", 4)}, B, "BitwiseAnd"),
    # where and masked_fill at every result type
    ("where-float", lambda flag, x: F.where(flag, x, -1.0),
     {"flag": ("batch", 4), "x": ("batch", 4)}, B, "Where"),
    ("where-int", lambda flag, i: F.where(flag, i, 7), {"flag": ("batch", 4), "i": ("batch", 4)},
     B, "Where"),
    ("where-bool", lambda flag, mask: F.where(flag, mask, ~mask), FM, B, "Or"),
    ("dims-of-a-0d-tensor", lambda x: {"a": x.sum().max(0)[0] + x.sum().sort(0)[0]
                                       + x.sum().topk(1)[0] + x.sum().transpose(0, -1),
                                       "i": x.sum().min(-1, keepdim=True)[1]}, X, B, "TopK"),
    ("set-through-arrays-mixed-with-slices", _set_mixed, X, B, "ScatterND"),
    ("set-through-arrays-mixed-with-slices-of-a-series", _set_mixed_series, XS, BT, "ScatterND"),
    ("set-a-region-empty-at-some-sizes", _set_a_region_empty_at_some_sizes, X,
     {"batch": (7, 1, 2, 9)}, "Pad"),
    ("masked-fill-by-a-larger-mask", lambda x, flag: x[:, :1].masked_fill(flag, 0.5),
     {"x": ("batch", 4), "flag": ("batch", 4)}, B, "Where"),
    ("masked-fill-float", lambda x: x.masked_fill(x < 0, 0.5), X, B, "Where"),
    ("masked-fill-int", lambda i, flag: i.masked_fill(flag, -9),
     {"i": ("batch", 4), "flag": ("batch", 4)}, B, "Where"),
    # elementwise functions
    ("abs-int", lambda i: i.abs(), {"i": ("batch", 4)}, B, "Abs"),
    ("sign-float", lambda x: x.sign(), X, B, "Sign"),
    ("sign-int", lambda i: i.sign(), {"i": ("batch", 4)}, B, "Sign"),
    ("sign-of-nan", lambda x: x.log().sign(), X, B, "IsNaN"),  # 0 at NaN, as PyTorch's
    ("exp-log-sqrt", lambda p: p.exp() + p.log() + p.sqrt(), {"p": ("batch", 4)}, B, "Log"),
    ("log1p", lambda p: p.log1p(), {"p": ("batch", 4)}, B, "Log"),
    ("rsqrt", lambda p: p.rsqrt(), {"p": ("batch", 4)}, B, "Reciprocal"),
    ("sin-cos", lambda x: x.sin() * x.cos(), X, B, "Sin"),
    # rounding, remainders, erf, norms, special values
    ("floor", lambda x: (x * 3).floor(), X, B, "Floor"),
    ("ceil", lambda x: (x * 3).ceil(), X, B, "Ceil"),
    ("round-half-even", lambda x: (x * 4).round() + F.round(x * 0 + 2.5), X, B, "Round"),
    ("trunc", lambda x: (x * 3).trunc(), X, B, "Where"),
    ("rounding-int", lambda i: i.floor() + i.ceil() + i.round() + i.trunc(), {"i": ("batch", 4)},
     B, "Identity"),
    ("remainder-float", lambda x, y: x * 3 % _away(y), XY, B, "Mod"),
    ("remainder-number", lambda x: (x * 3 % -1.5) + (2.0 % _away(x)), X, B, "Mod"),
    ("fmod-float", lambda x, y: F.fmod(x * 3, _away(y)), XY, B, "Mod"),
    ("floor-divide-float", lambda x, y: x * 3 // _away(y), XY, B, "Floor"),
    ("remainder-int", lambda i, j: i % (j.abs() + 1) + i % -3, IJ, B, "Mod"),
    ("floor-divide-int", lambda i, j: i // (j.abs() + 1) + 7 // (j.abs() + 1) * -1, IJ, B, "Mod"),
    ("fmod-int", lambda i, j: i.fmod(j.abs() + 1), IJ, B, "Mod"),
    ("int-floordiv-float", lambda i: i // 2.5, {"i": ("batch", 4)}, B, "Mod"),
    ("erf", lambda x: x.erf() + F.erf(x * 2), X, B, "Erf"),
    ("reciprocal", lambda p: p.reciprocal(), {"p": ("batch", 4)}, B, "Div"),
    ("norm-2", lambda x: x.norm(dim=-1, keepdim=True), X, B, "ReduceL2"),
    ("norm-all", lambda x: x.norm() + x.norm(p=1), X, B, "ReduceL1"),
    ("norm-inf", lambda x: F.vector_norm(x, float("inf"), dim=1), X, B, "ReduceMax"),
    ("normalize", lambda x: F.normalize(x, dim=-1), X, B, "ReduceL2"),
    ("isnan-isinf", lambda x: x.log().isnan() | (x.exp() * 1e38).isinf(), X, B, "IsInf"),
    ("isfinite", lambda x: (x.exp() * 1e38).isfinite(), X, B, "IsNaN"),
    ("isnan-int", lambda i: i.isnan() | i.isinf(), {"i": ("batch", 4)}, B, "Not"),
    ("bmm", lambda x: F.bmm(x.reshape(-1, 2, 2), x.reshape(-1, 2, 2)), X, B, "MatMul"),
    ("mm", lambda x: x.mm(W.T), X, B, "MatMul"),
    ("in-place-twins", lambda x: _twins(x), X, B, "Where"),
    ("scatter-add", lambda x, pos: x.scatter_add(1, pos, x * 2)
     + F.scatter_add(x, 1, pos[:, :2], x),
     {"x": ("batch", 4), "pos": ("batch", 4)}, B, "ScatterElements"),
    # repeated positions in a row: the last write wins in Runtime as in numpy
    ("scatter", lambda x, pos: x.scatter(1, pos, x * 2) + F.scatter(x, 1, pos[:, :2], value=0.5)
     + x.scatter(1, pos, x, reduce="add"), {"x": ("batch", 4), "pos": ("batch", 4)}, B,
     "ScatterElements"),
    ("scatter-reduce", lambda x, pos: sum(
        x.scatter_reduce(1, pos, x * 3 - 1, reduce, include_self=keep)
        for reduce in ("sum", "mean", "amax", "amin") for keep in (True, False)),
     {"x": ("batch", 4), "pos": ("batch", 4)}, B, "ScatterElements"),
    ("scatter-reduce-int", lambda i, pos: i.scatter_reduce(1, pos, i * 3, "mean")
     + i.scatter_reduce(1, pos[:, :3], i[:, 1:] - 5, "mean", include_self=False)
     + i.scatter_reduce(0, pos.abs() % 1, i, "amax", include_self=False),
     {"i": ("batch", 4), "pos": ("batch", 4)}, B, "Mod"),
    # (indexing the first axes, which the batch is not: the tensors are turned first)
    ("index-put", lambda x, pos: (x.T.index_put((pos[0, :2],), x.T[:2] * 2)
     + x.T.index_put((pos[1] - 4,), LOW[0], accumulate=True)).T
     + F.index_put(x.T.reshape(2, 2, -1), (POSITIONS[:3] % 2, POSITIONS[1:] % 2),
                   LOW[:1]).reshape(4, -1).T, {"x": ("batch", 4), "pos": (2, 4)}, B,
     "ScatterND"),
    ("set-through-arrays", lambda x: _set_through_arrays(x), X, B, "ScatterND"),
    ("index-fill-copy", lambda x: x.index_fill(1, POSITIONS[:2], -2.0)
     + x.index_copy(1, POSITIONS[1:3].abs(), x[:, :2] * 3), X, B, "ScatterND"),
    ("pools-ceil", lambda x: F.max_pool(x.reshape(-1, 2, 2, 1), 3, 2, 1, ceil_mode=True)
     + F.avg_pool(x.reshape(-1, 2, 2, 1), 2, 2, 1, True, ceil_mode=True), X, B, "AveragePool"),
    ("cross", lambda x: x[:, :3].cross(x[:, 1:], dim=-1) + F.cross(x[:, :3], LOW[:3]),
     X, B, "Concat"),
    ("diagonal-diag", lambda x: x.reshape(-1, 2, 2).diagonal(0, 1, 2) + x[0].diag(1)[:1, :2],
     X, B, "GatherND"),
    ("index-add", lambda x: x.index_add(1, POSITIONS.abs(), x * 3, alpha=0.5), X, B,
     "ScatterElements"),
    ("trigonometric", lambda x: (x * 0.5).tan() + (x * 0.3).tanh().asin() + x.tanh().acos() * 0.1
     + x.atan() + x.sinh() + x.cosh() + x.asinh() + (x.abs() + 1.1).acosh()
     + (x.tanh() * 0.9).atanh(), X, B, "Atanh"),
    ("roll-symbolic-axis", lambda x: x.roll(2, 1) + x.roll(-1, 1) * 2, XS, BT, "Concat"),
    ("roll-batch", lambda x: x.roll(1, 0), X, B, "Concat"),
    ("dot-addmm-lerp", lambda x, y: F.addmm(y, x, W.T[:, :4], beta=0.5) + x.lerp(y, 0.7)
     + x.lerp(y, x.sigmoid()) + F.dot(x[0], y[0]), XY, B, "MatMul"),
    ("nan-to-num", lambda x: (x.log() * 1e30 * x.exp()).nan_to_num(), X, B, "IsNaN"),
    ("div-rounding-modes", lambda x, y: x.div(_away(y), rounding_mode="trunc")
     + F.div(x, _away(y), rounding_mode="floor") + x.add(y, alpha=2).sub(y).mul(y).square(),
     XY, B, "Mod"),
    ("exp-of-int", lambda i: i.exp() + i.abs().sqrt(), {"i": ("batch", 4)}, B, "Cast"),
    ("clamp-numbers", lambda x: x.clamp(-0.5, 0.5), X, B, "Clip"),
    ("clamp-min-only", lambda x: x.clamp(min=0.1), X, B, "Clip"),
    ("clip-max-only", lambda x: x.clip(max=0.1), X, B, "Clip"),
    ("clamp-tensor-bounds", lambda x: x.clamp(LOW, LOW + 0.8), X, B, "Min"),
    ("clamp-int", lambda i: i.clamp(-2, 3), {"i": ("batch", 4)}, B, "Clip"),
    ("pow-tensor-exponent", lambda p, x: p ** x, {"p": ("batch", 4), "x": ("batch", 4)}, B, "Pow"),
    ("pow-int", lambda i: i.abs() ** 2, {"i": ("batch", 4)}, B, "Pow"),
    ("maximum-float", lambda x, y: F.maximum(x, y), XY, B, "Max"),
    ("maximum-int", lambda i, j: F.maximum(i, j), IJ, B, "Max"),
    ("minimum-int", lambda i, j: F.minimum(i, j), IJ, B, "Min"),
    ("maximum-bool", lambda flag, mask: F.maximum(flag, mask), FM, B, "Or"),
    ("minimum-bool", lambda flag, mask: F.minimum(flag, mask), FM, B, "And"),
    ("add-mul-bool", lambda flag, mask: flag + mask * flag, FM, B, "Or"),
    ("sum-of-bools", lambda flag: flag.sum(1), {"flag": ("batch", 4)}, B, "ReduceSum"),
    # reductions
    ("amin-over-steps", lambda x: x.amin(1), XS, BT, "ReduceMin"),
    ("min-all", lambda x: x.min(), XS, BT, "ReduceMin"),
    ("max-dim", lambda x: pair(x.max(1)), XS, BT, "ArgMax"),
    ("min-dim-keepdim", lambda x: pair(x.min(-1, keepdim=True)), XS, BT, "ArgMin"),
    ("max-dim-int", lambda i: pair(i.max(dim=1)), {"i": ("batch", 4)}, B, "ArgMax"),
    ("max-dim-bool", lambda flag: pair(flag.max(1)), {"flag": ("batch", 4)}, B, "ArgMax"),
    ("argmax-dim", lambda x: x.argmax(dim=2), XS, BT, "ArgMax"),
    ("argmax-flat", lambda x: x.argmax(), XS, BT, "ArgMax"),
    ("argmin-flat-keepdim", lambda x: x.argmin(keepdim=True), X, B, "ArgMin"),
    ("argmax-int", lambda i: i.argmax(1), {"i": ("batch", 4)}, B, "ArgMax"),
    ("prod", lambda x: x.prod(-1), XS, BT, "ReduceProd"),
    ("prod-int-over-batch", lambda i: i.prod(0), {"i": ("batch", 4)}, B, "ReduceProd"),
    ("var-over-steps", lambda x: x.var(1), XS, BT, "ReduceSum"),
    ("var-fixed-axis", lambda x: x.var(-1, keepdim=True), XS, BT, "Div"),
    ("var-population", lambda x: x.var((0, 1), correction=0), XS, BT, "ReduceSum"),
    # a mean over an axis empty at some sizes is NaN, as PyTorch's (ONNX Runtime's ReduceMean
    # gives 0: the graph divides a sum by the count read from the shape; found by the fuzz of
    # traced chains, seed 503268)
    ("mean-of-a-slice-empty-at-some-lengths",
     lambda x: {"mean": x[:, : x.shape[1] // 2 - 2].mean(1),
                "var": x[:, : x.shape[1] // 2 - 2].var(1, correction=0)},
     XS, {"batch": (3, 2), "steps": (9, 4, 5)}, "Div"),
    # no fewer than zero degrees of freedom at any length (inf at 2 and 5 steps, as PyTorch's)
    ("var-no-freedom-over-steps", lambda x: x.var(1, correction=6), XS, BT, "Max"),
    # (one sample's unbiased variance is nan, as PyTorch's: other sizes than 1)
    ("std-over-batch", lambda x: x.std(0, unbiased=True), XS, {"batch": (7, 3), "steps": (5, 2)},
     "Sqrt"),
    ("logsumexp", lambda x: {"steps": x.logsumexp(1),
                             "large": (x * 300).logsumexp(-1, keepdim=True)}, XS, BT,
     "ReduceLogSumExp"),
    ("cumsum-over-steps", lambda x: x.cumsum(1), XS, BT, "CumSum"),
    ("cumsum-int", lambda i: i.cumsum(-1), {"i": ("batch", 4)}, B, "CumSum"),
    ("cumsum-bool", lambda flag: flag.cumsum(0), {"flag": ("batch", 4)}, B, "CumSum"),
    ("cumprod-fixed-axis", lambda x: x.cumprod(-1), XS, BT, "ReduceProd"),
    ("cumprod-over-steps", lambda x: x.cumprod(1), XS, BT, "Range"),
    ("cumprod-int", lambda i: i.cumprod(1), {"i": ("batch", 4)}, B, "ReduceProd"),
    ("all-any-bool", lambda flag: {"all": flag.all(1), "any": flag.any(0, keepdim=True)},
     {"flag": ("batch", 4)}, B, "ReduceSum"),
    ("all-of-floats", lambda x: (x > -1).all(), XS, BT, "Not"),
    ("any-of-ints", lambda i: i.any(-1), {"i": ("batch", 4)}, B, "Greater"),
    # joining and splitting
    ("stack", lambda x, y: F.stack([x, y * 2], dim=1), XY, B, "Concat"),
    ("stack-last", lambda x: F.stack([x, -x], -1), XS, BT, "Concat"),
    ("cat", lambda x, y: F.cat([x, y]), XY, B, "Concat"),
    ("split-sizes", lambda x: x.split([1, 3], dim=-1)[1], X, B, "Slice"),
    ("split-size", lambda x: {f"part{k}": p for k, p in enumerate(x.split(3, -1))}, X, B, "Slice"),
    ("chunk", lambda x: x.chunk(2, dim=2)[0] * x.chunk(2, dim=2)[1], XS, BT, "Slice"),
    ("unbind", lambda x: x.unbind(-1)[2], X, B, "Slice"),
    ("repeat", lambda x: x.repeat(2, 3), X, B, "Tile"),
    ("tile-more-axes", lambda x: x.tile(2, 1, 1), X, B, "Tile"),
    ("tile-int", lambda i: F.tile(i, (1, 2)), {"i": ("batch", 4)}, B, "Tile"),
    ("tile-bool", lambda flag: flag.tile((2, 1)), {"flag": ("batch", 4)}, B, "Tile"),
    ("repeat-interleave", lambda x: x.repeat_interleave(2, dim=1), XS, BT, "Expand"),
    ("repeat-interleave-counts", lambda x: x.repeat_interleave([1, 0, 2, 1], dim=-1), X, B,
     "Gather"),
    # choosing entries
    ("gather-by-input-index", lambda x, pos: x.gather(1, pos),
     {"x": ("batch", 4), "pos": ("batch", 3)}, B, "GatherElements"),
    ("take-along-axis-broadcast", lambda x, pos: F.take_along_axis(x, pos, axis=-1),
     {"x": ("batch", 4), "pos": (1, 2)}, B, "GatherElements"),
    ("gather-int-values", lambda i, pos: i.gather(1, pos), {"i": ("batch", 4), "pos": ("batch", 4)},
     B, "GatherElements"),
    ("index-select", lambda x: x.index_select(-1, POSITIONS), XS, BT, "Gather"),
    ("index-array-second-axis", lambda x, pos: x[:, pos], {"x": ("batch", 4), "pos": (2, 3)}, B,
     "Gather"),
    ("index-two-arrays", lambda x, pos: x[:, pos, pos.flip(0)],
     {"x": ("batch", 4, 4), "pos": (3,)}, B, "GatherND"),
    ("index-arrays-apart", lambda x, pos: x[pos, :, pos], {"x": (4, "batch", 4), "pos": (3,)}, B,
     "GatherND"),
    ("index-constant-mask", lambda x: x[:, MASK], X, B, "Gather"),
    # PyTorch's order: the integer selects first, so pos's axis stays after the slice's
    ("index-int-slice-array", lambda x, pos: x[0, :, pos],
     {"x": ("batch", "steps", 4), "pos": (3,)}, BT, "Gather"),
    ("index-new-axis-int-arrays", lambda x, pos: x[None, 0, :, pos, pos],
     {"x": ("batch", "steps", 4, 4), "pos": (2, 3)}, BT, "GatherND"),
    ("topk", lambda x: pair(x.topk(2)), XS, BT, "TopK"),
    ("topk-smallest-over-batch", lambda x: pair(x.topk(1, dim=0, largest=False)), X, B, "TopK"),
    ("topk-int", lambda i: pair(i.topk(3, 1)), {"i": ("batch", 4)}, B, "TopK"),
    ("sort-over-steps", lambda x: pair(x.sort(1)), XS, BT, "TopK"),
    ("sort-descending-bool", lambda flag: pair(flag.sort(-1, descending=True)),
     {"flag": ("batch", 4)}, B, "TopK"),
    ("argsort", lambda x: x.argsort(dim=-1, descending=True), XS, BT, "TopK"),
    ("one-hot", lambda ids: F.one_hot(ids, 10), {"ids": ("batch", "steps")}, BT, "Equal"),
    # building
    ("einsum-matmul", lambda x: F.einsum("bsi,ji->bsj", x, W), XS, BT, "Einsum"),
    ("einsum-batched", lambda x: F.einsum("bij,bkj->bik", x, x), XS, BT, "Einsum"),
    ("einsum-outer", lambda x, y: F.einsum("bi,bj->bij", x, y), XY, B, "Einsum"),
    ("einsum-trace", lambda x: F.einsum("bii->b", x), {"x": ("batch", 3, 3)}, B, "Einsum"),
    ("einsum-ellipsis", lambda x: F.einsum("...i,ji", x, W), XS, BT, "Einsum"),
    ("tril", lambda x: x.tril(), {"x": ("batch", 4, 3)}, B, "Trilu"),
    ("triu-int-offset", lambda i: F.triu(i.reshape(-1, 2, 2), 1), {"i": ("batch", 4)}, B, "Trilu"),
    ("tril-bool", lambda flag: flag.reshape(-1, 2, 2).tril(-1), {"flag": ("batch", 4)}, B, "Trilu"),
    ("zeros-like", lambda x: F.zeros_like(x) + x, XS, BT, "Expand"),
    ("ones-like-int", lambda i: F.ones_like(i), {"i": ("batch", 4)}, B, "Expand"),
    ("full-like-bool", lambda x: F.full_like(x, True, dtype=bool), XS, BT, "Expand"),
    ("linear-matrix", lambda x: F.linear(x, W, BIAS), X, B, "Gemm"),
    ("linear-series", lambda x: F.linear(x, W), XS, BT, "MatMul"),
    ("matmul-vector-right", lambda x: x @ W[0], XS, BT, "MatMul"),
    ("matmul-vector-left", lambda x: F.matmul(W[0], x.mT), XS, BT, "MatMul"),
    # axes and shapes
    ("transpose-two-axes", lambda x: x.transpose(1, 2), XS, BT, "Transpose"),
    ("mT", lambda x: x.mT, XS, BT, "Transpose"),
    ("movedim", lambda x: x.movedim(-1, 0), XS, BT, "Transpose"),
    ("flatten", lambda x: x.flatten(1), XS, BT, "Reshape"),
    ("unflatten-view", lambda x: x.unflatten(-1, (2, 2)).view(x.shape[0], x.shape[1], 4), XS, BT,
     "Reshape"),
    ("expand-keep", lambda x: x.unsqueeze(2).expand(-1, -1, 3, -1), XS, BT, "Expand"),
    ("narrow", lambda x: x.narrow(-1, 1, 2), XS, BT, "Slice"),
]


@pytest.mark.parametrize("fn, inputs, sizes, op_type", [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])
def test_traced_vocabulary_matches_eager(fn, inputs, sizes, op_type):
    checked = check_trace(fn, inputs, sizes, make=inputs_by_name)
    assert op_type in checked.ops(), checked.ops()


def test_a_mask_computed_from_an_input_is_refused_as_data_dependent():
    with pytest.raises(TraceException, match="indexing with a bool mask") as caught:
        check_trace(lambda x: x[x > 0], X, B)
    assert caught.value.kind == TraceErrorKind.DATA_DEPENDENT


def test_an_index_made_with_the_example_batch_size_is_refused():
    index = Tensor(np.zeros((7, 2), np.int64))  # sized by x.shape[0] in Python: fixed at 7
    with pytest.raises(TraceException, match="fixed at 7 in another, where gather's") as caught:
        check_trace(lambda x: x.gather(1, index), X, B)
    assert caught.value.kind == TraceErrorKind.SYMBOLIC_SHAPE


def test_topk_of_a_whole_symbolic_axis_is_refused_naming_sort():
    with pytest.raises(TraceException, match="to order the whole axis use sort") as caught:
        check_trace(lambda x: x.topk(x.shape[1], dim=1).values, XS, BT)
    assert caught.value.kind == TraceErrorKind.SYMBOLIC_SHAPE


def test_one_hot_without_the_number_of_classes_is_refused_in_a_trace():
    with pytest.raises(TraceException, match="one_hot\\(num_classes=-1\\)") as caught:
        check_trace(lambda ids: F.one_hot(ids), {"ids": ("batch", 3)}, B, make=inputs_by_name)
    assert caught.value.kind == TraceErrorKind.DATA_DEPENDENT


@pytest.mark.parametrize("fn, inputs, opset", [
    (lambda flag, mask: F.where(flag, mask, ~mask), FM, 7),    # And/Or/Not: no bool Where kernel
    (lambda i, j: F.maximum(i, j), IJ, 12),                    # Runtime's first int64 Max
    (lambda x, y: F.maximum(x, y), XY, 8),
    (lambda i: i.clamp(-1, 1), {"i": ("batch", 4)}, 12),       # int64 Clip
    (lambda x: x.clamp(-1, 1), X, 11),
    (lambda flag: flag.max(1).values, {"flag": ("batch", 4)}, 20),  # bool ReduceMax
    (lambda i: i.topk(2).values, {"i": ("batch", 4)}, 11),
    (lambda x: x.topk(2).values, X, 10),
])
def test_the_operator_set_follows_the_element_types(fn, inputs, opset):
    assert check_trace(fn, inputs, B, make=inputs_by_name).opset == opset


# Every op that takes any element type, traced at each: float32, int64 and bool.
ANY_TYPE = [
    ("where", lambda x: F.where(x.sum(1, keepdim=True) != x.sum(1, keepdim=True), x, x.flip(1))),
    ("masked_fill", lambda x: x.masked_fill(Tensor(MASK), x.select(0, 0).select(0, 0))),
    ("maximum", lambda x: F.maximum(x, x.flip(0))),
    ("minimum", lambda x: F.minimum(x, x.flip(1))),
    ("==", lambda x: x == x.flip(1)),
    ("<", lambda x: x < x.flip(1)),
    ("sum", lambda x: x.sum(1)),
    ("amax", lambda x: x.amax(1)),
    ("amin", lambda x: x.amin(0)),
    ("max(dim)", lambda x: pair(x.max(1))),
    ("argmin", lambda x: x.argmin(1)),
    ("prod", lambda x: x.prod(1)),
    ("cumsum", lambda x: x.cumsum(1)),
    ("cumprod", lambda x: x.cumprod(1)),
    ("all", lambda x: x.all(1)),
    ("any", lambda x: x.any(0)),
    ("stack", lambda x: F.stack([x, x.flip(0)], 1)),
    ("cat", lambda x: F.cat([x, x], -1)),
    ("split", lambda x: x.split(3, 1)[0]),
    ("unbind", lambda x: x.unbind(1)[1]),
    ("gather", lambda x: x.gather(1, F.zeros_like(x[:, :2], dtype=np.int64) + Tensor([2, 0]))),
    ("take_along_axis", lambda x: F.take_along_axis(x, Tensor(np.array([[3, 1, 3]])), 1)),
    ("index_select", lambda x: x.index_select(1, POSITIONS)),
    ("x[i, j]", lambda x: x[:, POSITIONS][:, [1, 2]]),
    ("topk", lambda x: pair(x.topk(2))),
    ("sort", lambda x: pair(x.sort(0))),
    ("einsum", lambda x: F.einsum("bi,bj->bij", x, x)),
    ("tril", lambda x: x.reshape(-1, 2, 2).tril()),
    ("repeat", lambda x: x.repeat(1, 2)),
    ("repeat_interleave", lambda x: x.repeat_interleave(2, 1)),
    ("zeros_like", lambda x: F.zeros_like(x)),
    ("permute", lambda x: x.unsqueeze(0).permute(2, 1, 0)),
    ("flip", lambda x: x.flip(0)),
    ("expand", lambda x: x.unsqueeze(1).expand(-1, 3, -1)),
]
TYPES = {"float32": lambda name, shape, g: g.standard_normal(shape).astype(np.float32),
         "int64": lambda name, shape, g: g.integers(-3, 4, shape),
         "bool": lambda name, shape, g: g.random(shape) > 0.5}


@pytest.mark.parametrize("kind", sorted(TYPES))
@pytest.mark.parametrize("fn", [f for _, f in ANY_TYPE], ids=[n for n, _ in ANY_TYPE])
def test_every_element_type_runs(fn, kind):
    check_trace(fn, X, {"batch": (7, 2)}, make=TYPES[kind], reference=False)


class PoolingEncoder(Module):
    """Written as a PyTorch user writes one: padding mask from the ids, scaled dot-product
    attention with masked_fill(-inf), view/transpose/contiguous, a masked mean, clamp, argmax."""

    def __init__(self, vocabulary=12, width=8, heads=2):
        super().__init__()
        rng = np.random.default_rng(4)
        self.table = Parameter(rng.standard_normal((vocabulary, width)).astype(np.float32))
        self.qkv = Parameter(rng.standard_normal((3 * width, width)).astype(np.float32) * 0.3)
        self.head = Parameter(rng.standard_normal((3, width)).astype(np.float32))
        object.__setattr__(self, "heads", heads)

    def forward(self, ids):
        b, t = ids.size(0), ids.size(1)
        real = ids != 0
        x = F.embedding(ids, self.table) * math.sqrt(self.table.size(1))
        q, k, v = F.linear(x, self.qkv).chunk(3, dim=-1)
        split = lambda z: z.view(b, t, self.heads, -1).transpose(1, 2)  # noqa: E731
        q, k, v = split(q), split(k), split(v)
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
        scores = scores.masked_fill(~real[:, None, None, :], -1e9)
        mixed = (scores.softmax(dim=-1) @ v).transpose(1, 2).contiguous().view(b, t, -1)
        kept = real.unsqueeze(-1).float()
        pooled = (mixed * kept).sum(1) / kept.sum(1).clamp(min=1.0)
        logits = F.linear(pooled, self.head)
        return {"logits": logits, "label": logits.argmax(dim=-1)}


def test_a_module_written_with_pytorchs_vocabulary_traces():
    model = PoolingEncoder()

    def ids(name, shape, generator):
        values = generator.integers(1, 12, shape)
        values[0, -2:] = 0  # padding at the end of the first series
        return values

    checked = check_trace(model.forward, {"ids": ("batch", "steps")}, BT, make=ids,
                          parameters=dict(model.named_parameters()))
    assert {"ArgMax", "Where", "Softmax", "Clip"} <= set(checked.ops())


def test_unique_is_refused_in_a_trace_as_data_dependent():
    with pytest.raises(TraceException, match="unique\\(\\), whose result's size") as caught:
        check_trace(lambda i: i.unique(), {"i": ("batch", 4)}, B, make=inputs_by_name)
    assert caught.value.kind == TraceErrorKind.DATA_DEPENDENT


def test_a_diagonal_over_a_symbolic_axis_is_refused():
    with pytest.raises(TraceException, match="diagonal over axis 0") as caught:
        check_trace(lambda x: x.diagonal(), X, B)
    assert caught.value.kind == TraceErrorKind.SYMBOLIC_SHAPE


@pytest.mark.parametrize("fn, fragment", [
    (lambda x: x.nonzero(), "nonzero\\(\\), whose result's size"),
    (lambda x: F.argwhere(x > 0), "nonzero\\(\\), whose result's size"),
    (lambda x: F.where(x > 0)[0], "nonzero\\(\\), whose result's size"),
    (lambda x: x.masked_select(x > 0), "indexing with a bool mask"),
])
def test_positions_read_from_the_values_are_refused_as_data_dependent(fn, fragment):
    with pytest.raises(TraceException, match=fragment) as caught:
        check_trace(fn, X, B)
    assert caught.value.kind == TraceErrorKind.DATA_DEPENDENT
