"""Reductions over a tuple of axes (`axes`, sorted and non-negative), keeping them or not."""

from __future__ import annotations

import numpy as np

from deepsharp.tensors.primitives import primitive


def _restore(grad: np.ndarray, shape: tuple[int, ...], axes: tuple[int, ...], keepdims: int):
    if not keepdims:
        grad = np.expand_dims(grad, axes)
    return np.broadcast_to(grad, shape)


@primitive("sum")
class Sum:
    def forward(a, *, axes, keepdims):
        return a.sum(axis=axes, keepdims=bool(keepdims)), None

    def backward(grad, saved, a, *, axes, keepdims):
        return (_restore(grad, a.shape, axes, keepdims),)


@primitive("mean")
class Mean:
    def forward(a, *, axes, keepdims):
        return a.mean(axis=axes, keepdims=bool(keepdims)), None

    def backward(grad, saved, a, *, axes, keepdims):
        count = int(np.prod([a.shape[i] for i in axes])) if axes else 1
        return (_restore(grad, a.shape, axes, keepdims) / np.asarray(count, grad.dtype),)


def extreme(pick):
    """The largest (np.max) or smallest (np.min) value; ties share the gradient equally
    (PyTorch's amax and amin)."""

    class Extreme:
        def forward(a, *, axes, keepdims):
            out = pick(a, axis=axes, keepdims=True)
            return (out if keepdims else np.squeeze(out, axis=axes)), out

        def backward(grad, out, a, *, axes, keepdims):
            hit = (a == out).astype(grad.dtype)
            hit /= hit.sum(axis=axes, keepdims=True)
            return (_restore(grad, a.shape, axes, keepdims) * hit,)

    return Extreme


primitive("max")(extreme(np.max))
