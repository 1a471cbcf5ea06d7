"""Pad and resize: primitives that move values to new places.

`pad` pads every axis (ONNX's Pad: `pads` holds the begins of all axes, then the ends) with a
constant, a reflection (the border mirrored, its edge not repeated) or the edge repeated.
`resize` interpolates the places of a channels-last x (N, *places, C) to `sizes`, one linear map
per place axis, as PyTorch's `interpolate`: "nearest" takes place floor(o n / out); "linear"
(bilinear on an image) takes the half-pixel centres, clamped at 0, or with `align_corners`
o (n - 1) / (out - 1).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from deepsharp.errors import OpError
from deepsharp.tensors.ops.pool import along
from deepsharp.tensors.primitives import primitive

PAD_MODES = ("constant", "reflect", "edge")


def _widths(x: np.ndarray, pads: Sequence[int], mode: str) -> list[tuple[int, int]]:
    if len(pads) != 2 * x.ndim or any(p < 0 for p in pads):
        raise OpError(f"pad: pads must be {2 * x.ndim} non-negative numbers (begins, then ends) "
                      f"for x of shape {x.shape}, received {tuple(pads)}")
    if mode not in PAD_MODES:
        raise OpError(f"pad: mode must be one of {PAD_MODES}, received {mode!r}")
    widths = [(pads[i], pads[x.ndim + i]) for i in range(x.ndim)]
    if mode == "reflect":
        for axis, (b, e) in enumerate(widths):
            if max(b, e) >= x.shape[axis] and (b or e):
                raise OpError(f"pad: a reflection of {max(b, e)} places needs more than "
                              f"{x.shape[axis]} places on axis {axis}")
    return widths


@primitive("pad")
class Pad:
    """x padded on every axis by `pads` (begins, then ends) in `mode`, with `value` for
    "constant"."""

    def forward(x, *, pads, mode="constant", value=0.0):
        widths = _widths(x, pads, mode)
        if mode == "constant":
            return np.pad(x, widths, constant_values=np.asarray(value, x.dtype)), None
        return np.pad(x, widths, mode=mode), None

    def backward(grad, saved, x, *, pads, mode="constant", value=0.0):
        widths = [(pads[i], pads[x.ndim + i]) for i in range(x.ndim)]
        g = grad
        for axis, (b, e) in enumerate(widths):
            if not (b or e):
                continue
            n = x.shape[axis]
            moved = np.moveaxis(g, axis, 0)
            inner = moved[b:b + n].copy()
            if mode != "constant":
                sources = np.pad(np.arange(n), (b, e), mode=mode)
                border = np.r_[0:b, b + n:b + n + e]
                np.add.at(inner, sources[border], moved[border])
            g = np.moveaxis(inner, 0, axis)
        return (np.ascontiguousarray(g),)


RESIZE_MODES = ("nearest", "linear")


def resize_matrix(length: int, size: int, mode: str, align_corners: int, dtype) -> np.ndarray:
    """(size, length): row o holds the weights output place o takes from the input places."""
    out = np.arange(size)
    matrix = np.zeros((size, length), np.float64)
    if mode == "nearest":
        matrix[out, (out * length) // size] = 1.0
        return matrix.astype(dtype)
    if align_corners:
        source = out * ((length - 1) / (size - 1)) if size > 1 else np.zeros(size)
    else:
        source = np.maximum((out + 0.5) * (length / size) - 0.5, 0.0)
    low = np.minimum(np.floor(source).astype(np.int64), length - 1)
    high = np.minimum(low + 1, length - 1)
    weight = source - low
    np.add.at(matrix, (out, low), 1.0 - weight)
    np.add.at(matrix, (out, high), weight)
    return matrix.astype(dtype)


@primitive("resize")
class Resize:
    """x (N, *places, C) interpolated to places of `sizes` (see the module's rule)."""

    def forward(x, *, sizes, mode, align_corners=0):
        if x.ndim != len(sizes) + 2 or mode not in RESIZE_MODES:
            raise OpError(f"resize: needs x (N, *places, C) with one size per place axis and a "
                          f"mode among {RESIZE_MODES}, received x {x.shape}, sizes {tuple(sizes)}, "
                          f"mode {mode!r}")
        y = x
        for axis, size in enumerate(sizes, start=1):
            y = along(y, resize_matrix(x.shape[axis], size, mode, align_corners, x.dtype), axis)
        return np.ascontiguousarray(y), None

    def backward(grad, saved, x, *, sizes, mode, align_corners=0):
        g = grad
        for axis in reversed(range(1, len(sizes) + 1)):
            matrix = resize_matrix(x.shape[axis], sizes[axis - 1], mode, align_corners, grad.dtype)
            g = along(g, matrix.T, axis)
        return (np.ascontiguousarray(g),)
