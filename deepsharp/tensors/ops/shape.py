"""Primitives that move values without computing new ones: reshape, transpose, slice, concat,
expand, gather."""

from __future__ import annotations

import numpy as np

from deepsharp.errors import OpError
from deepsharp.tensors.primitives import primitive, unbroadcast


@primitive("reshape")
class Reshape:
    def forward(a, *, shape):
        try:
            return a.reshape(shape), None
        except ValueError:
            raise OpError(f"reshape: cannot reshape {a.shape} into {shape}") from None

    def backward(grad, saved, a, *, shape):
        return (grad.reshape(a.shape),)


@primitive("transpose")
class Transpose:
    def forward(a, *, perm):
        return a.transpose(perm), None

    def backward(grad, saved, a, *, perm):
        return (grad.transpose(np.argsort(perm)),)


@primitive("slice")
class Slice:
    """a[starts:stops:steps] on every axis (Python slice semantics, all three tuples given).
    `sized` names the axes whose bounds were computed from their size (split, chunk): a trace
    cannot keep them for a symbolic axis."""

    def forward(a, *, starts, stops, steps, sized=()):
        return a[tuple(slice(b, e, s) for b, e, s in zip(starts, stops, steps))], None

    def backward(grad, saved, a, *, starts, stops, steps, sized=()):
        full = np.zeros(a.shape, dtype=grad.dtype)
        full[tuple(slice(b, e, s) for b, e, s in zip(starts, stops, steps))] = grad
        return (full,)


@primitive("concat")
class Concat:
    """Join any number of tensors along `axis` (ONNX Concat)."""

    def forward(*parts, axis):
        return np.concatenate(parts, axis=axis), None

    def backward(grad, saved, *parts, axis):
        bounds = np.cumsum([p.shape[axis] for p in parts])[:-1]
        return tuple(np.split(grad, bounds, axis=axis))


@primitive("expand")
class Expand:
    """Broadcast to `shape` (ONNX Expand)."""

    def forward(a, *, shape):
        return np.broadcast_to(a, np.broadcast_shapes(a.shape, shape)), None

    def backward(grad, saved, a, *, shape):
        return (unbroadcast(grad, a.shape),)


@primitive("gather")
class Gather:
    """Take `indices` (int64, any shape) along `axis` (ONNX Gather; negative indices count from
    the end). The gradient scatters back, summing repeats."""

    def forward(a, indices, *, axis):
        size = a.shape[axis]
        if indices.size and (indices.min() < -size or indices.max() >= size):
            bad = indices[(indices < -size) | (indices >= size)].flat[0]
            raise OpError(f"gather: index {int(bad)} is out of range for axis {axis} of "
                          f"size {size}")
        return np.take(a, indices, axis=axis), None

    def backward(grad, saved, a, indices, *, axis):
        full = np.zeros(a.shape, dtype=grad.dtype)
        moved = np.moveaxis(full, axis, 0)
        idx = np.where(indices < 0, indices + a.shape[axis], indices).reshape(-1)
        g = np.moveaxis(grad, tuple(range(axis, axis + indices.ndim)),
                        tuple(range(indices.ndim)))
        np.add.at(moved, idx, g.reshape((idx.size,) + moved.shape[1:]))
        return full, None
