"""Self-attention's projections, heads and attention as one primitive (a fused kernel).

    a = apply("self_attention", x, wq, wk, wv, bq, bk, bv[, key_mask], heads=4, scale=...,
              causal=0)

is, for x (B, T, C) and each projection w (C, W), b (W,):

    q, k, v = x wq + bq, x wk + bk, x wv + bv, each cut into `heads` heads (B, heads, T, W / heads)
    a = attention(q, k, v[, key_mask], scale, causal), the heads joined back: (B, T, W)

what a self-attention layer computes from the primitives matmul, add, reshape, transpose and
attention (before its output projection). Fused, the three projections are one product
x [wq | wk | wv] with the biases added in place, the heads are strided views of it (no copies),
and the backward pass gathers the three projections' gradients into one buffer for one product
each way. A network runs it only when no tracer records (the graph holds the unfused nodes);
tests/deepsharp/test_fused_kernels.py holds it to the primitives it replaces.
"""

from __future__ import annotations

import numpy as np

from deepsharp.errors import OpError
from deepsharp.tensors.ops.attention import attend, attend_grad, check_mask
from deepsharp.tensors.primitives import needs_input_grad, primitive


def _heads(y: np.ndarray, batch: int, steps: int, heads: int) -> list[np.ndarray]:
    """q, k, v as views (B, heads, T, D) of the projections y (B * T, 3 W)."""
    y5 = y.reshape(batch, steps, 3, heads, -1)
    return [y5[:, :, i].transpose(0, 2, 1, 3) for i in range(3)]


@primitive("self_attention", fresh=True)
class SelfAttention:
    def forward(x, wq, wk, wv, bq, bk, bv, key_mask=None, *, heads, scale, causal):
        width = wq.shape[1]
        if x.ndim != 3 or any(w.shape != (x.shape[2], width) for w in (wq, wk, wv)) \
                or any(b.shape != (width,) for b in (bq, bk, bv)) or width % heads:
            raise OpError(f"self_attention: needs x (B, T, C), three kernels (C, W) and biases "
                          f"(W,) with W a multiple of {heads} heads, received {x.shape}, "
                          f"{[w.shape for w in (wq, wk, wv)]}, {[b.shape for b in (bq, bk, bv)]}")
        batch, steps, _ = x.shape
        check_mask(key_mask, batch, steps, "self_attention")
        y = x.reshape(-1, x.shape[2]) @ np.concatenate([wq, wk, wv], axis=1)
        y += np.concatenate([bq, bk, bv])
        q, k, v = _heads(y, batch, steps, heads)
        joined = np.empty((batch, steps, width), y.dtype)  # the heads written side by side
        _, weights = attend(q, k, v, key_mask, scale, causal,
                            out=joined.reshape(batch, steps, heads, -1).transpose(0, 2, 1, 3))
        return joined, (y, weights)

    def backward(grad, saved, x, wq, wk, wv, bq, bk, bv, key_mask=None, *, heads, scale, causal):
        y, weights = saved
        batch, steps, channels = x.shape
        width = wq.shape[1]
        q, k, v = _heads(y, batch, steps, heads)
        g = grad.reshape(batch, steps, heads, -1).transpose(0, 2, 1, 3)
        dy = np.empty_like(y)  # q's, k's and v's gradients written into their places
        attend_grad(g, weights, q, k, v, scale, outs=_heads(dy, batch, steps, heads))
        x2 = x.reshape(-1, channels)
        gw = x2.T @ dy
        gb = dy.sum(axis=0)
        gx = None
        if needs_input_grad(0):
            gx = (dy @ np.concatenate([wq, wk, wv], axis=1).T).reshape(x.shape)
        parts = [slice(i * width, (i + 1) * width) for i in range(3)]
        return ((gx,) + tuple(np.ascontiguousarray(gw[:, s]) for s in parts)
                + tuple(gb[s] for s in parts) + ((None,) if key_mask is not None else ()))
