"""More elementwise functions: sign, log1p, rsqrt, and clamp with tensor or number bounds."""

from __future__ import annotations

import numpy as np

from deepsharp.tensors.ops.elementwise import sign_of
from deepsharp.tensors.primitives import primitive, unbroadcast


@primitive("sign")
class Sign:
    """-1, 0 or 1, and 0 at NaN (a zero gradient everywhere), as PyTorch's."""

    def forward(a):
        return sign_of(a), None

    def backward(grad, saved, a):
        return (np.zeros(a.shape, grad.dtype),)


@primitive("log1p")
class Log1p:
    def forward(a):
        return np.log1p(a), None

    def backward(grad, saved, a):
        return (grad / (1 + a),)


@primitive("rsqrt")
class Rsqrt:
    """1 / sqrt(a)."""

    def forward(a):
        out = 1 / np.sqrt(a)
        return out, out

    def backward(grad, out, a):
        return (grad * (-0.5) * out ** 3,)


@primitive("clamp")
class Clamp:
    """min(max(a, low), high), either bound optional (`has_low`, `has_high` say which inputs
    follow `a`). Gradients as PyTorch's clamp: `a` gets it where low <= a <= high; `low` where
    a < low (and low < high); `high` where a > high (or high < low)."""

    def forward(a, *bounds, has_low, has_high):
        out = a
        low, high = _bounds(bounds, has_low, has_high)
        if low is not None:
            out = np.maximum(out, low)
        if high is not None:
            out = np.minimum(out, high)
        return out, None

    def backward(grad, saved, a, *bounds, has_low, has_high):
        low, high = _bounds(bounds, has_low, has_high)
        keep = np.ones(a.shape, bool)
        grads = []
        if low is not None:
            keep = keep & (a >= low)
            into_low = a < low if high is None else (a < low) & (low < high)
            grads.append(unbroadcast(np.where(into_low, grad, 0).astype(grad.dtype), low.shape))
        if high is not None:
            keep = keep & (a <= high)
            into_high = a > high if low is None else (a > high) | (high < low)
            grads.append(unbroadcast(np.where(into_high, grad, 0).astype(grad.dtype), high.shape))
        return (unbroadcast(np.where(keep, grad, 0).astype(grad.dtype), a.shape), *grads)


def _bounds(bounds, has_low, has_high):
    bounds = list(bounds)
    low = bounds.pop(0) if has_low else None
    high = bounds.pop(0) if has_high else None
    return low, high
