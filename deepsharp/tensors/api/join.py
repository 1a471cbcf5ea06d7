"""Joining and splitting, as PyTorch: `cat`/`concat` and `stack` along `dim` (0 unless given),
`split(size)` in pieces of `size` (PyTorch's meaning; numpy's `split(x, n)` makes n pieces, which
is `chunk`), `chunk`, `unbind`; `repeat` copies whole (numpy's tile) and `repeat_interleave`
repeats each entry (numpy's repeat)."""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from deepsharp.errors import OpError
from deepsharp.tensors import keywords as kw
from deepsharp.tensors.api.shape import part, sizes_of
from deepsharp.tensors.symint import UNROLLED, SymInt, live
from deepsharp.tensors.tensor import Tensor, apply, as_tensor


def _tensors(op: str, tensors: Sequence[Any]) -> list[Tensor]:
    if isinstance(tensors, Tensor) or not isinstance(tensors, (list, tuple)) or not tensors:
        raise OpError(f"{op}: give a non-empty list or tuple of tensors, received "
                      f"{type(tensors).__name__}")
    return [as_tensor(t) for t in tensors]


def cat(tensors: Sequence[Any], dim: Any = None, *, axis: Any = None) -> Tensor:
    """Join along `dim` (0 unless given, as torch.cat and numpy.concatenate); every other axis
    must agree."""
    parts = _tensors("cat", tensors)
    rank = parts[0].ndim
    at = kw.one_dim("cat", dim, axis, rank, default=0)
    for p in parts[1:]:
        if p.ndim != rank or any(a != b for i, (a, b) in enumerate(zip(p.shape, parts[0].shape))
                                 if i != at):
            raise OpError(f"cat: shapes {parts[0].shape} and {p.shape} differ on an axis other "
                          f"than dim {at}")
    return apply("concat", *parts, axis=at)


concat = concatenate = cat


def stack(tensors: Sequence[Any], dim: Any = None, *, axis: Any = None) -> Tensor:
    """The tensors (all of one shape) along a new axis `dim` (0 unless given)."""
    parts = _tensors("stack", tensors)
    shape = parts[0].shape
    for p in parts[1:]:
        if p.shape != shape:
            raise OpError(f"stack: every tensor must have one shape, received {shape} and "
                          f"{p.shape}")
    at = kw.one_dim("stack", dim, axis, len(shape) + 1, default=0)
    return apply("concat", *[p.reshape(shape[:at] + (1,) + shape[at:]) for p in parts], axis=at)


def split(x: Tensor, split_size_or_sections: Any, dim: Any = None, *, axis: Any = None
          ) -> tuple[Tensor, ...]:
    """PyTorch's split: an integer is the size of each piece (the last may be smaller); a list
    gives every piece's size (they must add up to the axis's size)."""
    kw.has_dims("split", x.ndim)
    at = kw.one_dim("split", dim, axis, x.ndim, default=0)
    size = x._data.shape[at]  # (split over a symbolic axis is refused by the trace, by name)
    _no_sizes("split", split_size_or_sections)
    if isinstance(split_size_or_sections, (int, np.integer)):
        step = int(split_size_or_sections)
        if step <= 0 and size:
            raise OpError(f"split: the size of each piece must be positive, received {step} "
                          f"(PyTorch's split takes a size; for a number of pieces use chunk)")
        sizes = [min(step, size - b) for b in range(0, size, step)] if size else [0]
    else:
        sizes = list(sizes_of("split", (split_size_or_sections,)))
        if sum(sizes) != size or any(s < 0 for s in sizes):
            raise OpError(f"split: sections {tuple(sizes)} do not add up to axis {at}'s size "
                          f"{size}")
    bounds = np.cumsum([0] + sizes)
    return tuple(part(x, at, int(b), int(e), sized=True)
                 for b, e in zip(bounds[:-1], bounds[1:]))


