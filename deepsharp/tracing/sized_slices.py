"""Slice bounds read from symbolic axes: `x[:, :n - 1]`, `x[:, n // 2:]`, `weight[:n]`.

A bound that is a size read in Python (a SymInt, deepsharp/tensors/symint.py) is written from
its polynomial, never from its traced number:

- `n + c` where n is the size of the axis sliced (`x[:, :n - 1]`, `x[:, n - 3:]`) is the bound c
  counted from the end, when that agrees with Python at every size: Python counts `n + c` from
  the end again once it is negative, so c counts from the end exactly for c >= -2 (a positive
  step) or c >= -1 (a negative one), and a bound `n + c` with c >= 0 runs to the end (END; -1
  with a negative step). Beyond that (`x[:, :n - 5]`) the bound is computed in the graph and
  ONNX's Slice treats it as Python does (a negative step with such a bound is refused).
- any other size (`n // 2`, another axis's size, a size over a fixed axis: `weight[:n]`) is
  computed in the graph (`Shape`, `Gather`, arithmetic) and fed to the Slice.

The slice's length is then a polynomial (`(n - 1) - 0`, `n - n // 2`, `n`): the symbol itself, a
number, or the atom of that size shared by every operation making it (tracing/dims.py
`DimContext.dim_of`). At the traced size the bounds must lie inside the axis (no bound counted
from the end twice or clamped), or the slice is refused.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from deepsharp.tensors.indexing import END
from deepsharp.tensors.symint import live
from deepsharp.tracing.sizes import Poly
from deepsharp.tracing.symbols import Dim, Sym, example


class Unsliceable(Exception):
    """The slice's length cannot be written for a symbolic axis (the caller names it)."""


@dataclass(frozen=True)
class SizedSlice:
    """What a slice with a bound read from a symbolic axis takes of one axis: `kind` ("full",
    "flip" or "part"), its length, and its bounds as the graph writes them (numbers, or
    polynomials the graph computes)."""

    kind: str
    length: Poly
    start: int | Poly
    stop: int | Poly


def fixed_position(dim: Sym, axis: int, position: int) -> str:
    """Why a plain position of a symbolic axis that is its last one (or its size) in the traced
    run is refused: it cannot be told from a position computed from the size in Python and fixed
    (the last turn of a loop over the axis), which the graph would keep at every size."""
    what = "its last position" if position == dim.example - 1 else "its size"
    return (f"the plain position {position} of axis {axis}, whose size is the symbol {dim}, is "
            f"{what} in the traced run: it cannot be told from a position computed from the "
            f"size in Python (the last turn of a loop `for t in range(x.shape[{axis}])`, unbind, "
            f"iteration), which the graph would keep at {position} at every size; count from "
            f"the end (x[:, -1], x.select({axis}, -1), x[:, :-1]), write the size itself "
            f"(n = x.shape[{axis}]; x[:, n - 1]), or trace at a size where {position} is "
            f"neither the last position nor the size")


def sized(bounds: tuple[Any, Any]) -> bool:
    """Whether a slice's start or stop is a size read from a symbolic axis."""
    return live(bounds[0]) or live(bounds[1])


def _python(v: int, m: int, step: int) -> int:
    """Where Python puts a bound v of an axis of size m (slice.indices)."""
    v = v + m if v < 0 else v
    return min(max(v, 0), m) if step > 0 else min(max(v, -1), m - 1)


def from_end_exact(c: int, step: int) -> bool:
    """Whether the bound n + c (c < 0) is the bound c counted from the end at every size n:
    both agree once n + c >= 0; below, Python counts n + c from the end once more. So it is
    for c >= -2 with a positive step, c >= -1 with a negative one."""
    if c < -2:  # (n = -c - 1 > -c / 2 always differs)
        return False
    return all(_python(m + c, m, step) == _python(c, m, step) for m in range(-c + 1))


def _position(bound: Any, size: Poly, step: int) -> tuple[Poly, int | Poly]:
    """A bound as (its position, a polynomial; how the graph writes it)."""
    expr = bound.expr if live(bound) else None
    if expr is not None and expr.constant is not None:
        bound, expr = expr.constant, None
    if expr is None:
        b = int(bound)
        if b >= END:
            return (size if step > 0 else size - 1), b
        if b <= -END:
            return Poly.const(-1), b
        return (size + b if b < 0 else Poly.const(b)), b
    if expr.example < 0:  # Python counts it from the end (x[:, -n]): computed, ONNX does too
        position = expr + size
        if position.as_dim() is None:
            raise Unsliceable(f"its bound {expr} is {expr.example} at the traced size, which "
                              f"Python counts from the end, but {position} counted so may "
                              f"change sign at other sizes; write a bound counted from the end "
                              f"as a negative number (x[:, -3:])")
        return position, expr
    offset = (expr - size).constant if size.constant is None else None
    if offset is None:
        return expr, expr
    if offset >= 0:  # at or beyond the end: clamped to it at every size
        return (size, END) if step > 0 else (size - 1, -1)
    return size + offset, offset if from_end_exact(offset, step) else expr


def sized_axis(dim: Dim, b: Any, e: Any, s: int) -> SizedSlice:
    """The slice b:e:s of an axis of size `dim` (a symbol or a number) when b or e is a size
    read from a symbolic axis."""
    size = Poly.of(dim)
    n = example(dim)
    (pb, wb), (pe, we) = _position(b, size, s), _position(e, size, s)
    if s < 0 and (isinstance(wb, Poly) or isinstance(we, Poly)):
        raise Unsliceable("a negative step with a bound the graph computes from sizes is not "
                          "written (ONNX's Slice places such a start differently from Python "
                          "at small sizes); reverse the axis first (x.flip(1)) and slice it "
                          "with a positive step")
    low, high = (0, n) if s > 0 else (-1, n - 1)
    for name, position in (("start", pb), ("stop", pe)):
        if not low <= position.example <= high:
            raise Unsliceable(f"its {name} {position} is {position.example} at the axis's traced "
                              f"size {n}, outside the axis, where Python counts a negative bound "
                              f"from the end or clamps one beyond it; trace at sizes where the "
                              f"bounds fall inside the axis")
    span = (pe - pb) if s > 0 else (pb - pe)
    length = (span + (abs(s) - 1)) // abs(s)
    taken = len(range(n)[slice(int.__int__(b) if isinstance(b, int) else b,
                               int.__int__(e) if isinstance(e, int) else e, s)])
    if length.example != taken:
        raise Unsliceable(f"its bounds take {taken} elements at the axis's traced size {n}, "
                          f"where they are clamped; trace with a larger size")
    kind = "part"
    if s == 1 and pb == Poly.const(0) and pe == size:
        kind = "full"
    elif s == -1 and pb == size - 1 and pe == Poly.const(-1):
        kind = "flip"
    return SizedSlice(kind, length, wb, we)

