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

A bound read from the size in Python (`x[:, :n - 1]` with n = x.shape[1], a SymInt) is written
from the size's expression (tracing/sized_slices.py). A plain bound over a symbolic axis that is
its last position or its size at the traced size (`x[:, 6]`, `x[:, :7]` of 7 steps) is refused:
it cannot be told from a size read in Python and fixed (the last turn of a loop
`for t in range(x.shape[1])`), which the graph would keep at every size.

The dims rules of the primitives that take or write a region, or make a range or a filled tensor
(slice, setitem, arange, full), live here too.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from deepsharp.tensors.indexing import END
from deepsharp.tensors.symint import live
from deepsharp.tracing.dims import DimContext, _agree, matching_atoms
from deepsharp.tracing.sized_slices import Unsliceable, fixed_position, sized, sized_axis
from deepsharp.tracing.sizes import Poly
from deepsharp.tracing.symbols import Dim, Dims, Sym, example


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
        if sized((b, e)):
            try:
                kinds.append(sized_axis(dim, b, e, s).kind)
            except Unsliceable:
                kinds.append("part")
            continue
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
    `create` is off). Bounds read from symbolic axes (SymInts) are noted for the writer as
    `_bounds[axis]`: (kind, start, stop), the bounds as the graph writes them."""
    if sized((b, e)):
        try:
            taken = sized_axis(dim, b, e, s)
        except Unsliceable as error:
            raise ctx.symbolic(f"a slice of axis {axis} (of size {dim}) by the bounds "
                               f"{_shown(b)}:{_shown(e)}: {error}") from None
        ctx.attrs.setdefault("_bounds", {})[axis] = (taken.kind, taken.start, taken.stop)
        if taken.kind != "part":
            return taken.kind, dim
        return "part", ctx.dim_of(taken.length, output, axis, create=create)
    if not isinstance(dim, Sym):
        return of_fixed(int(dim), b, e, s), len(range(int(dim))[slice(b, e, s)])
    try:
        taken = of_symbolic(dim.example, b, e, s)
    except Unsliceable as error:
        raise ctx.symbolic(f"a slice of axis {axis}, whose size is the symbol {dim}: "
                           f"{error}") from None
    if taken.kind != "part":
        return taken.kind, dim
    length = taken.length(dim.example) if taken.k == 0 else \
        ctx.derived(dim, taken.d, taken.stride, output, axis, create=create)
    _fixed_position(ctx, dim, (b, e), axis)
    return "part", length


def _shown(bound: Any) -> str:
    return str(bound.expr) if live(bound) else "" if abs(int(bound)) >= END else str(int(bound))


def _fixed_position(ctx: DimContext, dim: Sym, positions: Any, axis: int) -> None:
    """Refuse a plain position of a symbolic axis that is its last one or its size in the traced
    run (see tracing/sized_slices.py `fixed_position`)."""
    for position in positions:
        if 0 <= position and position in (dim.example - 1, dim.example):
            raise ctx.symbolic(fixed_position(dim, axis, position))


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
        if isinstance(dim, Sym) and not sized((b, e)):
            _fixed_position(ctx, dim, (b, e), axis)
        if v == 1 and not sized((b, e)):
            continue
        _, length = sliced(ctx, dim, b, e, s, axis, create=False)
        if v == 1:
            continue
        if length is None:
            raise ctx.symbolic(f"axis {axis} of the value written is {v}, but the region written "
                               f"of the symbolic axis {dim} has a length no operation made yet; "
                               f"make the value from a slice of the same bounds")
        _agree(ctx, axis, [v, length], example(v), "between the value and the region written")
    return [dims]


def arange(ctx: DimContext) -> list[Dims]:
    """arange(start, stop, step): a length that follows a symbolic size when `start` or `stop`
    is a size read from a symbolic axis (a SymInt: `arange(n)`, `arange(1, n)`,
    `arange(n // 2, n)`), or when a plain `stop` is one by its value (a product of atoms whose
    traced sizes make it); the sizes are noted as `_start`, `_stop` for the writer. Else fixed
    (the result is then a constant)."""
    attrs = ctx.attrs
    start, stop, step = attrs["start"], attrs["stop"], attrs["step"]
    if live(start) or live(stop):
        return [(_sized_range(ctx, start, stop, step),)]
    length = ctx.shapes[0][0]
    if not all(float(v).is_integer() for v in (start, stop, step)) or step <= 0 or stop < 2:
        return [(length,)]
    stop_dim = matching_atoms(ctx, int(stop))
    if not isinstance(stop_dim, Sym):
        return [(length,)]
    attrs["_stop"] = stop_dim
    return [(ctx.derived(stop_dim, -int(start), int(step), 0, 0),)]


def _sized_range(ctx: DimContext, start: Any, stop: Any, step: Any) -> Dim:
    if not all(isinstance(v, int) or float(v).is_integer() for v in (start, step)):
        raise ctx.symbolic(f"arange({start!r}, {stop}, {step!r}) with a size read from a "
                           f"symbolic axis takes an integer start and step (its length is "
                           f"then computed from the size)")
    first = start.expr if live(start) else Poly.const(int(start))
    last = stop.expr if live(stop) else Poly.const(int(stop))
    step = int(step)
    span = (last - first) if step > 0 else (first - last)
    length = (span + (abs(step) - 1)) // abs(step)
    if length.example != ctx.shapes[0][0]:
        raise ctx.symbolic(f"arange from {first} to {last} by {step} is empty in the traced run; "
                           f"trace at sizes where it holds at least 2 values")
    ctx.attrs["_start"], ctx.attrs["_stop"] = first, last
    return ctx.dim_of(length, 0, 0)


def full(ctx: DimContext) -> list[Dims]:
    """full(shape, value): each size read from a symbolic axis (a SymInt) is its Dim; a value
    read from one is noted as `_value` (a polynomial) for the writer."""
    shape, value = ctx.attrs["shape"], ctx.attrs["value"]
    if live(value):
        ctx.attrs["_value"] = value.expr
    return [tuple(ctx.dim_of(n.expr, 0, axis) if live(n) else int(n)
                  for axis, n in enumerate(shape))]
