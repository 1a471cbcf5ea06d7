"""Loss primitives on logits, averaged over every answer (PyTorch's reduction="mean").

Each is one fused, numerically stable primitive; a tracer refuses them by name (a loss is not
part of an inference graph).
"""

from __future__ import annotations

import numpy as np
from scipy.special import expit

from deepsharp.tensors.primitives import primitive


@primitive("mse_loss")
class MseLoss:
    """mean((z - y)^2)"""

    def forward(z, y):
        diff = z - y
        return np.asarray(_mean(diff * diff), dtype=z.dtype), diff

    def backward(grad, diff, z, y):
        g = (grad * (2.0 / diff.size) * diff).astype(z.dtype)
        return g, -g


@primitive("bce_logits_loss")
class BceLogitsLoss:
    """mean(max(z, 0) - z y + log(1 + e^-|z|)): binary cross-entropy of sigmoid(z), never
    evaluating a log of 0 or an exp that overflows."""

    def forward(z, y):
        per = np.maximum(z, 0) - z * y + np.log1p(np.exp(-np.abs(z)))
        return np.asarray(_mean(per), dtype=z.dtype), None

    def backward(grad, saved, z, y):
        g = grad * (expit(z) - y) / z.size
        return g.astype(z.dtype), (-grad * z / z.size).astype(z.dtype)


@primitive("cross_entropy_loss")
class CrossEntropyLoss:
    """mean over rows of -sum(y * log_softmax(z)) along the last axis; y holds class shares."""

    def forward(z, y):
        shifted = z - z.max(axis=-1, keepdims=True)
        log_p = shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))
        rows = z.size // z.shape[-1]
        return np.asarray(-(y * log_p).sum() / rows, dtype=z.dtype), log_p

    def backward(grad, log_p, z, y):
        rows = z.size // z.shape[-1]
        p = np.exp(log_p)
        g = grad * (p * y.sum(axis=-1, keepdims=True) - y) / rows
        return g.astype(z.dtype), (-grad * log_p / rows).astype(z.dtype)


@primitive("cross_entropy_ids_loss")
class CrossEntropyIdsLoss:
    """mean over rows of -log_softmax(z)[id]; ids (int64) have z's shape without the last axis."""

    def forward(z, ids):
        # (the reductions z.max and e.sum call, without their Python frames: the same numbers)
        shifted = z - np.maximum.reduce(z, axis=-1, keepdims=True)
        e = np.exp(shifted)
        total = np.add.reduce(e, axis=-1, keepdims=True)
        # log_softmax at each id only: shifted[id] - log(total), as (shifted - log(total))[id]
        log_total = np.log(total)
        picked = _picked(shifted, ids) - (log_total[:, 0] if z.ndim == 2 else log_total)
        # the backward's softmax is e / total (`_softmax`'s arithmetic on the same values)
        return np.asarray(-_mean(picked), dtype=z.dtype), (e, total)

    def backward(grad, saved, z, ids):
        rows = z.size // z.shape[-1]
        e, total = saved
        p = e / total
        if p.ndim == 2:  # (an index per row: faster than take/put_along_axis, the same values)
            every = np.arange(len(p))
            p[every, ids] -= 1
        else:
            np.put_along_axis(p, ids[..., None], np.take_along_axis(p, ids[..., None], -1) - 1,
                              -1)
        if grad.dtype == p.dtype == z.dtype:  # (grad * p / rows in p's place: the same numbers)
            np.multiply(grad, p, out=p)
            np.true_divide(p, rows, out=p)
            return p, None
        return (grad * p / rows).astype(z.dtype), None


def _mean(a: np.ndarray) -> np.floating:
    """`a.mean()` of a float32 or float64 array, numpy's own arithmetic (the float sum, divided
    as a float64 by the count, back to a's type) without its Python frames; others, and an empty
    array (numpy warns), through `a.mean()`."""
    if a.size and (a.dtype == np.float32 or a.dtype == np.float64):
        total = np.add.reduce(a, axis=None)
        return total.dtype.type(total / np.intp(a.size))
    return a.mean()


def _picked(log_p: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """log_p at each row's id ((rows,) for 2-D log_p, else its shape with a last axis of 1)."""
    if log_p.ndim == 2:
        return log_p[np.arange(len(log_p)), ids]
    return np.take_along_axis(log_p, ids[..., None], axis=-1)
