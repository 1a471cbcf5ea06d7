"""Axes and shapes as PyTorch reads them: `transpose(a, b)` swaps two axes, `permute` takes a full
order, `.T` reverses, `mT` swaps the last two; `expand(-1, n)` keeps an axis; `squeeze(dim)` of an
axis whose size is not 1 leaves it; `view` is `reshape`; `flatten(start_dim, end_dim)`. Each is one
transpose, reshape, expand or slice record."""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from deepsharp.errors import OpError
from deepsharp.tensors import keywords as kw
from deepsharp.tensors.indexing import END, START
from deepsharp.tensors.symint import live, plain
from deepsharp.tensors.tensor import Tensor, apply


def sizes_of(op: str, args: Sequence[Any]) -> tuple[int, ...]:
    """`f(2, 3)` or `f((2, 3))` as a tuple of integers."""
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        args = tuple(args[0])
    try:
        return tuple(int(s.__index__()) if not isinstance(s, int) else s for s in args)
    except (AttributeError, TypeError):
        raise OpError(f"{op}: sizes must be integers, received {tuple(args)!r}") from None


def permute(x: Tensor, *dims: Any) -> Tensor:
    """The axes in the order `dims` (every axis once): `x.permute(2, 0, 1)`."""
    order = tuple(kw.axis("permute", d, x.ndim) for d in sizes_of("permute", dims))
    if sorted(order) != list(range(x.ndim)):
        raise OpError(f"permute: dims {sizes_of('permute', dims)} must name every axis of a "
                      f"tensor of rank {x.ndim} once")
    return apply("transpose", x, perm=order)


def transpose(x: Tensor, *dims: Any) -> Tensor:
    """Swap two axes: `x.transpose(0, 1)` (PyTorch). numpy's `transpose(axes)` (a full order) is
    `permute`, and its `transpose()` (reversing) is `.T`: both are refused here, by name."""
    if len(dims) != 2 or not all(isinstance(d, (int, np.integer)) for d in dims):
        raise OpError(f"transpose takes the two dims to swap, as PyTorch's x.transpose(0, 1); "
                      f"received {dims!r}. For a full order of the axes (numpy's "
                      f"transpose(axes)) use permute(...); to reverse them, .T")
    a, b = (kw.axis("transpose", d, x.ndim) for d in dims)
    order = list(range(x.ndim))
    if order:  # (a 0-d tensor takes dims 0 and -1 and stays as it is, as in PyTorch)
        order[a], order[b] = order[b], order[a]
    return apply("transpose", x, perm=tuple(order))


def reverse(x: Tensor) -> Tensor:
    """`.T`: the axes in reverse order."""
    return apply("transpose", x, perm=tuple(reversed(range(x.ndim))))


def matrix_transpose(x: Tensor) -> Tensor:
    """`.mT`: the last two axes swapped."""
    if x.ndim < 2:
        raise OpError(f"mT needs a tensor of rank 2 or more, received rank {x.ndim}")
    return transpose(x, -2, -1)


def t(x: Tensor) -> Tensor:
    """`x.t()`: a matrix's transpose (a tensor of rank 0 or 1 as it is), as PyTorch."""
    if x.ndim > 2:
        raise OpError(f"t() takes a tensor of rank 2 or less, received rank {x.ndim}; use "
                      f"transpose(a, b), permute(...) or mT")
    return reverse(x)


