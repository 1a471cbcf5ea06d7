"""Poolings over the places of channels-last arrays x (N, *places, C).

Windowed pools run one vectorised operation per offset inside the window (a strided slice of the
padded array covering every window at once): never a loop over places or windows. Attributes are
ONNX's: `kernel`, `strides`, `pads` (begins, ends), `auto_pad`, `dilations` (max) and
`count_include_pad` (average). Adaptive pools take the output `sizes` and PyTorch's bins:
bin i of n places over `out` covers [floor(i n / out), ceil((i + 1) n / out)).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from deepsharp.errors import OpError
from deepsharp.tensors.ops.windows import (
    CEIL_NEEDS_PADS, NOTSET, ceil_pads, crop_places, offset_slices, offsets, output_lengths,
    pad_places, resolve_pads,
)
from deepsharp.tensors.primitives import primitive


def _geometry(x, kernel, strides, dilations, pads, auto_pad, ceil_mode=0):
    """The pads as declared (begins, ends), the pads the windows run over (with ceil_mode the
    ends grown to hold the last windows: never counted, as they hold no place) and the output
    lengths."""
    if x.ndim != len(kernel) + 2:
        raise OpError(f"pool: a window of {len(kernel)} place axes needs x (N, *places, C) of "
                      f"rank {len(kernel) + 2}, received {x.shape}")
    pads = resolve_pads(x.shape[1:-1], kernel, strides, dilations, pads, auto_pad)
    for i, k in enumerate(kernel):
        if max(pads[i], pads[len(kernel) + i]) >= (k - 1) * dilations[i] + 1:
            raise OpError(f"pool: pads {pads} on axis {i + 1} reach beyond a whole window of "
                          f"{k}: a window would hold no value")
    declared = pads
    if ceil_mode:
        if auto_pad != NOTSET:
            raise OpError(f"pool: {CEIL_NEEDS_PADS}")
        pads = ceil_pads(x.shape[1:-1], kernel, strides, dilations, pads)
    return declared, pads, output_lengths(x.shape[1:-1], kernel, strides, dilations, pads)


@primitive("max_pool")
class MaxPool:
    """The largest value of every window (borders hold -inf). The gradient goes to the first
    largest value of each window in row-major order, as PyTorch's: the backward pass finds it
    again, offset by offset, rather than the forward pass keeping an index per window."""

    def forward(x, *, kernel, strides, pads, dilations=(), auto_pad=NOTSET, ceil_mode=0):
        dilations = dilations or (1,) * len(kernel)
        _, pads, out = _geometry(x, kernel, strides, dilations, pads, auto_pad, ceil_mode)
        xp = pad_places(x, pads, -np.inf)
        views = [xp[offset_slices(o, out, strides, dilations)] for o in offsets(kernel)]
        best = views[0].copy() if len(views) == 1 else np.maximum(views[0], views[1])
        for view in views[2:]:
            np.maximum(best, view, out=best)
        return best, (xp, best, pads, out)

    def backward(grad, saved, x, *, kernel, strides, pads, dilations=(), auto_pad=NOTSET,
                 ceil_mode=0):
        xp, best, pads, out = saved
        dilations = dilations or (1,) * len(kernel)
        disjoint = all(s >= (k - 1) * d + 1 for k, s, d in zip(kernel, strides, dilations))
        covered = disjoint and all(s == k and d == 1 and k * o == n for k, s, d, o, n in zip(
            kernel, strides, dilations, out, xp.shape[1:-1]))
        gxp = (np.empty if covered else np.zeros)(xp.shape, grad.dtype)
        free = np.ones(best.shape, bool)  # windows whose max is not found yet
        hit = np.empty(best.shape, bool)
        count = int(np.prod(kernel))
        for index, offset in enumerate(offsets(kernel)):
            where = offset_slices(offset, out, strides, dilations)
            np.equal(xp[where], best, out=hit)
            np.logical_and(hit, free, out=hit)
            if index < count - 1:
                np.logical_xor(free, hit, out=free)
            if disjoint:
                np.multiply(grad, hit, out=gxp[where])
            else:
                gxp[where] += grad * hit
        return (crop_places(gxp, pads),)


def _counts(lengths, kernel, strides, pads, out) -> np.ndarray:
    """How many real (unpadded) places each window holds: a product over the axes."""
    nd = len(kernel)
    total = np.ones((), np.int64)
    for i in range(nd):
        starts = np.arange(out[i]) * strides[i] - pads[i]
        count = np.clip(starts + kernel[i], 0, lengths[i]) - np.clip(starts, 0, lengths[i])
        total = np.multiply.outer(total, count)
    return total


@primitive("avg_pool")
class AvgPool:
    """The mean of every window; with `count_include_pad=0` the border's places are not counted
    (each window is divided by how many real places it holds)."""

    def forward(x, *, kernel, strides, pads, count_include_pad, auto_pad=NOTSET, ceil_mode=0):
        ones = (1,) * len(kernel)
        declared, pads, out = _geometry(x, kernel, strides, ones, pads, auto_pad, ceil_mode)
        xp = pad_places(x, pads)
        total = None
        for offset in offsets(kernel):
            view = xp[offset_slices(offset, out, strides, ones)]
            total = view.copy() if total is None else np.add(total, view, out=total)
        divisor = _divisor(x, kernel, strides, pads, out, count_include_pad, declared)
        return total / divisor, (divisor, pads, out, xp.shape)

    def backward(grad, saved, x, *, kernel, strides, pads, count_include_pad, auto_pad=NOTSET,
                 ceil_mode=0):
        divisor, pads, out, padded = saved
        ones = (1,) * len(kernel)
        share = grad / divisor
        gxp = np.zeros(padded, grad.dtype)
        for offset in offsets(kernel):
            gxp[offset_slices(offset, out, strides, ones)] += share
        return (crop_places(gxp, pads),)


def _divisor(x, kernel, strides, pads, out, count_include_pad, declared) -> np.ndarray:
    """Each window's divisor: the places it holds, with count_include_pad the declared padding's
    too (PyTorch's: never the room ceil_mode adds past it)."""
    if not any(pads) or (count_include_pad and pads == declared):
        return np.asarray(int(np.prod(kernel)), x.dtype)
    nd = len(kernel)
    if count_include_pad:  # the declared padding counts as places: the region grows by it
        lengths = [n + declared[i] + declared[nd + i] for i, n in enumerate(x.shape[1:-1])]
        counts = _counts(lengths, kernel, strides, (0,) * nd, out)
    else:
        counts = _counts(x.shape[1:-1], kernel, strides, pads, out)
    return counts.astype(x.dtype)[None, ..., None]


# -- adaptive pools ------------------------------------------------------------------------------
def adaptive_bins(length: int, size: int) -> tuple[np.ndarray, np.ndarray]:
    """PyTorch's bins: starts floor(i n / out), ends ceil((i + 1) n / out)."""
    i = np.arange(size)
    return (i * length) // size, -((-(i + 1) * length) // size)


def adaptive_avg_matrix(length: int, size: int, dtype) -> np.ndarray:
    """(size, length): row i averages bin i."""
    starts, ends = adaptive_bins(length, size)
    places = np.arange(length)
    inside = (places >= starts[:, None]) & (places < ends[:, None])
    return (inside / (ends - starts)[:, None]).astype(dtype)


def adaptive_max_table(length: int, size: int) -> np.ndarray:
    """(size, widest bin): the places of each bin, a shorter bin repeating its last place (a max
    is unchanged by a repeat)."""
    starts, ends = adaptive_bins(length, size)
    widest = int((ends - starts).max())
    return np.minimum(starts[:, None] + np.arange(widest), (ends - 1)[:, None])


def adaptive_avg_flat_matrix(lengths: Sequence[int], sizes: Sequence[int], dtype) -> np.ndarray:
    """(places, bins): a row of all places (row-major) times it gives every bin's mean."""
    matrix = np.ones((1, 1), dtype)
    for n, s in zip(lengths, sizes):
        matrix = np.kron(matrix, adaptive_avg_matrix(n, s, dtype))
    return np.ascontiguousarray(matrix.T)


def adaptive_max_flat_table(lengths: Sequence[int], sizes: Sequence[int]) -> np.ndarray:
    """(bins, places per bin): each bin's places in the row of all places (row-major), shorter
    bins repeating a place."""
    table = np.zeros((1, 1), np.int64)
    for n, s in zip(lengths, sizes):
        axis = adaptive_max_table(n, s)                                  # (s, widest)
        table = (table[:, None, :, None] * n + axis[None, :, None, :]).reshape(
            table.shape[0] * s, table.shape[1] * axis.shape[1])
    return table


def along(x: np.ndarray, matrix: np.ndarray, axis: int) -> np.ndarray:
    """`matrix` (out, n) applied to axis `axis` of x: one batched product."""
    moved = np.moveaxis(x, axis, -2)
    return np.moveaxis(np.matmul(matrix, moved), -2, axis)


def _check_sizes(x: np.ndarray, sizes: Sequence[int], what: str) -> None:
    if x.ndim != len(sizes) + 2:
        raise OpError(f"{what}: {len(sizes)} output sizes need x (N, *places, C) of rank "
                      f"{len(sizes) + 2}, received {x.shape}")


@primitive("adaptive_avg_pool")
class AdaptiveAvgPool:
    """The mean of each of PyTorch's adaptive bins, one product per place axis."""

    def forward(x, *, sizes):
        _check_sizes(x, sizes, "adaptive_avg_pool")
        y = x
        for axis, size in enumerate(sizes, start=1):
            y = along(y, adaptive_avg_matrix(x.shape[axis], size, x.dtype), axis)
        return np.ascontiguousarray(y), None

    def backward(grad, saved, x, *, sizes):
        g = grad
        for axis in reversed(range(1, len(sizes) + 1)):
            g = along(g, adaptive_avg_matrix(x.shape[axis], sizes[axis - 1], grad.dtype).T, axis)
        return (np.ascontiguousarray(g),)


@primitive("adaptive_max_pool")
class AdaptiveMaxPool:
    """The largest value of each of PyTorch's adaptive bins: a gather of every bin's places and a
    max, one place axis after another (a max over a box is a max of maxes along its axes)."""

    def forward(x, *, sizes):
        _check_sizes(x, sizes, "adaptive_max_pool")
        y, saved = x, []
        for axis, size in enumerate(sizes, start=1):
            table = adaptive_max_table(y.shape[axis], size)
            gathered = np.take(y, table, axis=axis)          # (..., size, widest, ...)
            arg = gathered.argmax(axis=axis + 1)
            saved.append((table, arg, y.shape))
            y = np.take_along_axis(gathered, np.expand_dims(arg, axis + 1), axis + 1)
            y = np.squeeze(y, axis + 1)
        return y, saved

    def backward(grad, saved, x, *, sizes):
        g = grad
        for axis in reversed(range(1, len(sizes) + 1)):
            table, arg, shape = saved[axis - 1]
            g = _scatter_max(g, table, arg, shape[axis], axis)
        return (g,)


def _scatter_max(g: np.ndarray, table: np.ndarray, arg: np.ndarray, length: int,
                 axis: int) -> np.ndarray:
    """Send each bin's gradient (along `axis`) back to the place its max came from."""
    size = table.shape[0]
    moved_g = np.moveaxis(g, axis, 0)                           # (size, *rest)
    moved_arg = np.moveaxis(arg, axis, 0)
    source = table[np.arange(size).reshape((size,) + (1,) * (moved_arg.ndim - 1)), moved_arg]
    out = np.zeros((length,) + moved_g.shape[1:], g.dtype)
    rest = np.indices(moved_g.shape[1:], sparse=True)
    np.add.at(out, (source, *rest), moved_g)
    return np.moveaxis(out, 0, axis)
