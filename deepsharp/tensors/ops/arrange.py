"""Tensors built from a tensor's values or shape: tiled copies, the lower or upper triangle, and
a tensor of one value in another's shape."""

from __future__ import annotations

import numpy as np

from deepsharp.tensors.primitives import primitive


@primitive("tile")
class Tile:
    """`reps[i]` copies of the values along each axis i (numpy's tile, PyTorch's repeat);
    `reps` has one entry per axis."""

    def forward(a, *, reps):
        return np.tile(a, reps), None

    def backward(grad, saved, a, *, reps):
        split = [n for pair in zip(reps, a.shape) for n in pair]
        return (grad.reshape(split).sum(axis=tuple(range(0, 2 * a.ndim, 2))),)


@primitive("trilu")
class Trilu:
    """The lower (`upper`=0) or upper triangle of the last two axes, from diagonal `k` (ONNX
    Trilu; PyTorch's tril and triu); the other entries are zero."""

    def forward(a, *, upper, k):
        return (np.triu(a, k) if upper else np.tril(a, k)), None

    def backward(grad, saved, a, *, upper, k):
        return ((np.triu(grad, k) if upper else np.tril(grad, k)),)


@primitive("full_like", differentiable=False)
class FullLike:
    """`value` in a's shape, as dtype `dtype` (numpy's dtype string)."""

    def forward(a, *, value, dtype):
        return np.full(a.shape, value, dtype=np.dtype(dtype)), None