def chunk(x: Tensor, chunks: int, dim: Any = None, *, axis: Any = None) -> tuple[Tensor, ...]:
    """PyTorch's chunk: pieces of ceil(size / chunks) (fewer pieces when they run out)."""
    _no_sizes("chunk", chunks)
    chunks = kw.integer("chunk", "chunks", chunks)
    if chunks <= 0:
        raise OpError(f"chunk: chunks must be positive, received {chunks}")
    kw.has_dims("chunk", x.ndim)
    at = kw.one_dim("chunk", dim, axis, x.ndim, default=0)
    size = x._data.shape[at]
    if not size:  # PyTorch's: that many empty pieces
        return split(x, [0] * chunks, at)
    return split(x, -(-size // int(chunks)), at)


def unbind(x: Tensor, dim: Any = None, *, axis: Any = None) -> tuple[Tensor, ...]:
    """The entries along `dim` (0 unless given), that axis dropped."""
    kw.has_dims("unbind", x.ndim)
    at = kw.one_dim("unbind", dim, axis, x.ndim, default=0)
    size = x.shape[at]
    if isinstance(size, SymInt):
        size.fixed(f"unbind(dim={at}) (or iteration) over a symbolic axis", UNROLLED)
    return tuple(x.select(at, i) for i in range(x._data.shape[at]))


def _no_sizes(op: str, pieces: Any) -> None:
    """A number of pieces (or their sizes) read from a symbolic axis would fix the graph's
    structure at the traced size."""
    for n in pieces if isinstance(pieces, (tuple, list)) else (pieces,):
        if live(n):
            n.fixed(f"{op}({n!r}) (its pieces counted from a size)",
                    "a graph has a fixed number of outputs; slice with bounds the graph "
                    "computes instead (x[:, :n // 2], x[:, n // 2:])")


def tile(x: Tensor, *reps: Any) -> Tensor:
    """numpy's and PyTorch's tile: `reps` copies along each axis (fewer reps than axes repeat the
    last axes; more add leading axes)."""
    counts = sizes_of("tile", reps)
    if any(r < 0 for r in counts):
        raise OpError(f"tile: repeats must be non-negative, received {counts}")
    rank = max(len(counts), x.ndim)
    counts = (1,) * (rank - len(counts)) + counts
    source = x.reshape((1,) * (rank - x.ndim) + x.shape) if rank > x.ndim else x
    return apply("tile", source, reps=counts)


def repeat(x: Tensor, *sizes: Any) -> Tensor:
    """PyTorch's Tensor.repeat: whole copies along each axis (numpy's tile), one count per axis
    at least. numpy's repeat (each entry repeated) is `repeat_interleave`."""
    counts = sizes_of("repeat", sizes)
    if len(counts) < x.ndim:
        raise OpError(f"repeat: {len(counts)} counts for a tensor of rank {x.ndim}; PyTorch's "
                      f"repeat takes one per axis (and copies whole, as numpy's tile; numpy's "
                      f"repeat of each entry is repeat_interleave)")
    return tile(x, counts)


def repeat_interleave(x: Tensor, repeats: Any, dim: Any = None, *, axis: Any = None) -> Tensor:
    """Each entry `repeats` times along `dim` (numpy's repeat; the flattened values when dim is
    None). `repeats` is an integer, or one count per entry (read now: its values fix the size)."""
    at = kw.one_dim("repeat_interleave", dim, axis, x.ndim)
    if at is None:
        x, at = x.reshape(-1), 0
    kw.has_dims("repeat_interleave", x.ndim)
    if isinstance(repeats, (int, np.integer)):
        r = int(repeats)
        if r < 0:
            raise OpError(f"repeat_interleave: repeats must be non-negative, received {r}")
        grown = x.reshape(x.shape[:at + 1] + (1,) + x.shape[at + 1:])
        grown = apply("expand", grown, shape=x.shape[:at + 1] + (r,) + x.shape[at + 1:])
        return grown.reshape(x.shape[:at] + (x.shape[at] * r,) + x.shape[at + 1:])
    counts = np.asarray(repeats._read("repeat_interleave(repeats)") if isinstance(repeats, Tensor)
                        else repeats)
    size = x._data.shape[at]  # (entry by entry: the trace refuses a symbolic axis, by position)
    if counts.ndim != 1 or len(counts) != size or counts.dtype.kind not in "iu" \
            or (counts < 0).any():
        raise OpError(f"repeat_interleave: repeats must be an integer or {size} "
                      f"non-negative integers (one per entry of dim {at}), received {repeats!r}")
    index = Tensor(np.repeat(np.arange(size), counts))
    return apply("gather", x, index, axis=at)


def roll(x: Tensor, shifts: Any, dims: Any = None) -> Tensor:
    """PyTorch's roll: the entries move `shifts` places along `dims`, wrapping round (without
    dims, over the flattened values, then the shape back). A graph rolls by the same number of
    places at any size; a shift as large as a symbolic axis is refused (the graph would keep its
    remainder at the traced size)."""
    if dims is None:
        shift = shifts[0] if isinstance(shifts, (tuple, list)) and len(shifts) == 1 else shifts
        if isinstance(shift, (tuple, list)):
            raise OpError(f"roll: several shifts {tuple(shift)} need as many dims")
        return roll(x.reshape(-1), shift, 0).reshape(x.shape)
    shifts = tuple(shifts) if isinstance(shifts, (tuple, list)) else (shifts,)
    dims = tuple(dims) if isinstance(dims, (tuple, list)) else (dims,)
    if len(shifts) != len(dims):
        raise OpError(f"roll: {len(shifts)} shifts for {len(dims)} dims; give one shift per dim")
    kw.has_dims("roll", x.ndim)
    for shift, dim in zip(shifts, dims):
        if isinstance(shift, bool) or not isinstance(shift, (int, np.integer)):
            raise OpError(f"roll: shifts must be integers, received {shift!r}")
        x = _roll_one(x, int(shift), kw.axis("roll", dim, x.ndim))
    return x


def _roll_one(x: Tensor, shift: int, axis: int) -> Tensor:
    size = x._data.shape[axis]
    if size and abs(shift) >= size:
        if isinstance(x.shape[axis], SymInt):
            raise OpError(f"roll: a shift of {shift} over axis {axis}, whose size is symbolic "
                          f"({size} when traced), would be kept as {shift % size} at every size; "
                          f"give a shift smaller than the axis")
        shift %= size
    if not size or shift == 0:
        return apply("copy", x)
    return apply("roll", x, shift=shift, axis=axis)
