"""Sorting along one axis: the k largest (or smallest) entries, and a whole sort. Equal entries
keep their order (the lower index first), as ONNX Runtime's TopK does; the gradient goes back to
the entries chosen."""

from __future__ import annotations

import numpy as np

from deepsharp.tensors.primitives import primitive


def order(a: np.ndarray, axis: int, descending: bool) -> np.ndarray:
    """The stable sorting permutation of `a` along `axis`."""
    if descending:
        key = ~a if a.dtype == np.bool_ else -a
        return np.argsort(key, axis=axis, kind="stable")
    return np.argsort(a, axis=axis, kind="stable")


def _scatter(grads, a, index, axis):
    full = np.zeros(a.shape, grads[0].dtype)
    np.put_along_axis(full, index, grads[0], axis)
    return (full,)


@primitive("topk", outputs=2)
class TopK:
    """(values, int64 indices) of the `k` largest entries along `axis` (the smallest when
    `largest` is 0), in sorted order."""

    def forward(a, *, k, axis, largest):
        index = np.take(order(a, axis, bool(largest)), np.arange(k), axis=axis).astype(np.int64)
        return (np.take_along_axis(a, index, axis), index), index

    def backward(grads, index, a, *, k, axis, largest):
        return _scatter(grads, a, index, axis)


@primitive("sort", outputs=2)
class Sort:
    """(values, int64 indices) sorted along `axis`, ascending unless `descending`."""

    def forward(a, *, axis, descending):
        index = order(a, axis, bool(descending)).astype(np.int64)
        return (np.take_along_axis(a, index, axis), index), index

    def backward(grads, index, a, *, axis, descending):
        return _scatter(grads, a, index, axis)
