"""Gathers by index arrays: along one axis elementwise (PyTorch's gather, ONNX GatherElements), by
several index arrays at once (numpy's `x[i, j]`, ONNX GatherND), and one-hot codes.

Negative indices count from the end; an index out of range is an error naming it. Gradients
scatter back, summing repeats.
"""

from __future__ import annotations

import numpy as np

from deepsharp.errors import OpError
from deepsharp.tensors.primitives import primitive, unbroadcast


def check_range(op: str, indices: np.ndarray, size: int, where: str) -> None:
    if indices.dtype.kind not in "iu":
        raise OpError(f"{op}: indices must be integers, received {indices.dtype}")
    if indices.size and (indices.min() < -size or indices.max() >= size):
        bad = indices[(indices < -size) | (indices >= size)].flat[0]
        raise OpError(f"{op}: index {int(bad)} is out of range for {where} of size {size}")


def check_indices(op: str, a: np.ndarray, indices) -> None:
    """Integer index arrays into a's first axes: in range, and broadcastable together."""
    for axis, index in enumerate(indices):
        check_range(op, index, a.shape[axis], f"axis {axis}")
    try:
        np.broadcast_shapes(*(index.shape for index in indices))
    except ValueError:
        shapes = ", ".join(str(index.shape) for index in indices)
        raise OpError(f"{op}: index arrays of shapes {shapes} cannot be broadcast together") \
            from None


def check_scatter(op: str, a: np.ndarray, index: np.ndarray, src: np.ndarray, axis: int) -> None:
    """A scatter's operands as PyTorch takes them: index of a's rank and src's, no larger than
    src on any axis nor than a off `axis`, its values inside a's `axis`."""
    if index.ndim != a.ndim or src.ndim != a.ndim or any(
            n > s or (d != axis and n > m)
            for d, (n, m, s) in enumerate(zip(index.shape, a.shape, src.shape))):
        raise OpError(f"{op}: the index {index.shape} must have the rank of the input {a.shape} "
                      f"and of src {src.shape}, no larger a size than src's on any axis, nor "
                      f"than the input's on the axes other than {axis}")
    check_range(op, index, a.shape[axis], f"axis {axis}")


def _along(index: np.ndarray, axis: int) -> tuple[np.ndarray, ...]:
    """The fancy index picking a[..., index[...], ...] at every position of `index`."""
    grid = list(np.ogrid[tuple(slice(n) for n in index.shape)])
    grid[axis] = index
    return tuple(grid)


@primitive("take_along_axis")
class TakeAlongAxis:
    """out[..., i, ...] = a[..., index[..., i, ...], ...] along `axis`, PyTorch's gather: the
    index has a's rank and no larger a size than a's on the other axes."""

    def forward(a, index, *, axis):
        if index.ndim != a.ndim or any(n > m for d, (n, m) in enumerate(zip(index.shape, a.shape))
                                       if d != axis):
            raise OpError(f"gather: the index {index.shape} must have the rank of the input "
                          f"{a.shape} and no larger a size on the axes other than {axis}")
        check_range("gather", index, a.shape[axis], f"axis {axis}")
        return a[_along(index, axis)], None

    def backward(grad, saved, a, index, *, axis):
        full = np.zeros(a.shape, grad.dtype)
        np.add.at(full, _along(index, axis), grad)
        return full, None


@primitive("index_nd")
class IndexND:
    """a[i0, i1, ..., ik-1]: k integer index arrays (broadcast together) into a's first k axes;
    the result is their broadcast shape, then a's remaining axes (ONNX GatherND)."""

    def forward(a, *indices):
        check_indices("indexing", a, indices)
        return a[tuple(indices)], None

    def backward(grad, saved, a, *indices):
        full = np.zeros(a.shape, grad.dtype)
        np.add.at(full, tuple(indices), grad)
        return (full,) + (None,) * len(indices)


@primitive("one_hot", differentiable=False)
class OneHot:
    """ids (int64, any shape) -> ids.shape + (depth,) int64, 1 at each id (PyTorch's one_hot)."""

    def forward(ids, *, depth):
        if ids.dtype.kind not in "iu":
            raise OpError(f"one_hot: ids must be integers, received {ids.dtype}")
        if ids.size and (ids.min() < 0 or ids.max() >= depth):
            bad = ids[(ids < 0) | (ids >= depth)].flat[0]
            raise OpError(f"one_hot: class {int(bad)} is outside 0..{depth - 1} "
                          f"(num_classes={depth})")
        return (ids[..., None] == np.arange(depth)).astype(np.int64), None


# scatter_reduce's reductions (a record's attributes are numbers): PyTorch's names
SCATTER_REDUCTIONS = {"none": 0, "sum": 1, "mean": 2, "amax": 3, "amin": 4}
_NONE, SUM, _MEAN, _AMAX, _AMIN = range(5)


def identity(reduce: int, dtype: np.dtype):
    """What a position holds before its first scatter when the input's own value is left out."""
    if reduce in (_AMAX, _AMIN):
        if dtype.kind == "f":
            return -np.inf if reduce == _AMAX else np.inf
        info = np.iinfo(dtype) if dtype.kind in "iu" else None
        if info is None:
            return reduce == _AMIN  # bool: max starts at False, min at True
        return info.min if reduce == _AMAX else info.max
    return 0


