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
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from deepsharp.tensors.indexing import END


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
