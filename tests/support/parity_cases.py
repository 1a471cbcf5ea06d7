"""The tensor vocabulary's calls, written once for PyTorch and for deepsharp.

`scripts/make_tensor_fixtures.py` runs each call in PyTorch and keeps its inputs, outputs and the
gradients of a random upstream gradient in tests/fixtures/tensors_torch.npz;
`tests/deepsharp/test_tensor_parity.py` runs the same call here and holds it to them. A call is
spelled as a PyTorch user spells it, and deepsharp must take the same spelling:

    P("max-dim", "x.max", [D(3, 5)], (I(0), -1), {"keepdim": True})

- "x.name": the method `name` of the first argument; "torch.name" and "F.name"
  (torch.nn.functional): `deepsharp.functional.name` on our side;
- inputs: `N` normal, `Pos` positive, `D` distinct (no ties), `T` whole numbers (ties), `Int(low, high, *shape)`,
  `Bool(*shape)`; float inputs take gradients;
- args: `I(k)` stands for input k (also inside tuples and lists); by default all inputs in order.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np


@dataclass(frozen=True)
class I:
    """Input k of the case, in an argument."""

    k: int


@dataclass(frozen=True)
class Input:
    kind: str
    shape: tuple[int, ...]
    low: int = 0
    high: int = 0

    def make(self, rng: np.random.Generator) -> np.ndarray:
        if self.kind == "normal":
            return rng.standard_normal(self.shape).astype(np.float32)
        if self.kind == "positive":
            return rng.uniform(0.2, 2.0, self.shape).astype(np.float32)
        if self.kind == "distinct":
            n = int(np.prod(self.shape))
            values = (rng.permutation(n) - n / 2) * 0.1 + rng.uniform(-0.02, 0.02, n)
            return values.reshape(self.shape).astype(np.float32)
        if self.kind == "int":
            return rng.integers(self.low, self.high, self.shape).astype(np.int64)
        if self.kind == "uniform":
            return rng.uniform(self.low, self.high, self.shape).astype(np.float32)
        if self.kind == "ties":  # small whole numbers: many equal values
            return rng.integers(-2, 3, self.shape).astype(np.float32)
        if self.kind == "special":  # normal values, some of them NaN, inf or -inf
            values = rng.standard_normal(self.shape).astype(np.float32)
            picks = rng.integers(0, 5, self.shape)
            return np.select([picks == 0, picks == 1, picks == 2], [np.nan, np.inf, -np.inf],
                             values).astype(np.float32)
        return rng.random(self.shape) > 0.5

    @property
    def is_float(self) -> bool:
        return self.kind in ("normal", "positive", "distinct", "special", "uniform", "ties")


def N(*shape: int) -> Input:
    return Input("normal", shape)


def Pos(*shape: int) -> Input:
    return Input("positive", shape)


def D(*shape: int) -> Input:
    return Input("distinct", shape)


def Int(low: int, high: int, *shape: int) -> Input:
    return Input("int", shape, low, high)


def Bool(*shape: int) -> Input:
    return Input("bool", shape)


def U(low: float, high: float, *shape: int) -> Input:
    """Float32 uniform in [low, high) (inside a function's domain)."""
    return Input("uniform", shape, low, high)  # type: ignore[arg-type]


def T(*shape: int) -> Input:
    """Float32 whole numbers in [-2, 2]: ties (amax's and amin's shared gradients)."""
    return Input("ties", shape)


def Z(*shape: int) -> Input:
    """Float32 zeros (a deviation of zero, a base of zero)."""
    return Input("uniform", shape, 0, 0)  # type: ignore[arg-type]


def S(*shape: int) -> Input:
    """Float32 with some NaN, inf and -inf among normal values."""
    return Input("special", shape)


@dataclass(frozen=True)
class P:
    id: str
    call: str
    inputs: list[Input]
    args: tuple | None = None
    kwargs: dict[str, Any] = field(default_factory=dict)
    op: str = ""  # the vocabulary entry it covers (the call's name when empty)

    @property
    def covers(self) -> str:
        return self.op or self.call.split(".")[-1]


def substitute(value: Any, arrays: list[Any]) -> Any:
    """`value` with every I(k) replaced by arrays[k]."""
    if isinstance(value, I):
        return arrays[value.k]
    if isinstance(value, tuple):
        return tuple(substitute(v, arrays) for v in value)
    if isinstance(value, list):
        return [substitute(v, arrays) for v in value]
    return value


def call(case: P, namespace: Any, tensors: list[Any]) -> Any:
    """Run `case` with `tensors`; `namespace(name)` is the function named by "torch."/"F." calls."""
    args = substitute(case.args if case.args is not None else tuple(I(k) for k in
                                                                      range(len(tensors))), tensors)
    owner, name = case.call.split(".", 1)
    if owner == "x":
        return getattr(args[0], name)(*args[1:], **case.kwargs)
    return namespace(owner, name)(*args, **case.kwargs)


def outputs_of(result: Any) -> list[Any]:
    """A result as a flat list of tensors (a tuple of values and indices, a split's pieces)."""
    if isinstance(result, (tuple, list)):
        return [t for r in result for t in outputs_of(r)]
    return [result]


ALL = slice(None)

CASES: list[P] = [
    # comparisons and logic (bool results, numpy broadcasting)
    P("lt", "x.__lt__", [N(3, 4), N(4)], op="<"),
    P("le", "x.__le__", [N(2, 1, 4), N(3, 1)], op="<="),
    P("gt-scalar", "x.__gt__", [N(3, 4)], (I(0), 0.25), op=">"),
    P("ge-int", "x.__ge__", [Int(-3, 3, 4, 5), Int(-3, 3, 5)], op=">="),
    P("eq-int", "x.__eq__", [Int(0, 3, 3, 4)], (I(0), 1), op="=="),
    P("ne-bool", "x.__ne__", [Bool(3, 4), Bool(3, 1)], op="!="),
    P("eq-method", "x.eq", [Int(0, 2, 5), Int(0, 2, 5)]),
    P("logical-and", "torch.logical_and", [Bool(3, 4), N(4)]),
    P("logical-or", "torch.logical_or", [Bool(3, 4), Bool(1, 4)]),
    P("logical-xor", "x.logical_xor", [Bool(3, 4), Bool(3, 4)]),
    P("logical-not", "torch.logical_not", [Int(-1, 2, 3, 4)]),
    P("and-operator", "x.__and__", [Bool(3, 4), Bool(4)], op="&"),
    P("or-operator", "x.__or__", [Bool(3, 4), Bool(3, 4)], op="|"),
    P("invert-operator", "x.__invert__", [Bool(3, 4)], op="~"),
    P("xor-operator", "x.__xor__", [Bool(3, 4), Bool(3, 4)], op="^"),
    P("where", "torch.where", [Bool(3, 4), N(3, 4), N(4)]),
    P("where-scalar", "torch.where", [Bool(2, 3), N(2, 3)], (I(0), I(1), 0.5), op="where"),
    P("masked-fill", "x.masked_fill", [N(3, 4), Bool(4)], (I(0), I(1), -1.5)),
    # elementwise functions
    P("abs", "x.abs", [N(3, 4)]),
    P("sign", "x.sign", [N(3, 4)]),
    P("exp", "x.exp", [N(3, 4)]),
    P("log", "x.log", [Pos(3, 4)]),
    P("log1p", "x.log1p", [Pos(3, 4)]),
    P("sqrt", "x.sqrt", [Pos(3, 4)]),
    P("rsqrt", "x.rsqrt", [Pos(3, 4)]),
    P("sin", "x.sin", [N(3, 4)]),
    P("cos", "x.cos", [N(3, 4)]),
    P("clamp", "x.clamp", [N(4, 5)], (I(0), -0.5, 0.4)),
    P("clamp-min", "x.clamp", [N(4, 5)], (I(0),), {"min": 0.1}, op="clamp"),
    P("clamp-tensors", "torch.clamp", [N(3, 4), N(4), N(3, 1)], (I(0), I(1), I(2)), op="clamp"),
    P("clip-max", "x.clip", [N(3, 4)], (I(0),), {"max": -0.2}),
    P("pow-tensor", "x.pow", [Pos(3, 4), N(4)]),
    P("pow-operator", "x.__pow__", [Pos(2, 3), N(2, 3)], op="pow"),
    P("pow-scalar-base", "x.__rpow__", [N(3, 4)], (I(0), 2.0), op="pow"),
    P("maximum", "torch.maximum", [D(3, 4), D(4)]),
    P("minimum", "torch.minimum", [D(2, 1, 3), D(4, 1)]),
    P("maximum-int", "torch.maximum", [Int(-5, 5, 3, 4), Int(-5, 5, 4)], op="maximum"),
    # reductions
    P("sum-dim", "x.sum", [N(2, 3, 4)], (I(0), (0, -1)), {"keepdim": True}),
    P("mean-dim", "x.mean", [N(2, 3, 4)], (I(0), -2)),
    P("amax", "x.amax", [D(2, 3, 4)], (I(0), (0, 2))),
    P("amin", "torch.amin", [D(3, 4)], (I(0), -1), {"keepdim": True}),
    P("max-all", "x.max", [D(3, 4)], op="max"),
    P("max-dim", "x.max", [D(3, 5)], (I(0), -1), {"keepdim": True}, op="max"),
    P("min-dim", "torch.min", [D(4, 3, 2)], (I(0), 1), op="min"),
    P("min-all", "x.min", [D(5)], op="min"),
    P("max-other", "x.max", [D(3, 4), D(4)], op="max"),
    P("argmax-dim", "x.argmax", [D(3, 4, 2)], (I(0), 1)),
    P("argmax-flat", "torch.argmax", [D(3, 4)], op="argmax"),
    P("argmin-keepdim", "x.argmin", [D(3, 4)], (I(0), -1), {"keepdim": True}, op="argmin"),
    P("argmax-flat-keepdim", "torch.argmax", [D(2, 3)], (I(0),), {"keepdim": True}, op="argmax"),
    P("var-legacy-unbiased", "x.var", [N(3, 4)], (I(0), 0, True), op="var"),
    P("prod", "x.prod", [N(3, 4)], (I(0), 1)),
    P("prod-all", "torch.prod", [N(2, 3)], op="prod"),
    P("var", "x.var", [N(3, 5)], (I(0), 1)),
    P("var-correction", "torch.var", [N(2, 3, 4)], (I(0), (0, -1)),
      {"correction": 0, "keepdim": True}, op="var"),
    P("var-unbiased-false", "x.var", [N(4, 3)], (I(0), 0), {"unbiased": False}, op="var"),
    P("var-all", "x.var", [N(3, 4)], op="var"),
    P("std", "x.std", [N(3, 5)], (I(0), -1), {"keepdim": True}),
    P("std-all", "torch.std", [N(4, 3)], op="std"),
    P("logsumexp", "x.logsumexp", [N(3, 5)], (I(0), 1)),
    P("logsumexp-large", "torch.logsumexp", [N(2, 3, 4)], (I(0), (0, 2)), op="logsumexp"),
    P("cumsum", "x.cumsum", [N(3, 4)], (I(0), -1)),
    P("cumsum-int", "torch.cumsum", [Int(-3, 3, 4, 3)], (I(0), 0), op="cumsum"),
    P("cumprod", "x.cumprod", [N(4, 3)], (I(0), 0)),
    P("all", "x.all", [Bool(3, 4)], (I(0), 1)),
    P("all-of-floats", "torch.all", [N(3, 4)], op="all"),
    P("any", "x.any", [Bool(3, 4)], (I(0), 0), {"keepdim": True}),
    P("any-all", "x.any", [Bool(2, 3)], op="any"),
    # joining and splitting
    P("stack", "torch.stack", [N(3, 4), N(3, 4), N(3, 4)], ([I(0), I(1), I(2)], 1)),
    P("stack-negative", "torch.stack", [N(2, 3), N(2, 3)], ([I(0), I(1)],), {"dim": -1},
      op="stack"),
    P("cat", "torch.cat", [N(2, 3), N(4, 3)], ([I(0), I(1)],)),
    P("concat", "torch.concat", [N(2, 3), N(2, 1)], ([I(0), I(1)], -1)),
    P("split-size", "x.split", [N(7, 3)], (I(0), 3), op="split"),
    P("split-sections", "torch.split", [N(3, 6)], (I(0), [1, 2, 3]), {"dim": -1}, op="split"),
    P("chunk", "x.chunk", [N(3, 7)], (I(0), 3, 1)),
    P("unbind", "x.unbind", [N(3, 4)], (I(0), 1)),
    # choosing by index, condition, order
    P("gather", "x.gather", [N(3, 4), Int(0, 4, 3, 6)], (I(0), 1, I(1))),
    P("gather-smaller-index", "torch.gather", [N(4, 5), Int(0, 4, 2, 3)], (I(0), 0, I(1)),
      op="gather"),
    P("take-along-dim", "torch.take_along_dim", [N(3, 5), Int(0, 5, 1, 2)], (I(0), I(1), 1),
      op="take_along_axis"),
    P("index-select", "x.index_select", [N(4, 5), Int(0, 5, 6)], (I(0), 1, I(1))),
    P("index-array", "x.__getitem__", [N(5, 3), Int(-5, 5, 2, 3)], (I(0), I(1)),
      op="indexing with arrays"),
    P("index-array-second-axis", "x.__getitem__", [N(3, 5, 2), Int(0, 5, 4)],
      (I(0), (ALL, I(1))), op="indexing with arrays"),
    P("index-two-arrays", "x.__getitem__", [N(4, 5, 2), Int(0, 4, 3), Int(-5, 5, 2, 1)],
      (I(0), (I(1), I(2))), op="indexing with arrays"),
    P("index-arrays-apart", "x.__getitem__", [N(4, 3, 5), Int(0, 4, 2), Int(0, 5, 2)],
      (I(0), (I(1), ALL, I(2))), op="indexing with arrays"),
    P("index-mask", "x.__getitem__", [N(3, 4, 2), Bool(3, 4)], op="indexing with a bool mask"),
    P("index-mask-second-axis", "x.__getitem__", [N(3, 4), Bool(4)], (I(0), (ALL, I(1))),
      op="indexing with a bool mask"),
    P("topk", "x.topk", [D(3, 6)], (I(0), 2)),
    P("topk-smallest", "torch.topk", [D(5, 3)], (I(0), 2, 0), {"largest": False}, op="topk"),
    P("sort", "x.sort", [D(3, 5)]),
    P("sort-descending", "torch.sort", [D(4, 3)], (I(0), 0, True), op="sort"),
    P("argsort", "x.argsort", [D(3, 5)], (I(0),), {"dim": 0, "descending": True}),
    P("one-hot", "F.one_hot", [Int(0, 5, 3, 4)], (I(0), 6)),
    P("einsum-matmul", "torch.einsum", [N(3, 4), N(4, 5)], ("ij,jk->ik", I(0), I(1)),
      op="einsum"),
    P("einsum-batched", "torch.einsum", [N(2, 3, 4), N(2, 4, 5)], ("bij,bjk->bik", I(0), I(1)),
      op="einsum"),
    P("einsum-outer", "torch.einsum", [N(3), N(4)], ("i,j", I(0), I(1)), op="einsum"),
    P("einsum-trace", "torch.einsum", [N(4, 4)], ("ii", I(0)), op="einsum"),
    P("einsum-ellipsis", "torch.einsum", [N(2, 3, 4), N(5, 4)], ("...i,ki->...k", I(0), I(1)),
      op="einsum"),
    P("tril", "x.tril", [N(2, 4, 5)]),
    P("triu", "torch.triu", [N(4, 4)], (I(0), 1)),
    P("repeat", "x.repeat", [N(2, 3)], (I(0), 2, 1, 2)),
    P("tile", "torch.tile", [N(2, 3)], (I(0), (2,))),
    P("repeat-interleave", "x.repeat_interleave", [N(3, 2)], (I(0), 2), {"dim": 0}),
    P("repeat-interleave-flat", "torch.repeat_interleave", [N(2, 3)], (I(0), 2),
      op="repeat_interleave"),
    P("zeros-like", "torch.zeros_like", [N(3, 4)]),
    P("ones-like", "torch.ones_like", [Int(0, 3, 2, 3)]),
    P("full-like", "torch.full_like", [N(2, 3)], (I(0), 2.5)),
    P("arange", "torch.arange", [], (2, 11, 3)),
    P("arange-float", "torch.arange", [], (0.5, 2.0, 0.25), op="arange"),
    P("zeros", "torch.zeros", [], (2, 3)),
    P("ones", "torch.ones", [], ((3, 1),)),
    P("full", "torch.full", [], ((2, 2), 1.5)),
    P("new-zeros", "x.new_zeros", [Int(0, 2, 3)], (I(0), 2, 2)),
    # axes and shapes
    P("transpose", "x.transpose", [N(2, 3, 4)], (I(0), 0, -1)),
    P("permute", "x.permute", [N(2, 3, 4)], (I(0), 2, 0, 1)),
    P("T", "x.__getattribute__", [N(3, 4)], (I(0), "T"), op="T"),
    P("mT", "x.__getattribute__", [N(2, 3, 4)], (I(0), "mT"), op="mT"),
    P("swapaxes", "x.swapaxes", [N(2, 3, 4)], (I(0), -1, 0)),
    P("t", "x.t", [N(3, 4)]),
    P("flatten", "x.flatten", [N(2, 3, 4)], (I(0), 1)),
    P("unflatten", "x.unflatten", [N(2, 6)], (I(0), 1, (3, -1))),
    P("view-as", "x.view_as", [N(3, 4), N(2, 6)]),
    P("expand-as", "x.expand_as", [N(1, 4), N(3, 4)]),
    P("squeeze", "x.squeeze", [N(3, 1, 4)], (I(0), 0)),
    P("unsqueeze", "x.unsqueeze", [N(3, 4)], (I(0), -1)),
    P("expand", "x.expand", [N(3, 1)], (I(0), 2, -1, 4)),
    P("view", "x.view", [N(3, 4)], (I(0), -1, 6)),
    P("movedim", "torch.movedim", [N(2, 3, 4)], (I(0), 0, -1)),
    P("narrow", "x.narrow", [N(3, 6)], (I(0), 1, 2, 3)),
    P("flip", "x.flip", [N(3, 4)], (I(0), (0, 1))),
    P("linear", "F.linear", [N(2, 3, 4), N(5, 4), N(5)]),
    P("long", "x.long", [N(3, 4)]),
    P("float", "x.float", [Int(-3, 3, 3, 4)]),
    P("bool", "x.bool", [Int(-1, 2, 3, 4)]),
    P("to-other", "x.to", [N(3, 4), Int(0, 2, 2)], op="to"),
    P("double", "x.double", [N(2, 3)]),
    P("type-as", "x.type_as", [Bool(3, 4), N(2)]),
    P("softmax", "F.softmax", [N(3, 4)], (I(0),), {"dim": 0}),
    P("log-softmax", "x.log_softmax", [N(3, 4)], (I(0), -1)),
    # rounding, remainders, erf, special values, norms, products
    P("floor", "x.floor", [N(3, 4)]),
    P("ceil", "torch.ceil", [N(3, 4)]),
    P("round", "x.round", [N(3, 4)]),
    P("round-fn", "torch.round", [N(3, 4)], op="round"),
    P("trunc", "x.trunc", [N(3, 4)]),
    P("fix", "x.fix", [N(3, 4)]),
    P("floor-int", "x.floor", [Int(-5, 5, 3, 4)], op="floor"),
    P("mod", "x.__mod__", [N(3, 4), N(4)], op="%"),
    P("mod-number", "x.__mod__", [N(3, 4)], (I(0), -1.5), op="%"),
    P("rmod", "x.__rmod__", [Pos(3, 4)], (I(0), 2.0), op="%"),
    P("mod-int", "x.__mod__", [Int(-9, 9, 3, 4), Int(1, 4, 4)], op="%"),
    P("remainder-int-negative", "torch.remainder", [Int(-9, 9, 3, 4)], (I(0), -4)),
    P("remainder", "x.remainder", [N(2, 3), Pos(2, 1)]),
    P("fmod", "torch.fmod", [N(3, 4), N(4)]),
    P("fmod-int", "x.fmod", [Int(-9, 9, 3, 4), Int(1, 4, 4)], op="fmod"),
    P("floordiv", "x.__floordiv__", [N(3, 4), N(4)], op="//"),
    P("floordiv-int", "x.__floordiv__", [Int(-9, 9, 3, 4), Int(-4, -1, 4)], op="//"),
    P("rfloordiv-int", "x.__rfloordiv__", [Int(1, 5, 3, 4)], (I(0), 7), op="//"),
    P("floordiv-int-by-float", "x.__floordiv__", [Int(-9, 9, 3, 4)], (I(0), 2.5), op="//"),
    P("floor-divide", "torch.floor_divide", [N(3, 4), Pos(4)]),
    P("erf", "torch.erf", [N(3, 4)]),
    P("erf-method", "x.erf", [N(3, 4)], op="erf"),
    P("erf-int", "torch.erf", [Int(-2, 3, 4)], op="erf"),
    P("reciprocal", "x.reciprocal", [Pos(3, 4)]),
    P("reciprocal-int", "torch.reciprocal", [Int(1, 5, 4)], op="reciprocal"),
    P("isnan", "torch.isnan", [S(3, 4)]),
    P("isinf", "x.isinf", [S(3, 4)]),
    P("isfinite", "torch.isfinite", [S(3, 4)]),
    P("isnan-int", "x.isnan", [Int(0, 3, 4)], op="isnan"),
    P("norm", "x.norm", [N(3, 4)]),
    P("norm-dim", "x.norm", [N(3, 4)], (I(0), 2, 1)),
    P("norm-p1-keepdim", "torch.norm", [N(3, 4)], (I(0), 1, 0, True), op="norm"),
    P("norm-inf", "x.norm", [D(3, 4)], (I(0), float("inf"), -1), op="norm"),
    P("norm-minus-inf", "x.norm", [D(3, 4)], (I(0), float("-inf"), 0), op="norm"),
    P("norm-fro", "x.norm", [N(2, 3, 4)], (I(0), "fro", (1, 2)), op="norm"),
    P("normalize", "F.normalize", [N(3, 4)]),
    P("normalize-last-dim", "F.normalize", [N(2, 3, 4)], (I(0),), {"dim": -1}, op="normalize"),
    P("normalize-p1", "F.normalize", [N(3, 4)], (I(0),), {"p": 1.0, "dim": 0}, op="normalize"),
    P("mm", "torch.mm", [N(3, 4), N(4, 5)]),
    P("mm-method", "x.mm", [N(2, 3), N(3, 2)], op="mm"),
    P("bmm", "torch.bmm", [N(2, 3, 4), N(2, 4, 5)]),
    # the arithmetic methods and functions by name
    P("add-alpha", "x.add", [N(3, 4), N(4)], (I(0), I(1)), {"alpha": 2.0}, op="add"),
    P("torch-add-alpha", "torch.add", [N(3, 4), N(3, 4)], (I(0), I(1)), {"alpha": -0.5},
      op="add"),
    P("sub-alpha", "torch.sub", [N(3, 4), N(4)], (I(0), I(1)), {"alpha": 3}, op="sub"),
    P("subtract", "x.subtract", [N(3, 4), N(3, 1)]),
    P("mul", "x.mul", [N(3, 4), N(4)]),
    P("multiply", "torch.multiply", [N(3, 4), N(3, 4)]),
    P("div", "torch.div", [N(3, 4), Pos(4)]),
    P("divide", "x.divide", [N(3, 4), Pos(3, 1)]),
    P("div-floor", "x.div", [N(3, 4), Pos(4)], (I(0), I(1)), {"rounding_mode": "floor"}, op="div"),
    P("div-trunc", "x.div", [N(3, 4), N(4)], (I(0), I(1)), {"rounding_mode": "trunc"}, op="div"),
    P("div-trunc-int", "torch.div", [Int(-9, 9, 3, 4), Int(-4, -1, 4)], (I(0), I(1)),
      {"rounding_mode": "trunc"}, op="div"),
    P("div-trunc-int-positive", "x.div", [Int(-9, 9, 3, 4)], (I(0), 4),
      {"rounding_mode": "trunc"}, op="div"),
    P("div-floor-int", "x.div", [Int(-9, 9, 3, 4), Int(1, 4, 4)], (I(0), I(1)),
      {"rounding_mode": "floor"}, op="div"),
    P("neg", "x.neg", [N(3, 4)]),
    P("negative", "torch.negative", [N(3, 4)]),
    P("square", "x.square", [N(3, 4)]),
    P("square-int", "torch.square", [Int(-3, 3, 4)], op="square"),
    # trigonometric and hyperbolic functions, and compositions PyTorch has by name
    P("tan", "x.tan", [N(3, 4)]),
    P("asin", "torch.asin", [U(-0.95, 0.95, 3, 4)]),
    P("acos", "x.acos", [U(-0.95, 0.95, 3, 4)]),
    P("atan", "torch.atan", [N(3, 4)]),
    P("arctan", "x.arctan", [N(3, 4)]),
    P("sinh", "x.sinh", [N(3, 4)]),
    P("cosh", "torch.cosh", [N(3, 4)]),
    P("asinh", "x.asinh", [N(3, 4)]),
    P("acosh", "torch.acosh", [U(1.1, 3.0, 3, 4)]),
    P("atanh", "x.atanh", [U(-0.95, 0.95, 3, 4)]),
    P("tan-int", "torch.tan", [Int(-3, 3, 4)], op="tan"),
    P("roll", "x.roll", [N(3, 4)], (I(0), 1, 1)),
    P("roll-negative", "torch.roll", [N(3, 4)], (I(0), -2, 0), op="roll"),
    P("roll-two-dims", "x.roll", [N(2, 3, 4)], (I(0), (1, -5), (0, 2)), op="roll"),
    P("roll-flat", "x.roll", [N(3, 4)], (I(0), 5), op="roll"),
    P("dot", "torch.dot", [N(5), N(5)]),
    P("addmm", "torch.addmm", [N(3, 5), N(3, 4), N(4, 5)]),
    P("addmm-scaled", "x.addmm", [N(5), N(3, 4), N(4, 5)], (I(0), I(1), I(2)),
      {"beta": 0.5, "alpha": 2.0}, op="addmm"),
    P("lerp", "torch.lerp", [N(3, 4), N(3, 4)], (I(0), I(1), 0.3)),
    P("lerp-tensor-weight", "x.lerp", [N(3, 4), N(4), N(3, 4)], op="lerp"),
    P("nan-to-num", "torch.nan_to_num", [S(3, 4)]),
    P("nan-to-num-given", "x.nan_to_num", [S(3, 4)], (I(0), 1.5, 100.0, -100.0),
      op="nan_to_num"),
    # scattering back: repeats add up
    P("scatter-add", "x.scatter_add", [N(3, 5), Int(0, 5, 3, 4), N(3, 4)], (I(0), 1, I(1), I(2))),
    P("scatter-add-fn", "torch.scatter_add", [N(4, 3), Int(0, 4, 2, 3), N(2, 3)],
      (I(0), 0, I(1), I(2)), op="scatter_add"),   # (a larger src: PyTorch's backward fails)
    # scatter: the last write wins where index repeats (PyTorch's CPU order)
    P("scatter", "x.scatter", [N(3, 5), Int(0, 5, 3, 4), N(3, 4)], (I(0), 1, I(1), I(2))),
    P("scatter-value", "x.scatter", [N(3, 5), Int(0, 5, 3, 2)], (I(0), 1, I(1), 2.5)),
    P("scatter-fn-add", "torch.scatter", [N(4, 3), Int(0, 4, 2, 3), N(2, 3)],
      (I(0), 0, I(1), I(2)), {"reduce": "add"}, op="scatter"),
    P("scatter-reduce-sum", "x.scatter_reduce", [N(3, 5), Int(0, 5, 3, 4), N(3, 4)],
      (I(0), 1, I(1), I(2), "sum")),
    P("scatter-reduce-sum-without-self", "x.scatter_reduce", [N(3, 5), Int(0, 5, 3, 4), N(3, 4)],
      (I(0), 1, I(1), I(2), "sum"), {"include_self": False}),
    P("scatter-reduce-mean", "x.scatter_reduce", [N(3, 5), Int(0, 5, 3, 6), N(3, 6)],
      (I(0), -1, I(1), I(2), "mean")),
    P("scatter-reduce-mean-without-self", "x.scatter_reduce", [N(4, 3), Int(0, 4, 5, 3), N(5, 3)],
      (I(0), 0, I(1), I(2), "mean"), {"include_self": False}),
    P("scatter-reduce-mean-int", "x.scatter_reduce", [Int(-9, 9, 3, 5), Int(0, 5, 3, 4),
                                                      Int(-9, 9, 3, 4)],
      (I(0), 1, I(1), I(2), "mean")),
    P("scatter-reduce-amax", "x.scatter_reduce", [T(3, 5), Int(0, 5, 3, 6), T(3, 6)],
      (I(0), 1, I(1), I(2), "amax")),
    P("scatter-reduce-amax-without-self", "x.scatter_reduce", [T(3, 5), Int(0, 5, 3, 6), T(3, 6)],
      (I(0), 1, I(1), I(2), "amax"), {"include_self": False}),
    P("scatter-reduce-amin", "torch.scatter_reduce", [T(4, 3), Int(0, 4, 5, 3), T(5, 3)],
      (I(0), 0, I(1), I(2)), {"reduce": "amin"}, op="scatter_reduce"),
    P("scatter-reduce-amin-without-self", "x.scatter_reduce", [T(4, 3), Int(0, 4, 5, 3), T(5, 3)],
      (I(0), 0, I(1), I(2), "amin"), {"include_self": False}),
    # positions read from the values (eager only)
    P("nonzero", "x.nonzero", [Int(-1, 2, 3, 4)], (I(0),)),
    P("nonzero-tuple", "torch.nonzero", [Bool(2, 3, 2)], (I(0),), {"as_tuple": True},
      op="nonzero"),
    P("argwhere", "torch.argwhere", [Int(-1, 2, 5)], (I(0),)),
    P("where-condition-alone", "torch.where", [Bool(3, 4)], (I(0),), op="where"),
    P("masked-select", "x.masked_select", [N(3, 4), Bool(4)], (I(0), I(1))),
    P("masked-select-fn", "torch.masked_select", [N(4, 1), Bool(2, 4, 3)], (I(0), I(1)),
      op="masked_select"),
    # index_put: the last write wins where the indices repeat, or with accumulate all add up
    P("index-put", "x.index_put", [N(4, 3), Int(-4, 4, 5), N(3)],
      (I(0), (I(1),), I(2))),
    P("index-put-two", "x.index_put", [N(4, 3), Int(0, 4, 2, 1), Int(-3, 3, 1, 3), N(2, 3)],
      (I(0), (I(1), I(2)), I(3))),
    P("index-put-accumulate", "torch.index_put", [N(4, 3), Int(0, 4, 6), N(6, 3)],
      (I(0), (I(1),), I(2)), {"accumulate": True}, op="index_put"),
    P("index-fill", "x.index_fill", [N(3, 5), Int(0, 5, 3)], (I(0), 1, I(1), -1.5)),
    P("index-fill-fn", "torch.index_fill", [N(4, 2, 3), Int(0, 4, 2)], (I(0), 0, I(1), 2.0),
      op="index_fill"),
    P("index-copy", "x.index_copy", [N(3, 5), Int(0, 5, 3), N(3, 3)], (I(0), 1, I(1), I(2))),
    P("index-add", "x.index_add", [N(5, 3), Int(0, 5, 4), N(4, 3)], (I(0), 0, I(1), I(2))),
    P("index-add-alpha", "torch.index_add", [N(2, 6), Int(0, 6, 3), N(2, 3)],
      (I(0), -1, I(1), I(2)), {"alpha": -0.5}, op="index_add"),
    P("cross", "torch.cross", [N(4, 3), N(4, 3)], (I(0), I(1)), {"dim": 1}),
    P("cross-first-axis-of-3", "x.cross", [N(2, 3, 3), N(2, 3, 3)], op="cross"),
    P("cross-dim-0", "x.cross", [N(3, 5), N(3, 5)], (I(0), I(1), 0), op="cross"),
    P("unique", "torch.unique", [Int(0, 4, 3, 5)]),
    P("unique-inverse-counts", "x.unique", [Int(-2, 3, 3, 5)], (I(0),),
      {"return_inverse": True, "return_counts": True}, op="unique"),
    P("unique-rows", "torch.unique", [Int(0, 2, 6, 2)], (I(0),), {"dim": 0, "return_inverse": True},
      op="unique"),
    P("diagonal", "x.diagonal", [N(3, 4)]),
    P("diagonal-offset-dims", "torch.diagonal", [N(2, 3, 4)], (I(0), -1, 2, 0), op="diagonal"),
    P("diag-of-matrix", "torch.diag", [N(4, 3)], (I(0), 1), op="diag"),
    P("diag-of-vector", "x.diag", [N(3)], (I(0), -1), op="diag"),
    # float functions of integers and bools: the default float type, as PyTorch's
    P("exp-int", "torch.exp", [Int(-2, 3, 4)], op="exp"),
    P("exp-bool", "x.exp", [Bool(4)], op="exp"),
    P("sqrt-int", "x.sqrt", [Int(0, 5, 4)], op="sqrt"),
    P("sin-int", "torch.sin", [Int(-3, 3, 4)], op="sin"),
    P("logsumexp-int", "x.logsumexp", [Int(-2, 3, 3, 4)], (I(0), 1), op="logsumexp"),
    # F.pad's pairs from the last axis, F.layer_norm's and F.rms_norm's normalized_shape
    P("pad-last-axis", "F.pad", [N(2, 3, 4)], (I(0), (1, 2)), op="pad"),
    P("pad-two-axes-reflect", "F.pad", [N(2, 3, 4)], (I(0), (0, 1, 2, 1)), {"mode": "reflect"},
      op="pad"),
    P("pad-replicate", "F.pad", [N(2, 3, 4)], (I(0), (1, 0, 2, 1)), {"mode": "replicate"},
      op="pad"),
    P("pad-every-axis-value", "F.pad", [N(2, 3, 4)], (I(0), (1, 1, 0, 2, 1, 0)), {"value": 2.5},
      op="pad"),
    P("layer-norm-shape", "F.layer_norm", [N(2, 3, 4)], (I(0), (4,)), op="layer_norm"),
    P("layer-norm-affine", "F.layer_norm", [N(2, 3, 4), N(4), N(4)], (I(0), [4], I(1), I(2)),
      {"eps": 1e-3}, op="layer_norm"),
    P("rms-norm-shape", "F.rms_norm", [N(2, 3, 4), N(4)], (I(0), (4,), I(1)), op="rms_norm"),
    # found by the fuzz of tensor calls (scripts/fuzz_numbers.py, tensors): an integer selects
    # its axis before the index arrays are placed (PyTorch's order, not numpy's)
    P("index-int-slice-array", "x.__getitem__", [N(2, 3, 4, 5), Int(0, 5, 3)],
      (I(0), (ALL, 1, ALL, I(1))), op="indexing"),
    P("index-int-then-array-apart", "x.__getitem__", [N(2, 3, 4), Int(-4, 4, 5)],
      (I(0), (0, ALL, I(1))), op="indexing"),
    P("index-new-axis-int-array", "x.__getitem__", [N(2, 3, 4), Int(0, 4, 2, 2)],
      (I(0), (None, 0, ALL, I(1))), op="indexing"),
    P("cat-float-int", "torch.cat", [N(2, 3), Int(-3, 3, 1, 3)], ([I(0), I(1)],), op="cat"),
    P("stack-int-float", "torch.stack", [Int(-3, 3, 2, 3), N(2, 3)], ([I(0), I(1)], 1),
      op="stack"),
    P("sign-special", "x.sign", [S(3, 4)], op="sign"),
    P("sign-bool", "torch.sign", [Bool(5)], op="sign"),
    P("abs-special", "x.abs", [S(3, 4)], op="abs"),
    P("maximum-special", "torch.maximum", [S(3, 4), S(3, 4)], op="maximum"),
    P("minimum-special-broadcast", "x.minimum", [S(3, 4), N(4)], op="minimum"),
    P("std-no-deviation", "x.std", [Z(3, 4)], (I(0), 1), op="std"),
    P("var-no-freedom", "x.var", [N(3, 2)], (I(0), 1), {"correction": 3}, op="var"),
    P("pow-zero-base", "torch.pow", [Z(5), Pos(5)], op="pow"),
    P("pow-negative-base", "torch.pow", [U(-2.0, -0.5, 5), N(5)], op="pow"),
    P("pow-bool", "x.pow", [Bool(4)], (I(0), True), op="pow"),
    P("matmul-vector-right", "x.matmul", [N(2, 3, 4), N(4)], op="matmul"),
    P("matmul-vector-left", "torch.matmul", [N(4), N(2, 4, 3)], op="matmul"),
    P("matmul-vectors", "x.__matmul__", [N(4), N(4)], op="matmul"),
    P("square-bool", "x.square", [Bool(4)], op="square"),
    P("chunk-empty", "x.chunk", [N(0, 3)], (I(0), 3), op="chunk"),
    P("clamp-int-float-bound", "x.clamp", [Int(-3, 3, 5)], (I(0),), {"min": 0.5}, op="clamp"),
    P("clamp-bool-int-bound", "x.clamp", [Bool(5)], (I(0),), {"max": 1}, op="clamp"),
    P("norm-of-every-axis", "x.norm", [N(2, 3, 2, 2)], op="norm"),
    # a 0-d tensor's dim 0 or -1 (PyTorch reads it as an axis of one entry)
    P("max-dim-of-0d", "x.max", [D()], (I(0), 0), op="max"),
    P("min-dim-of-0d-keepdim", "torch.min", [D()], (I(0), -1), {"keepdim": True}, op="min"),
    P("sort-of-0d", "x.sort", [D()], op="sort"),
    P("topk-of-0d", "x.topk", [D()], (I(0), 1), op="topk"),
    P("gather-of-0d", "x.gather", [N(), Int(0, 1, 3)], (I(0), 0, I(1)), op="gather"),
    P("index-select-of-0d", "x.index_select", [N(), Int(0, 1, 1)], (I(0), 0, I(1)),
      op="index_select"),
    P("transpose-of-0d", "x.transpose", [N()], (I(0), 0, -1), op="transpose"),
    P("movedim-of-0d", "torch.movedim", [N()], (I(0), 0, -1), op="movedim"),
    # a mask larger than the tensor: the two broadcast together (out of place)
    P("masked-fill-larger-mask", "x.masked_fill", [N(1, 3), Bool(2, 1, 3)], (I(0), I(1), -1.5),
      op="masked_fill"),
    # over an empty axis: an empty answer, and the log of an empty sum
    P("softmax-empty-axis", "x.softmax", [N(0, 3)], (I(0), 0), op="softmax"),
    P("log-softmax-empty-axis", "F.log_softmax", [N(2, 0)], (I(0), 1), op="log_softmax"),
    P("logsumexp-empty-axis", "x.logsumexp", [N(0, 3)], (I(0), 0), op="logsumexp"),
    P("softmax-of-0d", "x.softmax", [N()], (I(0), 0), op="softmax"),
    P("log-softmax-of-0d", "x.log_softmax", [N()], (I(0), -1), op="log_softmax"),
    P("softmax-along-a-full-axis-of-an-empty-tensor", "x.softmax", [N(0, 3)], (I(0), 1),
      op="softmax"),
    # bitwise operators on integers (logical on bools), a bool or a number promoted to them
    P("bitwise-and", "x.__and__", [Int(-8, 8, 3, 4), Int(-8, 8, 4)], op="bitwise_and"),
    P("bitwise-and-reflected-number", "x.__rand__", [Int(-8, 8, 5)], (I(0), 6),
      op="bitwise_and"),
    P("bitwise-or-number", "x.__or__", [Int(-8, 8, 5)], (I(0), -3), op="bitwise_or"),
    P("bitwise-xor-of-a-bool-and-an-int", "torch.bitwise_xor", [Bool(3, 1), Int(-8, 8, 3, 2)],
      op="bitwise_xor"),
    P("bitwise-and-of-bools", "torch.bitwise_and", [Bool(4), Bool(4)], op="bitwise_and"),
    P("bitwise-not", "torch.bitwise_not", [Int(-8, 8, 5)], op="bitwise_not"),
    P("bitwise-not-method", "x.bitwise_not", [Int(-8, 8, 2, 3)], op="bitwise_not"),
    P("invert-of-ints", "x.__invert__", [Int(-8, 8, 2, 3)], op="bitwise_not"),
    P("bitwise-or-method-with-true", "x.bitwise_or", [Int(-8, 8, 4)], (I(0), True),
      op="bitwise_or"),
    # the activations PyTorch's nn has beyond the first set; whole numbers hit the kinks
    P("hardtanh", "F.hardtanh", [N(4, 5)]),
    P("hardtanh-at-its-bounds", "F.hardtanh", [T(4, 5)], op="hardtanh"),
    P("hardtanh-bounds", "F.hardtanh", [U(-4, 4, 4, 5)], (I(0), -2.0, 1.5), op="hardtanh"),
    P("hardtanh-keywords", "F.hardtanh", [U(-4, 4, 4, 5)], (I(0),),
      {"min_val": -0.5, "max_val": 3.0}, op="hardtanh"),
    P("relu6", "F.relu6", [U(-3, 9, 4, 5)]),
    P("relu6-at-zero", "F.relu6", [T(4, 5)], op="relu6"),
    P("mish", "F.mish", [U(-8, 8, 4, 5)]),
    P("hardsigmoid", "F.hardsigmoid", [U(-5, 5, 4, 5)]),
    P("hardsigmoid-ties", "F.hardsigmoid", [T(4, 5)], op="hardsigmoid"),
    P("hardswish", "F.hardswish", [U(-5, 5, 4, 5)]),
    P("hardswish-ties", "F.hardswish", [T(4, 5)], op="hardswish"),
    P("leaky-relu-negative-slope", "F.leaky_relu", [N(4, 5)], (I(0),),
      {"negative_slope": 0.3}, op="leaky_relu"),
    P("elu-alpha", "F.elu", [N(4, 5)], (I(0), 0.4), op="elu"),
    P("silu-function", "F.silu", [N(4, 5)], op="silu"),
    P("prelu", "F.prelu", [N(4, 3), Pos(3)]),
    P("prelu-image", "F.prelu", [N(2, 3, 4, 5), Pos(3)], op="prelu"),
    P("prelu-shared", "F.prelu", [N(4, 5), Pos(1)], op="prelu"),
    P("prelu-at-zero", "F.prelu", [T(4, 3), Pos(3)], op="prelu"),
    # NaN and infinities: PyTorch's tests decide which side of a kink they take; 64 values, so
    # all of them take PyTorch's vectorised loop (at a NaN its scalar tail answers otherwise
    # for hardtanh and hardswish: docs/tensors.md)
    P("hardtanh-special", "F.hardtanh", [S(4, 16)], op="hardtanh"),
    P("relu6-special", "F.relu6", [S(4, 16)], op="relu6"),
    P("hardsigmoid-special", "F.hardsigmoid", [S(4, 16)], op="hardsigmoid"),
    P("hardswish-special", "F.hardswish", [S(4, 16)], op="hardswish"),
    P("mish-special", "F.mish", [S(4, 16)], op="mish"),
    P("prelu-special", "F.prelu", [S(4, 16), Pos(16)], op="prelu"),
    P("softplus-beta-threshold", "F.softplus", [U(-4, 4, 4, 16)], (I(0),),
      {"beta": 2.0, "threshold": 3.0}, op="softplus"),
    P("softplus-low-threshold", "F.softplus", [U(-15, 15, 4, 16)], (I(0), 1.0, 10.0),
      op="softplus"),
]
