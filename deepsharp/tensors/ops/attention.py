"""Scaled dot-product attention as one primitive.

    out = apply("attention", q, k, v[, key_mask], scale=1 / sqrt(d), causal=0)

q (..., Tq, d), k (..., Tk, d), v (..., Tk, dv), the leading axes shared (batch, heads);
key_mask (batch, Tk) bool says which keys a query may look at (True: a real step). The scores
q k^T are scaled by `scale`; a key the mask leaves out (or, with `causal`, a key after the query:
key j is seen by query i when j <= i) is put far below the others (-1e9 added, as the ONNX graph
adds it), the softmax is taken over the keys, and the values are weighted by it. A query with no
key left to look at gives zeros.

One primitive rather than a composition because it is measurably faster: forward and backward at
(32, 4, 64, 32), 11.4 ms against 14.4 ms for the same primitives composed (matmul, transpose,
mul, softmax, matmul), 11.0 against 16.7 ms with a key mask (no intermediate records, one saved
matrix of weights, the softmax in place). Its record holds everything the tracer needs to write
the unfused nodes: the three operands, the mask, `scale` and `causal`.
"""

from __future__ import annotations

import numpy as np

from deepsharp.compiled import kernel
from deepsharp.errors import OpError
from deepsharp.tensors.primitives import primitive

LEFT_OUT = -1e9  # what a key the mask leaves out adds to its score (the graph adds the same)


def allowed_keys(key_mask: np.ndarray | None, causal: int, rank: int, queries: int,
                 keys: int) -> np.ndarray | None:
    """Which (query, key) pairs count, broadcastable to the scores (..., Tq, Tk); None: all."""
    allowed = None
    if key_mask is not None:
        allowed = key_mask.reshape(key_mask.shape[0], *([1] * (rank - 2)), key_mask.shape[1])
    if causal:
        future = np.arange(keys)[None, :] <= np.arange(queries)[:, None]
        allowed = future if allowed is None else allowed & future
    return allowed


def check_mask(key_mask: np.ndarray | None, batch: int, keys: int, what: str) -> None:
    if key_mask is not None and (key_mask.shape != (batch, keys) or key_mask.dtype != np.bool_):
        raise OpError(f"{what}: key_mask must be bool ({batch}, {keys}), received "
                      f"{key_mask.dtype} {key_mask.shape}")


# The backward pass runs in chunks along the first axis (the batch) of about this many score
# values (128 KB of float32), each chunk's passes and products in the core's cache and one pair of
# work buffers reused; the same operations on every value, so the same numbers. (The forward pass
# in chunks measured no faster: it runs whole.)
CHUNK = 1 << 15


def _chunks(q: np.ndarray, keys: int) -> list[slice]:
    if q.ndim < 3 or not q.shape[0]:
        return [slice(None)]
    per = int(np.prod(q.shape[1:-1])) * keys  # score values per index of the first axis
    step = max(1, CHUNK // max(per, 1))
    return [slice(i, i + step) for i in range(0, q.shape[0], step)]


def _softmax_rows(a: np.ndarray) -> np.ndarray | None:
    """a's rows of the last axis as one (rows, n) view for the compiled softmax kernels (inside
    `compiled()`, float32, C-ordered: numpy sums such rows pairwise), else None."""
    if (kernel("softmax_divide") is None or a.dtype != np.float32 or not a.flags.c_contiguous
            or a.ndim < 1 or a.shape[-1] < 1):
        return None
    return a.reshape(-1, a.shape[-1])


def attend(q, k, v, key_mask, scale, causal, out=None):
    """softmax(q k^T scale + left out) v and the softmax weights (see the module's docstring);
    the product into `out` when given (a strided view: BLAS writes it in place, no copy)."""
    scores = np.matmul(q, np.swapaxes(k, -1, -2))
    allowed = allowed_keys(key_mask, causal, q.ndim, q.shape[-2], k.shape[-2])
    rows = _softmax_rows(scores) if q.dtype == np.float32 else None  # (scale: q's type)
    if rows is not None and allowed is None:  # (the same operations, one pass: compiled())
        kernel("softmax_shift")(rows, np.float32(scale), True)
    else:
        scores *= np.asarray(scale, q.dtype)
        if allowed is not None:
            scores = np.where(allowed, scores, np.asarray(LEFT_OUT, q.dtype))
            rows = _softmax_rows(scores) if rows is not None else None
        if rows is not None:
            kernel("softmax_shift")(rows, np.float32(1), False)
        else:
            scores -= scores.max(axis=-1, keepdims=True)
    weights = scores  # the softmax over the keys, in place
    np.exp(weights, out=weights)
    if rows is not None:
        kernel("softmax_divide")(rows)
    else:
        weights /= weights.sum(axis=-1, keepdims=True)
    if key_mask is not None:  # only a key mask can leave a query nothing to look at
        weights *= allowed.any(axis=-1, keepdims=True)
    return np.matmul(weights, v, out=out), weights


def attend_grad(grad, weights, q, k, v, scale, outs=(None, None, None)):
    """The gradients of q, k and v through `attend` (into `outs` where given), chunk by chunk:
    the softmax's rule (dw - sum(dw weights)) weights in place over one chunk's work buffers."""
    factor = np.asarray(scale, q.dtype)
    parts = _chunks(q, weights.shape[-1])
    size = weights[parts[0]].shape
    ds_buffer = np.empty(size, np.result_type(grad, v))
    work_buffer = np.empty(size, np.result_type(ds_buffer, weights))
    dq, dk, dv = (np.empty(a.shape, np.result_type(*b)) if o is None else o for a, b, o in zip(
        (q, k, v), ((ds_buffer, k), (ds_buffer, q), (weights, grad)), outs))
    for part in parts:
        w, g = weights[part], grad[part]
        ds = ds_buffer[:w.shape[0]] if q.ndim >= 3 else ds_buffer
        work = work_buffer[:w.shape[0]] if q.ndim >= 3 else work_buffer
        np.matmul(g, np.swapaxes(v[part], -1, -2), out=ds)
        rows, probs = _softmax_rows(ds), _softmax_rows(w)
        # (compiled: the same operations in one pass)
        if rows is not None and probs is not None and factor.dtype == np.float32:
            scratch = work.reshape(-1)[:w.shape[-1]]
            kernel("softmax_grad")(rows, probs, np.float32(factor), scratch)
        else:
            np.multiply(ds, w, out=work)
            ds -= work.sum(axis=-1, keepdims=True)
            ds *= w
            ds *= factor
        np.matmul(ds, k[part], out=dq[part])
        np.matmul(np.swapaxes(ds, -1, -2), q[part], out=dk[part])
        np.matmul(np.swapaxes(w, -1, -2), g, out=dv[part])
    return dq, dk, dv


@primitive("attention")
class Attention:
    def forward(q, k, v, key_mask=None, *, scale, causal):
        if q.ndim < 2 or k.shape[:-2] != q.shape[:-2] or v.shape[:-1] != k.shape[:-1] \
                or q.shape[-1] != k.shape[-1]:
            raise OpError(f"attention: q (..., Tq, d), k (..., Tk, d) and v (..., Tk, dv) must "
                          f"agree, received {q.shape}, {k.shape} and {v.shape}")
        check_mask(key_mask, q.shape[0], k.shape[-2], "attention")
        return attend(q, k, v, key_mask, scale, causal)

    def backward(grad, weights, q, k, v, key_mask=None, *, scale, causal):
        return attend_grad(grad, weights, q, k, v, scale) + (
            (None,) if key_mask is not None else ())
