"""How much of an axis a slice takes, when the axis's size is symbolic.

A slice's bounds are kept as written (`deepsharp.tensors.indexing.basic_index`): a non-negative
bound counts from the start, a negative one from the end, END runs to the end and START (with a
negative step) to the start, as in Python and in ONNX's Slice. So over an axis of size n (large
enough that no bound is clamped) a slice takes

    ceil((k * n + d) / |step|)   elements, with k = 0, 1 or -1:

k = 0 when both bounds count from the same end (`x[:, :3]`, `x[:, -3:]`, `x[:, -1]`): a fixed
length; k = 1 from a start-relative bound to an end-relative one (`x[:, 1:]`, `x[:, :-1]`,
`x[:, ::2]`): a length that follows n, the same for every slice of the same (n, d, step), so
`x[:, 1:] - x[:, :-1]` lines up; k = -1 (`x[:, -5:3]`) shrinks as n grows and is refused.

A non-negative bound equal to the axis's size in the traced run is read as that size
(`x[:, :x.shape[1]]` is the whole axis): sizes arrive as plain integers, as for reshapes.

The dims rules of the primitives that take or write a region, or make a range (slice, setitem,
arange), live here too.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from deepsharp.tensors.indexing import END
from deepsharp.tracing.dims import DimContext, _agree, matching_atoms
from deepsharp.tracing.symbols import Dim, Dims, Sym, example


class Unsliceable(Exception):
    """The slice's length cannot be written for a symbolic axis (the caller names it)."""


@dataclass(frozen=True)
class AxisSlice:
    """What a slice takes of one axis: `kind` is "full", "flip" (all of it, reversed) or "part";
    over a symbolic axis its length is ceil((k * n + d) / stride)."""

    kind: str
    k: int
    d: int
    stride: int

    def length(self, n: int) -> int:
        return max(0, math.ceil((self.k * n + self.d) / self.stride))


def _anchor(bound: int, n: int) -> tuple[int, int]:
    """A bound as (k, offset): its position is k * n + offset."""
    if bound >= END:
        return 1, 0
    if bound <= -END:
        return 0, -1  # before the first element (a negative step's stop)
    if bound < 0:
        return 1, bound
    if bound == n:
        return 1, 0
    return 0, bound


def of_symbolic(n: int, start: int, stop: int, step: int) -> AxisSlice:
    """The slice start:stop:step of an axis whose size is symbolic (`n` in the traced run)."""
    (kb, db), (ke, de) = _anchor(start, n), _anchor(stop, n)
    if step > 0:
        k, d = ke - kb, de - db
        low, high = 0, n
    else:
        k, d = kb - ke, db - de
        low, high = -1, n - 1
    for kind, offset in ((kb, db), (ke, de)):
        if not low <= kind * n + offset <= high:
            raise Unsliceable(f"its bounds {_written(start, stop, step)} reach outside the axis "
                              f"at its traced size {n}, where they are clamped; trace with a "
                              f"larger size")
    if k < 0:
        raise Unsliceable(f"its bounds {_written(start, stop, step)} take fewer elements the "
                          f"larger the axis is; count both bounds from the same end")
    taken = AxisSlice("part", k, d, abs(step))
    if k == 1 and d == 0 and abs(step) == 1:
        taken = AxisSlice("full" if step > 0 else "flip", 1, 0, 1)
    if taken.length(n) != len(range(n)[slice(start, stop, step)]):
        raise Unsliceable(f"its bounds {_written(start, stop, step)} are clamped at the axis's "
                          f"traced size {n}; trace with a larger size")
    return taken


def of_fixed(n: int, start: int, stop: int, step: int) -> str:
    """"full", "flip" or "part" for an axis of fixed size `n`."""
    taken = range(n)[slice(start, stop, step)]
    return "full" if taken == range(n) else "flip" if taken == range(n - 1, -1, -1) else "part"


def _written(start: int, stop: int, step: int) -> str:
    def bound(b: int) -> str:
        return "" if abs(b) >= END else str(b)

    return f"{bound(start)}:{bound(stop)}" + (f":{step}" if step != 1 else "")


