"""Basic indexing of tensors (integers, slices, None, Ellipsis) as slice + reshape records;
indexing with integer and bool arrays in `advanced_index`."""

from __future__ import annotations

from typing import Any

import numpy as np

from deepsharp.errors import OpError
from deepsharp.tensors.advanced_index import getitem as advanced_getitem
from deepsharp.tensors.advanced_index import is_advanced
from deepsharp.tensors.symint import live

END = 2 ** 63 - 1   # a bound running to the end of an axis, at any size (Python's omitted stop)
START = -END        # a stop running to the start, with a negative step (Python's omitted stop)


def _bound(value: Any, default: int) -> int:
    """A bound as written; a size read from a symbolic axis (a SymInt) is kept as it is."""
    return default if value is None else value if live(value) else int(value)


def basic_index(shape: tuple[int, ...], index: Any,
                op: str = "indexing") -> tuple[tuple[int, ...], ...]:
    """A basic index (integers, slices, None, Ellipsis) of a tensor of `shape` as one slice per axis
    and the shape of the result: (starts, stops, steps, out_shape, kinds), `kinds` saying what
    each item of the index was, in order ("new" for None, "int", "slice"). Bounds are kept as
    written (Python's semantics: a negative bound counts from the end; an omitted one is 0 / END,
    or -1 / START with a negative step); an integer k is k:k+1 (k:END for -1) and its axis is
    dropped; None adds an axis of size 1 to the result. Errors name `op` (the call indexing)."""
    if not isinstance(index, tuple):
        index = (index,)
    if sum(1 for i in index if i is Ellipsis) > 1:
        raise OpError(f"{op}: an index can only have a single ellipsis")
    used = sum(1 for i in index if i is not None and i is not Ellipsis)
    if used > len(shape):
        raise OpError(f"{op}: too many indices ({used}) for a tensor of rank {len(shape)}")
    expanded: list[Any] = []
    for i in index:
        if i is Ellipsis:
            expanded.extend([slice(None)] * (len(shape) - used))
        else:
            expanded.append(i)
    expanded.extend([slice(None)] * (len(shape) - sum(1 for i in expanded if i is not None)))
    starts, stops, steps, out_shape, kinds = [], [], [], [], []
    axis = 0
    for i in expanded:
        if i is None:
            out_shape.append(1)
            kinds.append("new")
            continue
        size = shape[axis]
        if isinstance(i, slice):
            s = _bound(i.step, 1)
            if s == 0:
                raise OpError(f"{op}: slice step cannot be zero (axis {axis})")
            b, e = _bound(i.start, 0 if s > 0 else -1), _bound(i.stop, END if s > 0 else START)
            starts.append(b), stops.append(e), steps.append(s)
            out_shape.append(len(range(size)[slice(b, e, s)]))
            kinds.append("slice")
        elif isinstance(i, (int, np.integer)) and not isinstance(i, bool):
            k = i if live(i) else int(i)
            if not -size <= k < size:
                raise OpError(f"{op}: index {k} is out of range for axis {axis} of size {size}")
            starts.append(k), stops.append(k + 1 if k != -1 else END), steps.append(1)
            kinds.append("int")
        else:
            raise OpError(f"{op}: cannot index with {type(i).__name__}")
        axis += 1
    return tuple(starts), tuple(stops), tuple(steps), tuple(out_shape), tuple(kinds)


def getitem(tensor, index: Any, op: str = "indexing"):
    """tensor[index]; a basic index's errors name `op` (select: "select")."""
    from deepsharp.tensors.tensor import apply

    if is_advanced(index):
        return advanced_getitem(tensor, index)
    starts, stops, steps, out_shape, _ = basic_index(tensor.shape, index, op)
    result = tensor
    # bounds are kept as written (a negative one counts from the end, END runs to the end), so a
    # trace knows `x[:, 1:]` from `x[:, 1:7]`; only `:` (or `0:`) skips the slice
    # (a size read from a symbolic axis is a bound even where it is 0 or the size in this run)
    if not all(b == 0 and e == END and s == 1 and not live(b) and not live(e)
               for b, e, s in zip(starts, stops, steps)):
        result = apply("slice", result, starts=starts, stops=stops, steps=steps)
    if tuple(out_shape) != result.shape:
        result = apply("reshape", result, shape=tuple(out_shape))
    return result