def _scatter_parts(a, index, src, axis):
    """The fancy index of every scattered position, and src read over index's shape."""
    return _along(index, axis), src[tuple(slice(n) for n in index.shape)]


def _received(shape, along) -> np.ndarray:
    """Which positions receive at least one scattered value."""
    received = np.zeros(shape, bool)
    received[along] = True
    return received


def _counts(shape, along, received, include_self, dtype) -> np.ndarray:
    """A mean's divisor at every position: the values scattered there (and the input's own with
    include_self); 1 where nothing is, so the input's value stays."""
    counts = np.zeros(shape, dtype)
    np.add.at(counts, along, 1)
    return np.where(received, counts + bool(include_self), 1).astype(dtype)


@primitive("scatter_reduce")
class ScatterReduce:
    """PyTorch's scatter, scatter_add and scatter_reduce along `axis`: at every position of
    `index`, src[..., i, ...] goes to out[..., index[..., i, ...], ...], combined by `reduce`
    (none: the last write wins; sum: repeats add up; mean; amax; amin), with the input's own
    value when `include_self`. src is read over index's shape; positions no index names keep the
    input's value. Integer means floor, as PyTorch's.

    Gradients, as PyTorch's: none and sum pass the gradient to what was written (src gathered by
    index, zero past index's shape; the input where its value is kept); mean divides it by each
    position's count; amax and amin share it evenly among every value equal to the result."""

    def forward(a, index, src, *, axis, reduce, include_self):
        check_scatter("scatter", a, index, src, axis)
        along, part = _scatter_parts(a, index, src, axis)
        out = a.copy()
        if reduce == _NONE:
            out[along] = part
            return out, None
        received = None if include_self else _received(a.shape, along)
        if received is not None:
            out[received] = identity(reduce, a.dtype)
        ufunc = {SUM: np.add, _MEAN: np.add, _AMAX: np.maximum, _AMIN: np.minimum}[reduce]
        ufunc.at(out, along, part)
        if reduce == _MEAN:
            received = _received(a.shape, along) if received is None else received
            counts = _counts(a.shape, along, received, include_self, a.dtype)
            out = out / counts if a.dtype.kind == "f" else out // counts
        return out, (out if reduce in (_AMAX, _AMIN) else None)  # (the ties' rule reads it)

    def backward(grad, out, a, index, src, *, axis, reduce, include_self):
        along, part = _scatter_parts(a, index, src, axis)
        # where the input's own value counts (None: everywhere)
        kept = None if include_self and reduce != _NONE else ~_received(a.shape, along)
        if reduce == _MEAN:
            received = _received(a.shape, along)
            grad = grad / _counts(a.shape, along, received, include_self, grad.dtype)
        if reduce in (_AMAX, _AMIN):
            # PyTorch's rule, to the letter: the input's value is counted among the ties where it
            # equals the result even when include_self=False leaves it out (it then gets none)
            self_hit, src_hit = a == out, part == out[along]
            counts = self_hit.astype(grad.dtype)
            np.add.at(counts, along, src_hit.astype(grad.dtype))
            grad = np.divide(grad, counts, out=np.zeros_like(grad), where=counts > 0)
            ga = np.where(self_hit if kept is None else self_hit & kept, grad, 0)
            gpart = np.where(src_hit, grad[along], 0)
        else:
            ga = grad if kept is None else np.where(kept, grad, 0)
            gpart = grad[along]
        gsrc = np.zeros(src.shape, grad.dtype)
        gsrc[tuple(slice(n) for n in index.shape)] = gpart
        return ga.astype(grad.dtype, copy=False), None, gsrc


@primitive("index_put")
class IndexPut:
    """a with values written at a[i0, i1, ..., ik-1] (k integer index arrays broadcast together
    into a's first k axes; values broadcast to the region they pick), PyTorch's index_put and
    numpy's `a[i, j] = v`: where the indices repeat a position the last write wins, or with
    `accumulate` every write adds up. Gradients: a where not written over (all of it when
    accumulating); values the gradient of every position written, summed over what they were
    broadcast along."""

    def forward(a, values, *indices, accumulate):
        check_indices("index_put", a, indices)
        region = a[tuple(indices)].shape
        try:
            spread = np.broadcast_to(values, region)
        except ValueError:
            raise OpError(f"index_put: values of shape {values.shape} cannot be broadcast to the "
                          f"{region} positions the indices pick") from None
        out = a.copy()
        if accumulate:
            np.add.at(out, tuple(indices), spread)
        else:
            out[tuple(indices)] = spread
        return out, None

    def backward(grad, saved, a, values, *indices, accumulate):
        ga = grad
        if not accumulate:
            ga = grad.copy()
            ga[tuple(indices)] = 0
        return (ga, unbroadcast(grad[tuple(indices)], values.shape)) + (None,) * len(indices)


@primitive("unique", outputs=3)
class Unique:
    """(distinct values ascending, each entry's place among them, their counts) of a, or of its
    slices along `axis` (numpy's unique). No backward rule, as PyTorch has none: the values
    require gradients when a does, and a backward through them is refused, naming unique."""

    def forward(a, *, axis):
        found, inverse, counts = np.unique(a, return_inverse=True, return_counts=True, axis=axis)
        if axis is None:
            inverse = inverse.reshape(a.shape)
        return (found.astype(a.dtype), inverse.astype(np.int64), counts.astype(np.int64)), None