# -- the dims rules of slice, setitem and arange (deepsharp.tracing.dims) --------------------
def slice_axes(dims: Dims, attrs: dict[str, Any]) -> list[str]:
    """Per axis: 'full', 'flip' (full and reversed) or 'part'. A symbolic axis is full only when
    its bounds take all of it at any size (`:`, `::-1`), not merely at the traced size."""
    kinds = []
    for dim, b, e, s in zip(dims, attrs["starts"], attrs["stops"], attrs["steps"]):
        if not isinstance(dim, Sym):
            kinds.append(of_fixed(int(dim), b, e, s))
            continue
        try:
            kinds.append(of_symbolic(dim.example, b, e, s).kind)
        except Unsliceable:
            kinds.append("part")
    return kinds


def sliced(ctx: DimContext, dim: Dim, b: int, e: int, s: int, axis: int, *,
           output: int = 0, create: bool = True) -> tuple[str, Dim | None]:
    """What start:stop:step takes of an axis of size `dim`: its kind and its length (a fixed
    size, the symbol, or the shared atom of its length; None when that atom is not made yet and
    `create` is off)."""
    if not isinstance(dim, Sym):
        return of_fixed(int(dim), b, e, s), len(range(int(dim))[slice(b, e, s)])
    try:
        taken = of_symbolic(dim.example, b, e, s)
    except Unsliceable as error:
        raise ctx.symbolic(f"a slice of axis {axis}, whose size is the symbol {dim}: "
                           f"{error}") from None
    if taken.kind != "part":
        return taken.kind, dim
    if taken.k == 0:
        return "part", taken.length(dim.example)
    return "part", ctx.derived(dim, taken.d, taken.stride, output, axis, create=create)


def slice_(ctx: DimContext) -> list[Dims]:
    """Bounds as written: a fixed length, the symbol, or the shared atom of a length that
    follows it (`x[:, 1:]` and `x[:, :-1]` are both steps-1); see tracing/slices.py. Bounds
    computed from a symbolic axis's size (`sized`: split, chunk) are refused."""
    dims = ctx.operands[0].dims
    attrs = ctx.attrs
    for axis in attrs.get("sized", ()):
        if isinstance(dims[axis], Sym):
            raise ctx.symbolic(f"axis {axis}, whose size is the symbol {dims[axis]}, is split into "
                               f"pieces computed from its traced size {dims[axis].example} (split, "
                               f"chunk); a graph cannot split a symbolic axis into a number of "
                               f"pieces that depends on it: split a fixed axis, or slice with "
                               f"bounds counted from the ends (x[:, :k], x[:, k:])")
    return [tuple(sliced(ctx, dim, b, e, s, axis)[1] for axis, (dim, b, e, s) in enumerate(
        zip(dims, attrs["starts"], attrs["stops"], attrs["steps"])))]


def setitem(ctx: DimContext) -> list[Dims]:
    """x[region] = value: x's dims; the value, of x's rank, has on each axis 1 or the region's
    length."""
    dims, value = ctx.operands[0].dims, ctx.operands[1].dims
    attrs = ctx.attrs
    for axis, (dim, b, e, s, v) in enumerate(zip(dims, attrs["starts"], attrs["stops"],
                                                 attrs["steps"], value)):
        if v == 1:
            continue
        _, length = sliced(ctx, dim, b, e, s, axis, create=False)
        if length is None:
            raise ctx.symbolic(f"axis {axis} of the value written is {v}, but the region written "
                               f"of the symbolic axis {dim} has a length no operation made yet; "
                               f"make the value from a slice of the same bounds")
        _agree(ctx, axis, [v, length], example(v), "between the value and the region written")
    return [dims]


def arange(ctx: DimContext) -> list[Dims]:
    """arange(start, stop, step): a length that follows a symbolic size when `stop` is one (a
    product of atoms whose traced sizes make it: `x.shape[1]` arrives as a plain integer), noted
    as `_stop` for the writer; else fixed (the result is then a constant)."""
    attrs = ctx.attrs
    start, stop, step = attrs["start"], attrs["stop"], attrs["step"]
    length = ctx.shapes[0][0]
    if not all(float(v).is_integer() for v in (start, stop, step)) or step <= 0 or stop < 2:
        return [(length,)]
    stop_dim = matching_atoms(ctx, int(stop))
    if not isinstance(stop_dim, Sym):
        return [(length,)]
    attrs["_stop"] = stop_dim
    return [(ctx.derived(stop_dim, -int(start), int(step), 0, 0),)]
