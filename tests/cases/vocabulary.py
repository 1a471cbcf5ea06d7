"""Cases for the tensor vocabulary's differentiable primitives (deepsharp/tensors/ops/functions.py,
reductions.py, sort.py, index.py, arrange.py, einsum.py): values kept apart from ties and kinks."""

from __future__ import annotations

import numpy as np

from tests.support.cases import away_from_zero, case, normal, positive


def distinct(*shape: int) -> np.ndarray:
    """Normal values, all different by at least 0.01 (no ties for max, sort, clamp)."""
    values = np.random.default_rng(sum(shape) + len(shape)).permutation(int(np.prod(shape)))
    return (values.reshape(shape) - values.size / 2) * 0.05 + normal(*shape) * 0.001


case("sign")(lambda: ([away_from_zero(3, 4)], {}))
case("log1p")(lambda: ([positive(3, 4) - 0.4], {}))
case("rsqrt")(lambda: ([positive(3, 4)], {}))
case("clamp", "both-numbers")(lambda: ([distinct(3, 5), np.array(-0.2), np.array(0.3)],
                                       {"has_low": 1, "has_high": 1}))
case("clamp", "tensor-low")(lambda: ([distinct(3, 5), distinct(5) * 0.5],
                                     {"has_low": 1, "has_high": 0}))
case("clamp", "tensor-high-broadcast")(lambda: ([distinct(3, 1), distinct(4) * 0.5 + 0.0137],
                                                {"has_low": 0, "has_high": 1}))
case("min")(lambda: ([distinct(2, 3, 4)], {"axes": (0, 2), "keepdims": 0}))
case("max_along")(lambda: ([distinct(3, 4, 2)], {"axis": 1, "keepdims": 0}))
case("min_along")(lambda: ([distinct(3, 4)], {"axis": 0, "keepdims": 1}))
case("prod")(lambda: ([normal(2, 3, 4)], {"axes": (1, 2), "keepdims": 0}))
case("prod", "with-zeros")(lambda: ([np.array([[0.0, 2.0, 3.0], [0.0, 0.0, 1.5],
                                              [1.2, -0.7, 2.0]])], {"axes": (1,), "keepdims": 1}))
case("var")(lambda: ([normal(3, 5)], {"axes": (1,), "keepdims": 0, "correction": 1.0}))
case("var", "population")(lambda: ([normal(2, 3, 4)], {"axes": (0, 2), "keepdims": 1,
                                                       "correction": 0.0}))
case("logsumexp")(lambda: ([normal(3, 4) * 3], {"axes": (1,), "keepdims": 0}))
case("cumsum")(lambda: ([normal(3, 4)], {"axis": 1}))
case("cumprod")(lambda: ([normal(4, 3)], {"axis": 0}))
case("cumprod", "with-zeros")(lambda: ([np.array([[1.5, 0.0, 2.0, -1.0, 0.0, 0.5]])],
                                       {"axis": 1}))
case("take_along_axis")(lambda: ([normal(3, 4), np.array([[0, 3, 3], [1, 1, 2], [-1, 0, 2]])],
                                 {"axis": 1}))
case("index_nd")(lambda: ([normal(3, 4, 2), np.array([[0, 2], [2, 2]]), np.array([1, -1])], {}))
case("topk")(lambda: ([distinct(3, 5)], {"k": 2, "axis": 1, "largest": 1}))
case("topk", "smallest")(lambda: ([distinct(4, 3)], {"k": 3, "axis": 0, "largest": 0}))
case("sort")(lambda: ([distinct(3, 5)], {"axis": -1, "descending": 0}))
case("sort", "descending")(lambda: ([distinct(3, 5)], {"axis": 0, "descending": 1}))
case("tile")(lambda: ([normal(2, 3)], {"reps": (2, 3)}))
case("trilu", "lower")(lambda: ([normal(2, 4, 3)], {"upper": 0, "k": 0}))
case("trilu", "upper")(lambda: ([normal(4, 3)], {"upper": 1, "k": -1}))
case("einsum", "matmul")(lambda: ([normal(3, 4), normal(4, 2)], {"equation": "ij,jk->ik"}))
case("einsum", "batched")(lambda: ([normal(2, 3, 4), normal(2, 4, 5)],
                                   {"equation": "bij,bjk->bik"}))
