"""Sliding windows over the place axes of channels-last arrays (N, *places, C).

The arithmetic every windowed primitive shares (convolutions, transposed convolutions, pools):
the border a window rule works out, the output length, a strided view of every window (no copy),
the im2col matrix (one copy, then one BLAS product), and its adjoint col2im (one strided add per
kernel offset, never a loop over places or windows).

Pads are written as ONNX writes them: the begins of every place axis, then the ends.
`auto_pad="SAME_UPPER"` is ONNX's (and TensorFlow's) "same" rule: out = ceil(length / stride),
the total border split with the extra place at the end; the pads are then worked out from the
length of the array at hand, so one record serves every series length.
"""

from __future__ import annotations

import itertools
from typing import Iterator, Sequence

import numpy as np
from numpy.lib.stride_tricks import as_strided

from deepsharp.errors import OpError

NOTSET = "NOTSET"
SAME_UPPER = "SAME_UPPER"


def same_upper_pads(lengths: Sequence[int], kernel: Sequence[int], strides: Sequence[int],
                    dilations: Sequence[int]) -> tuple[int, ...]:
    """The SAME_UPPER border: out = ceil(n / s), total = max((out - 1) s + (k - 1) d + 1 - n, 0),
    begin = total // 2, end = total - begin."""
    begins, ends = [], []
    for n, k, s, d in zip(lengths, kernel, strides, dilations):
        out = -(-n // s)
        total = max((out - 1) * s + (k - 1) * d + 1 - n, 0)
        begins.append(total // 2)
        ends.append(total - total // 2)
    return (*begins, *ends)


def resolve_pads(lengths: Sequence[int], kernel: Sequence[int], strides: Sequence[int],
                 dilations: Sequence[int], pads: Sequence[int], auto_pad: str) -> tuple[int, ...]:
    """The explicit pads (begins, then ends) for places of `lengths`."""
    if auto_pad == SAME_UPPER:
        return same_upper_pads(lengths, kernel, strides, dilations)
    if auto_pad != NOTSET:
        raise OpError(f"auto_pad must be {NOTSET!r} or {SAME_UPPER!r}, received {auto_pad!r}")
    if len(pads) != 2 * len(lengths):
        raise OpError(f"pads must hold a begin and an end for each of {len(lengths)} place axes, "
                      f"received {tuple(pads)}")
    return tuple(int(p) for p in pads)


def output_lengths(lengths: Sequence[int], kernel: Sequence[int], strides: Sequence[int],
                   dilations: Sequence[int], pads: Sequence[int]) -> tuple[int, ...]:
    """floor((n + begin + end - (k - 1) d - 1) / s) + 1 on every place axis."""
    nd = len(lengths)
    out = []
    for i, (n, k, s, d) in enumerate(zip(lengths, kernel, strides, dilations)):
        span = n + pads[i] + pads[nd + i] - (k - 1) * d - 1
        if span < 0:
            raise OpError(f"a window of {k} places (dilation {d}) does not fit in {n} places "
                          f"padded by {pads[i]} and {pads[nd + i]}")
        out.append(span // s + 1)
    return tuple(out)


# ceil_mode counts windows past explicit pads; PyTorch's pools have no padding="same"
CEIL_NEEDS_PADS = ("ceil_mode takes an explicit padding (PyTorch's pools have no padding='same'): "
                   "give padding as numbers, or ceil_mode=False")


def ceil_pads(lengths: Sequence[int], kernel: Sequence[int], strides: Sequence[int],
              dilations: Sequence[int], pads: Sequence[int]) -> tuple[int, ...]:
    """`pads` with the ends grown so the windows reach over the end: PyTorch's ceil_mode, ceil((n
    + begin + end - (k - 1) d - 1) / s) + 1 windows, less the last one where it would start past
    the begin padding and the places (inside the end padding or beyond)."""
    nd, ends = len(lengths), list(pads[len(lengths):])
    for i, (n, k, s, d) in enumerate(zip(lengths, kernel, strides, dilations)):
        span = n + pads[i] + pads[nd + i] - (k - 1) * d - 1
        if span < 0:
            continue  # (output_lengths says why)
        out = -(-span // s) + 1
        if (out - 1) * s >= n + pads[i]:
            out -= 1
        ends[i] += max(0, (out - 1) * s + (k - 1) * d + 1 - (n + pads[i] + pads[nd + i]))
    return tuple(pads[:nd]) + tuple(ends)


def pad_places(x: np.ndarray, pads: Sequence[int], value: float = 0.0) -> np.ndarray:
    """x (N, *places, C) with its place axes padded by `value` (x itself when no pad)."""
    nd = x.ndim - 2
    if not any(pads):
        return x
    widths = [(0, 0)] + [(pads[i], pads[nd + i]) for i in range(nd)] + [(0, 0)]
    return np.pad(x, widths, constant_values=value)


def windows(xp: np.ndarray, out: Sequence[int], kernel: Sequence[int], strides: Sequence[int],
            dilations: Sequence[int]) -> np.ndarray:
    """A read-only view (N, *out, *kernel, C) of every window of the padded array xp."""
    nd = len(out)
    s = xp.strides
    shape = (xp.shape[0], *out, *kernel, xp.shape[-1])
    steps = (s[0], *(s[1 + i] * strides[i] for i in range(nd)),
             *(s[1 + i] * dilations[i] for i in range(nd)), s[-1])
    return as_strided(xp, shape, steps, writeable=False)


def offsets(kernel: Sequence[int]) -> Iterator[tuple[int, ...]]:
    """Every offset inside a window, in row-major order (ONNX's and PyTorch's)."""
    return itertools.product(*(range(k) for k in kernel))


def offset_slices(offset: Sequence[int], out: Sequence[int], strides: Sequence[int],
                  dilations: Sequence[int]) -> tuple[slice, ...]:
    """The index of the places one kernel offset reads in every window, as strided slices."""
    return (slice(None),) + tuple(
        slice(o * d, o * d + (n - 1) * s + 1, s)
        for o, n, s, d in zip(offset, out, strides, dilations)) + (slice(None),)


def im2col(xp: np.ndarray, out: Sequence[int], kernel: Sequence[int], strides: Sequence[int],
           dilations: Sequence[int], ones: bool = False) -> np.ndarray:
    """The windows as a matrix (N * prod(out), prod(kernel) * C): one copy. With `ones`, a last
    column of ones: the product by a kernel with the bias as its last row adds the bias, and the
    gradient of that row (the column's product with the output's gradient) is the bias's."""
    n, channels = xp.shape[0], xp.shape[-1]
    rows = n * int(np.prod(out, dtype=np.int64))
    width = int(np.prod(kernel, dtype=np.int64)) * channels
    if not ones and channels >= _FEW_CHANNELS:
        return windows(xp, out, kernel, strides, dilations).reshape(rows, width)
    cols = np.empty((rows, width + int(ones)), xp.dtype)
    if ones:
        cols[:, width] = 1
    # the matrix's rows seen as (N, *out) and its columns as (*kernel, C): views, no copy
    item, row = cols.itemsize, cols.shape[1] * cols.itemsize
    row_steps = [row]
    for size in reversed(out[1:]):
        row_steps.insert(0, row_steps[0] * size)
    row_steps.insert(0, row_steps[0] * out[0])
    if channels >= _FEW_CHANNELS:
        view = windows(xp, out, kernel, strides, dilations)
        column_steps = [item]
        for size in reversed(view.shape[2 + len(out):]):
            column_steps.insert(0, column_steps[0] * size)
        np.copyto(as_strided(cols, view.shape, (*row_steps, *column_steps)), view)
        return cols
    # few channels: a copy per kernel offset moves whole runs of places, not single values
    for index, offset in enumerate(offsets(kernel)):
        block = cols[:, index * channels:(index + 1) * channels]
        target = as_strided(block, (n, *out, channels), (*row_steps, item))
        np.copyto(target, xp[offset_slices(offset, out, strides, dilations)])
    return cols


# below this many channels, im2col copies one kernel offset at a time (measured: 2x faster for a
# first convolution of one channel, 2x slower for 32 channels)
_FEW_CHANNELS = 8


def col2im(cols: np.ndarray, padded: Sequence[int], out: Sequence[int], kernel: Sequence[int],
           strides: Sequence[int], dilations: Sequence[int]) -> np.ndarray:
    """The adjoint of im2col: cols (N * prod(out), prod(kernel) * C) summed back into an array
    of shape `padded` (N, *places, C), one strided add per kernel offset."""
    n, channels = padded[0], padded[-1]
    blocks = cols.reshape(n, *out, int(np.prod(kernel, dtype=np.int64)), channels)
    result = np.zeros(padded, dtype=cols.dtype)
    for index, offset in enumerate(offsets(kernel)):
        result[offset_slices(offset, out, strides, dilations)] += blocks[..., index, :]
    return result


def crop_places(x: np.ndarray, pads: Sequence[int]) -> np.ndarray:
    """The inverse of pad_places: the places inside the border."""
    nd = x.ndim - 2
    if not any(pads):
        return x
    return x[(slice(None),) + tuple(slice(pads[i], x.shape[1 + i] - pads[nd + i])
                                    for i in range(nd)) + (slice(None),)]
