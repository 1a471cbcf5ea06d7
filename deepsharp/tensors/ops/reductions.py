"""More reductions over a tuple of axes (`axes`, sorted and non-negative; `keepdims` 0 or 1):
min, prod, var, logsumexp, all, any; and over one `axis`: the value and index of the largest or
smallest entry (PyTorch's `x.max(dim)`), argmax and argmin.
"""

from __future__ import annotations

import numpy as np

from deepsharp.tensors.ops.reduce import _restore, extreme
from deepsharp.tensors.primitives import primitive


def _count(shape: tuple[int, ...], axes: tuple[int, ...]) -> int:
    return int(np.prod([shape[i] for i in axes])) if axes else 1


primitive("min")(extreme(np.min))


def _selecting(pick):
    """(values, indices) of the entry `pick` (np.argmax or np.argmin) chooses along `axis`: the
    first of equal entries; the gradient goes to that entry alone (PyTorch's max(dim))."""

    class Selecting:
        def forward(a, *, axis, keepdims):
            index = pick(a, axis=axis, keepdims=True)
            values = np.take_along_axis(a, index, axis=axis)
            if not keepdims:
                values, index = np.squeeze(values, axis), np.squeeze(index, axis)
            return (values, index.astype(np.int64)), None

        def backward(grads, saved, a, *, axis, keepdims):
            grad, _ = grads
            index = pick(a, axis=axis, keepdims=True)
            full = np.zeros(a.shape, grad.dtype)
            np.put_along_axis(full, index, grad if keepdims else np.expand_dims(grad, axis), axis)
            return (full,)

    return Selecting


primitive("max_along", outputs=2)(_selecting(np.argmax))
primitive("min_along", outputs=2)(_selecting(np.argmin))


def _arg(pick):
    """The index of the entry `pick` chooses along `axis` (the first of equal entries), or in the
    flattened values when `flat` (keepdims then keeps every axis, of size 1)."""

    class Arg:
        def forward(a, *, axis, flat, keepdims):
            if flat:
                index = np.asarray(pick(a.reshape(-1)), np.int64)
                return (index.reshape((1,) * a.ndim) if keepdims else index), None
            return pick(a, axis=axis, keepdims=bool(keepdims)).astype(np.int64), None

    return Arg


primitive("argmax", differentiable=False)(_arg(np.argmax))
primitive("argmin", differentiable=False)(_arg(np.argmin))


@primitive("prod")
class Prod:
    """The product; each entry's gradient is the product of the others (zeros included)."""

    def forward(a, *, axes, keepdims):
        return a.prod(axis=axes, keepdims=bool(keepdims)), None

    def backward(grad, saved, a, *, axes, keepdims):
        if a.size == 0:
            return (np.zeros(a.shape, grad.dtype),)
        rest = tuple(i for i in range(a.ndim) if i not in axes)
        moved = np.transpose(a, rest + axes)
        flat = moved.reshape(moved.shape[:len(rest)] + (-1,))
        ones = np.ones(flat.shape[:-1] + (1,), a.dtype)
        before = np.cumprod(np.concatenate([ones, flat[..., :-1]], axis=-1), axis=-1)
        after = np.cumprod(np.concatenate([ones, flat[..., :0:-1]], axis=-1), axis=-1)[..., ::-1]
        others = (before * after).reshape(moved.shape).transpose(np.argsort(rest + axes))
        return (_restore(grad, a.shape, axes, keepdims) * others,)


@primitive("var")
class Var:
    """sum((a - mean)^2) / max(0, n - correction) over the axes (PyTorch's var, correction=1
    by default there; as there, no fewer than zero degrees of freedom: inf or NaN, never a
    negative variance)."""

    def forward(a, *, axes, keepdims, correction):
        with np.errstate(divide="ignore", invalid="ignore"):
            mean = a.mean(axis=axes, keepdims=True)
            total = ((a - mean) ** 2).sum(axis=axes, keepdims=bool(keepdims))
            return total / _freedom(a, axes, correction), None

    def backward(grad, saved, a, *, axes, keepdims, correction):
        with np.errstate(divide="ignore", invalid="ignore"):
            centred = a - a.mean(axis=axes, keepdims=True)
            # (PyTorch's backward divides by n - correction unclamped: 0 gives inf)
            scale = np.asarray(2.0, grad.dtype) / np.asarray(
                _count(a.shape, axes) - correction, grad.dtype)
            return (_restore(grad, a.shape, axes, keepdims) * centred * scale,)


def _freedom(a: np.ndarray, axes: tuple[int, ...], correction: float) -> np.ndarray:
    return np.asarray(max(0.0, _count(a.shape, axes) - correction), a.dtype)


@primitive("logsumexp")
class LogSumExp:
    """log(sum(exp(a))) over the axes, computed from the largest entry (stable); over empty
    axes -inf (the log of an empty sum), as PyTorch."""

    def forward(a, *, axes, keepdims):
        top = a.max(axis=axes, keepdims=True, initial=-np.inf)
        top = np.where(np.isfinite(top), top, 0)
        with np.errstate(divide="ignore"):
            out = np.log(np.exp(a - top).sum(axis=axes, keepdims=True)) + top
        return (out if keepdims else np.squeeze(out, axis=axes)), out

    def backward(grad, out, a, *, axes, keepdims):
        return (_restore(grad, a.shape, axes, keepdims) * np.exp(a - out),)


def _logical(fn):
    class Logical:
        def forward(a, *, axes, keepdims):
            return fn(a, axis=axes, keepdims=bool(keepdims)), None

    return Logical


primitive("all", differentiable=False)(_logical(np.all))
primitive("any", differentiable=False)(_logical(np.any))


@primitive("cumsum")
class CumSum:
    """Running sums along `axis` (bool and int32 values sum as int64, as PyTorch's)."""

    def forward(a, *, axis):
        return np.cumsum(a, axis=axis, dtype=np.int64 if a.dtype.kind in "biu" else None), None

    def backward(grad, saved, a, *, axis):
        return (np.flip(np.cumsum(np.flip(grad, axis), axis=axis), axis),)


@primitive("cumprod")
class CumProd:
    """Running products along `axis`. The gradient of entry k, prod(a[:k]) * S[k] with
    S[k] = g[k] + a[k+1] * S[k+1], holds with zeros among the values."""

    def forward(a, *, axis):
        return np.cumprod(a, axis=axis, dtype=np.int64 if a.dtype.kind in "biu" else None), None

    def backward(grad, saved, a, *, axis):
        if a.size == 0:
            return (np.zeros(a.shape, grad.dtype),)
        x, g = np.moveaxis(a, axis, 0), np.moveaxis(grad, axis, 0)
        before = np.cumprod(np.concatenate([np.ones_like(x[:1]), x[:-1]]), axis=0)
        running = np.empty_like(g)
        running[-1] = g[-1]
        for k in range(len(g) - 2, -1, -1):
            running[k] = g[k] + x[k + 1] * running[k + 1]
        return (np.moveaxis(before * running, 0, axis),)