case("einsum", "outer")(lambda: ([normal(3), normal(4)], {"equation": "i,j->ij"}))
case("einsum", "trace")(lambda: ([normal(4, 4)], {"equation": "ii->"}))
case("einsum", "diagonal-sum-only")(lambda: ([normal(3, 3, 2), normal(5)],
                                             {"equation": "iij,k->j"}))
case("linear")(lambda: ([normal(2, 3, 4), normal(5, 4), normal(5)], {}))
case("linear", "no-bias")(lambda: ([normal(3, 4), normal(2, 4)], {}))

# rounding (a zero gradient, values away from the steps), remainders, erf, norms
for _name in ("floor", "ceil", "round", "trunc"):
    case(_name)(lambda: ([normal(3, 4) * 3 + 0.013], {}))
SIGNED = np.array([1.0, -1.0, 1.0, -1.0])
case("remainder")(lambda: ([normal(3, 4) * 3 + 0.013, positive(4) * SIGNED], {}))
case("remainder", "broadcast-divisor")(lambda: ([normal(2, 3) * 2, positive(2, 1)], {}))
case("fmod")(lambda: ([normal(3, 4) * 3 + 0.013, positive(4) * SIGNED], {}))
case("floor_divide")(lambda: ([normal(3, 4) * 3 + 0.013, positive(4) * SIGNED], {}))
case("erf")(lambda: ([normal(3, 4)], {}))
case("norm", "p2")(lambda: ([normal(3, 4)], {"p": 2, "axes": (1,), "keepdims": 0}))
case("norm", "p2-all-keep")(lambda: ([normal(2, 3)], {"p": 2, "axes": (0, 1), "keepdims": 1}))
case("norm", "p1")(lambda: ([away_from_zero(3, 4)], {"p": 1, "axes": (0,), "keepdims": 0}))
INSIDE = np.array([[-0.7, -0.2, 0.3, 0.8], [0.1, -0.45, 0.6, -0.9], [0.25, 0.55, -0.65, 0.05]])
for _name in ("tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "atanh"):
    case(_name)(lambda: ([INSIDE + normal(3, 4) * 0.01], {}))
case("acosh")(lambda: ([positive(3, 4) + 1.1], {}))
case("roll")(lambda: ([normal(3, 4)], {"shift": 1, "axis": 1}))
case("roll", "negative")(lambda: ([normal(3, 4)], {"shift": -2, "axis": 0}))
# scatter_add is scatter_reduce's sum with the input's own values (repeats add up)
case("scatter_reduce", "sum-repeats")(lambda: (
    [normal(3, 5), np.array([[0, 4, 4, 1], [2, 2, 2, 2], [3, 0, 1, 4]]), normal(3, 4)],
    {"axis": 1, "reduce": 1, "include_self": 1}))
case("scatter_reduce", "sum-src-larger")(lambda: (
    [normal(4, 3), np.array([[0, 3, 3], [1, 0, 3]]), normal(3, 3)],
    {"axis": 0, "reduce": 1, "include_self": 1}))
# distinct positions in each row (a repeated write or a tie has no derivative: parity tests hold
# PyTorch's convention there); none 0, sum 1, mean 2, amax 3, amin 4
_PLACES = np.array([[0, 4, 2, 1], [3, 2, 0, 4], [1, 3, 4, 0]])
for _reduce in range(5):
    for _self in (0, 1):
        case("scatter_reduce", f"reduce{_reduce}-self{_self}")(
            lambda r=_reduce, k=_self: ([normal(3, 5), _PLACES, normal(3, 4)],
                                        {"axis": 1, "reduce": r, "include_self": k}))
case("index_put")(lambda: ([normal(4, 3), normal(3), np.array([2, -1, 0])], {"accumulate": 0}))
case("index_put", "accumulate")(lambda: ([normal(4, 3), normal(2, 1), np.array([[1], [3]]),
                                          np.array([0, 2])], {"accumulate": 1}))
