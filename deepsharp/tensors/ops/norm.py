"""Normalisations of channels-last arrays, fused (one primitive each, one ONNX operator each).

| primitive        | statistics over                              | ONNX                       |
|------------------|----------------------------------------------|----------------------------|
| layer_norm       | the last axis                                | LayerNormalization(-1)     |
| rms_norm         | the last axis (no centring, no shift)        | RMSNormalization(-1)       |
| batch_norm       | every axis but the last (training: 3 results)| (refused: training only)   |
| batch_norm_eval  | given running statistics                     | BatchNormalization         |
| group_norm       | the places and a group's channels per example| GroupNormalization (21)    |

Variances are biased (divided by the count), as every framework normalises; `batch_norm` also
returns the batch's mean and biased variance so a layer can keep running statistics.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from deepsharp.compiled import kernel
from deepsharp.errors import OpError
from deepsharp.tensors.primitives import primitive


def _normalise(x: np.ndarray, axes: Sequence[int], eps: float):
    """(x - mean) / sqrt(var + eps) over `axes`, with the mean, the variance and 1/std."""
    mean = x.mean(axis=tuple(axes), keepdims=True)
    centred = x - mean
    var = np.mean(centred * centred, axis=tuple(axes), keepdims=True)
    rstd = 1.0 / np.sqrt(var + eps)
    return centred * rstd, mean, var, rstd


def _normalise_grad(dxhat: np.ndarray, xhat: np.ndarray, rstd: np.ndarray,
                    axes: Sequence[int]) -> np.ndarray:
    """The gradient through xhat = (x - mean(x)) / std(x): rstd (dxhat - mean(dxhat)
    - xhat mean(dxhat xhat))."""
    axes = tuple(axes)
    return rstd * (dxhat - dxhat.mean(axis=axes, keepdims=True)
                   - xhat * np.mean(dxhat * xhat, axis=axes, keepdims=True))


def _leading(x: np.ndarray) -> tuple[int, ...]:
    return tuple(range(x.ndim - 1))


@primitive("layer_norm", fresh=True)
class LayerNorm:
    """(x - mean) / sqrt(var + eps) * gamma + beta over the last axis.

    The arithmetic of `_normalise` and `_normalise_grad`, in fewer passes and allocations: the
    centred values are scaled in place, the variance is the rows' mean square, and the backward
    pass works in two buffers (1.5x faster at a transformer's (32, 64, 128)); inside
    `compiled()`, one row at a time in numpy's orders of summation (deepsharp._kernels_rows:
    the same bits, 2-3x faster again)."""

    def forward(x, gamma, beta, *, eps):
        if _compiled_layer_norm("layer_norm_forward", x, gamma, beta):
            return _layer_norm_compiled(x, gamma, beta, eps)
        xhat = x - x.mean(axis=-1, keepdims=True)
        square = xhat * xhat
        rstd = square.mean(axis=-1, keepdims=True)
        rstd += eps
        np.sqrt(rstd, out=rstd)
        np.divide(1.0, rstd, out=rstd)
        xhat *= rstd
        y = np.multiply(xhat, gamma, out=square)
        y += beta
        return y, (xhat, rstd)

    def backward(grad, saved, x, gamma, beta, *, eps):
        xhat, rstd = saved
        if (_compiled_layer_norm("layer_norm_backward", grad, gamma, beta)
                and grad.shape == xhat.shape and xhat.dtype == np.float32
                and xhat.flags.c_contiguous):
            return _layer_norm_grad_compiled(grad, xhat, rstd, gamma)
        lead = _leading(x)
        dx = grad * gamma
        work = dx * xhat
        mean_dx = dx.mean(axis=-1, keepdims=True)
        mean_dx_xhat = work.mean(axis=-1, keepdims=True)
        dx -= mean_dx
        np.multiply(xhat, mean_dx_xhat, out=work)
        dx -= work
        dx *= rstd
        np.multiply(grad, xhat, out=work)
        return dx, work.sum(axis=lead), grad.sum(axis=lead)


def _compiled_layer_norm(name: str, x: np.ndarray, gamma: np.ndarray,
                         beta: np.ndarray) -> bool:
    """Whether the compiled layer-norm kernel `name` can run (inside `compiled()`): float32
    arrays of two axes or more, x C-ordered (numpy sums its rows pairwise and its columns in
    order only so) and rows of two values or more."""
    return (kernel(name) is not None and x.ndim >= 2 and x.shape[-1] >= 2
            and x.dtype == gamma.dtype == beta.dtype == np.float32 and x.flags.c_contiguous
            and gamma.shape == beta.shape == x.shape[-1:])


def _layer_norm_compiled(x, gamma, beta, eps):
    rows = x.reshape(-1, x.shape[-1])
    y, xhat = np.empty_like(rows), np.empty_like(rows)
    rstd = np.empty((rows.shape[0], 1), np.float32)
    kernel("layer_norm_forward")(rows, np.ascontiguousarray(gamma), np.ascontiguousarray(beta),
                                 np.float32(eps), y, xhat, rstd)
    return y.reshape(x.shape), (xhat.reshape(x.shape), rstd.reshape(x.shape[:-1] + (1,)))


def _layer_norm_grad_compiled(grad, xhat, rstd, gamma):
    n = grad.shape[-1]
    rows = grad.reshape(-1, n)
    dx, work = np.empty_like(rows), np.empty(n, np.float32)
    dgamma, dbeta = np.empty(n, np.float32), np.empty(n, np.float32)
    kernel("layer_norm_backward")(rows, xhat.reshape(-1, n), rstd.reshape(-1),
                                  np.ascontiguousarray(gamma), dx, work, dgamma, dbeta)
    return dx.reshape(grad.shape), dgamma, dbeta


@primitive("rms_norm")
class RmsNorm:
    """x / sqrt(mean(x^2) + eps) * gamma over the last axis."""

    def forward(x, gamma, *, eps):
        rms = 1.0 / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps)
        xhat = x * rms
        return xhat * gamma, (xhat, rms)

    def backward(grad, saved, x, gamma, *, eps):
        xhat, rms = saved
        dxhat = grad * gamma
        dx = rms * (dxhat - xhat * np.mean(dxhat * xhat, axis=-1, keepdims=True))
        return dx, (grad * xhat).sum(axis=_leading(x))


@primitive("batch_norm", outputs=3)
class BatchNorm:
    """Training: x normalised per channel (the last axis) by the batch's statistics over every
    other axis, then gamma, beta; also returns that mean and biased variance (C,)."""

    def forward(x, gamma, beta, *, eps):
        lead = _leading(x)
        if int(np.prod([x.shape[a] for a in lead])) < 2:
            raise OpError(f"batch_norm: training needs more than one value per channel (as "
                          f"PyTorch's BatchNorm), received a batch of shape {tuple(x.shape)}; a "
                          f"batch of one example is an epoch's last batch when the examples do "
                          f"not fill whole batches (9 examples in batches of 8 leave 1): choose "
                          f"a batch_size that leaves more, or train on more than one example a "
                          f"batch")
        xhat, mean, var, rstd = _normalise(x, lead, eps)
        y = xhat * gamma + beta
        return (y, mean.reshape(-1), var.reshape(-1)), (xhat, rstd, mean)

    def backward(grads, saved, x, gamma, beta, *, eps):
        gy, gmean, gvar = grads
        xhat, rstd, mean = saved
        lead = _leading(x)
        count = x.size // x.shape[-1]
        dx = _normalise_grad(gy * gamma, xhat, rstd, lead)
        dx = dx + (gmean + gvar * 2.0 * (x - mean)) / np.asarray(count, x.dtype)
        return dx, (gy * xhat).sum(axis=lead), gy.sum(axis=lead)


@primitive("batch_norm_eval")
class BatchNormEval:
    """Evaluation: (x - mean) / sqrt(var + eps) * gamma + beta per channel (the last axis), from
    given statistics: ONNX's BatchNormalization, inputs in its order."""

    def forward(x, gamma, beta, mean, var, *, eps):
        rstd = 1.0 / np.sqrt(var + eps)
        return (x - mean) * (rstd * gamma) + beta, rstd

    def backward(grad, rstd, x, gamma, beta, mean, var, *, eps):
        lead = _leading(x)
        centred = x - mean
        g_sum = grad.sum(axis=lead)
        g_centred = (grad * centred).sum(axis=lead)
        return (grad * (rstd * gamma), g_centred * rstd, g_sum, -g_sum * gamma * rstd,
                -0.5 * g_centred * gamma * rstd ** 3)


@primitive("group_norm")
class GroupNorm:
    """x (N, *places, C) normalised per example and group of C / groups channels over the
    places and the group's channels, then gamma, beta per channel. groups = C is an instance
    normalisation."""

    def forward(x, gamma, beta, *, groups, eps):
        c = x.shape[-1]
        if x.ndim < 2 or c % groups:
            raise OpError(f"group_norm: {groups} groups must divide the {c} channels of x "
                          f"(N, *places, C), received {x.shape}")
        grouped = x.reshape(x.shape[0], -1, groups, c // groups)
        xhat, _, _, rstd = _normalise(grouped, (1, 3), eps)
        return xhat.reshape(x.shape) * gamma + beta, (xhat, rstd)

    def backward(grad, saved, x, gamma, beta, *, groups, eps):
        xhat, rstd = saved
        lead = _leading(x)
        dxhat = (grad * gamma).reshape(xhat.shape)
        dx = _normalise_grad(dxhat, xhat, rstd, (1, 3)).reshape(x.shape)
        return dx, (grad * xhat.reshape(x.shape)).sum(axis=lead), grad.sum(axis=lead)