def movedim(x: Tensor, source: Any, destination: Any) -> Tensor:
    """Axes `source` moved to positions `destination` (numpy's moveaxis), the rest in order."""
    src = [kw.axis("movedim", s, x.ndim) for s in sizes_of("movedim", (source,))]
    dst = [kw.axis("movedim", d, x.ndim) for d in sizes_of("movedim", (destination,))]
    if len(src) != len(dst) or len(set(src)) != len(src) or len(set(dst)) != len(dst):
        raise OpError(f"movedim: source {source!r} and destination {destination!r} must name "
                      f"as many distinct axes")
    order = [n for n in range(x.ndim) if n not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return apply("transpose", x, perm=tuple(order[:x.ndim]))  # (0-d: dim 0 or -1, as it is)


def expand(x: Tensor, *sizes: Any) -> Tensor:
    """Broadcast to `sizes`: -1 keeps an axis's size, an axis of size 1 may grow, new axes lead."""
    wanted = sizes_of("expand", sizes)
    lead = len(wanted) - x.ndim
    if lead < 0:
        raise OpError(f"expand: {len(wanted)} sizes for a tensor of rank {x.ndim}; give at "
                      f"least one per axis")
    shape = []
    for i, n in enumerate(wanted):
        own = x._data.shape[i - lead] if i >= lead else None
        if n == -1:
            if own is None:
                raise OpError(f"expand: -1 (keep the size) for the new leading axis {i}")
            n = own
        if own is not None and own != 1 and own != n:
            raise OpError(f"expand: axis {i - lead} has size {own}, which cannot become {n} "
                          f"(only an axis of size 1 grows)")
        shape.append(n)
    return apply("expand", x, shape=tuple(shape))


def view(x: Tensor, *shape: Any) -> Tensor:
    """`reshape` (our tensors have no strides to keep: every view is a reshape)."""
    if len(shape) == 1 and not isinstance(shape[0], (tuple, list, int, np.integer)):
        raise OpError(f"view({shape[0]!r}): a view as another dtype reinterprets bytes, which "
                      f"is not supported; convert values with .to(dtype)")
    return x.reshape(sizes_of("view", shape))


def flatten(x: Tensor, start_dim: int = 0, end_dim: int = -1) -> Tensor:
    """Axes start_dim..end_dim (both included) merged into one."""
    if x.ndim == 0:
        return x.reshape(1)
    a, b = kw.axis("flatten", start_dim, x.ndim), kw.axis("flatten", end_dim, x.ndim)
    if a > b:
        raise OpError(f"flatten: start_dim {start_dim} comes after end_dim {end_dim}")
    merged = math.prod(x.shape[a:b + 1])  # (a size read from a symbolic axis stays one)
    return x.reshape(x.shape[:a] + (merged,) + x.shape[b + 1:])


def unflatten(x: Tensor, dim: int, sizes: Sequence[int]) -> Tensor:
    kw.has_dims("unflatten", x.ndim)
    axis = kw.axis("unflatten", dim, x.ndim)
    sizes = list(sizes_of("unflatten", (sizes,)))
    if sizes.count(-1) == 1:
        known = math.prod(s for s in sizes if s != -1)
        sizes[sizes.index(-1)] = x.shape[axis] // known if known else 0
    if math.prod(sizes) != x.shape[axis]:
        raise OpError(f"unflatten: sizes {tuple(sizes)} do not multiply to axis {axis}'s size "
                      f"{x.shape[axis]}")
    return x.reshape(x.shape[:axis] + tuple(sizes) + x.shape[axis + 1:])


def squeeze(x: Tensor, dim: Any = None, *, axis: Any = None) -> Tensor:
    """Drop axes of size 1: all of them, or those of `dim` that have size 1 (PyTorch leaves a
    named axis of another size as it is, where numpy would raise)."""
    given = kw.either("squeeze", "dim", dim, "axis", axis)
    named = range(x.ndim) if given is None else kw.dims("squeeze", given, None, x.ndim)
    drop = {i for i in named if x.shape[i] == 1}
    return x.reshape(tuple(n for i, n in enumerate(x.shape) if i not in drop))


def unsqueeze(x: Tensor, dim: Any = None, *, axis: Any = None) -> Tensor:
    """A new axis of size 1 at `dim` of the result."""
    given = kw.either("unsqueeze", "dim", dim, "axis", axis)
    if given is None:
        raise OpError("unsqueeze: give dim")
    at = kw.axis("unsqueeze", given, x.ndim + 1)
    return x.reshape(x.shape[:at] + (1,) + x.shape[at:])


def flip(x: Tensor, *dims: Any, axis: Any = None) -> Tensor:
    """The values in reverse order along `dims` (every axis when none is given): a slice of
    step -1 on each, copied (PyTorch's flip is a copy, not a view: a write into the result leaves
    x alone, and a write into x leaves the result alone)."""
    given = kw.either("flip", "dims", sizes_of("flip", dims) if dims else None, "axis", axis)
    flipped = set(kw.dims("flip", given, None, x.ndim))
    starts, stops, steps = [], [], []
    for i in range(x.ndim):  # bounds as written (x[::-1]): a trace holds them at any size
        b, e, s = (-1, START, -1) if i in flipped else (0, END, 1)
        starts.append(b), stops.append(e), steps.append(s)
    reversed_ = apply("slice", x, starts=tuple(starts), stops=tuple(stops), steps=tuple(steps))
    return apply("copy", reversed_)


def part(x: Tensor, axis: int, start: int, stop: int, *, sized: bool = False) -> Tensor:
    """x[..., start:stop, ...] on one axis (bounds as written: a negative one counts from the
    end, END runs to it): a slice record. `sized`: the bounds were computed from the axis's size
    (split, chunk), which a trace refuses over a symbolic axis."""
    starts, stops = [0] * x.ndim, [END] * x.ndim
    starts[axis], stops[axis] = start, stop
    extra = {"sized": (axis,)} if sized else {}
    return apply("slice", x, starts=tuple(starts), stops=tuple(stops), steps=(1,) * x.ndim,
                 **extra)


def narrow(x: Tensor, dim: int, start: int, length: int) -> Tensor:
    """PyTorch's narrow: `length` entries of `dim` from `start` (negative counts from the end,
    and is kept so, so a trace counts from the end at any size). A start or length read from a
    symbolic axis (a SymInt) is a bound the graph computes."""
    kw.has_dims("narrow", x.ndim)
    axis = kw.axis("narrow", dim, x.ndim)
    size = x._data.shape[axis]
    if live(start) or live(length):
        begin = start + x.shape[axis] if start < 0 else start
        _fits(start, length, plain(begin), plain(length), axis, size)
        return part(x, axis, begin, begin + length)
    begin = int(start) + size if int(start) < 0 else int(start)
    _fits(start, length, begin, int(length), axis, size)
    if int(start) < 0:
        stop = int(start) + int(length)
        return part(x, axis, int(start), stop if stop < 0 else END)
    return part(x, axis, begin, begin + int(length))


def _fits(start: Any, length: Any, begin: int, count: int, axis: int, size: int) -> None:
    if not 0 <= begin <= size or not 0 <= count <= size - begin:
        raise OpError(f"narrow: start {start} and length {length} do not fit axis {axis} of "
                      f"size {size}")
