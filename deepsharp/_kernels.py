"""The numba kernels of `deepsharp.compiled` (imported only when it is on).

Every kernel repeats a numpy path's float32 operations in the same order, with float32 constants
(a Python literal would make numba compute in float64), so the results are bit-identical.
"""

from __future__ import annotations

import numpy as np
from numba import njit

_JIT = {"cache": True, "error_model": "numpy", "nogil": True}
_ONE = np.float32(1.0)
_HALF = np.float32(0.5)


@njit(**_JIT)
def adam_flat(g, m, v, work, c1, c2, b2, root, eps, step_size):
    """Adam over flat buffers (`Adam._flat_step`): m += c1 (g - m); v = v b2 + (c2 g) g;
    work = step_size (m / (sqrt(v) / root + eps))."""
    for i in range(g.size):
        gi = g[i]
        mi = m[i] + (gi - m[i]) * c1
        vi = v[i] * b2 + (c2 * gi) * gi
        m[i] = mi
        v[i] = vi
        work[i] = (mi / (np.sqrt(vi) / root + eps)) * step_size


@njit(**_JIT)
def lstm_step_grad(a, tc, c_prev, dh, dc, d, dc_out):
    """One LSTM step back through time (`_lstm_through_time`), gates held (o, i, f, g) in a
    (batch, 4H): d (batch, 4, H) the gates' gradients, dc_out the cell's for the step before."""
    batch, hidden = tc.shape
    for b in range(batch):
        for j in range(hidden):
            o = a[b, j]
            i = a[b, hidden + j]
            f = a[b, 2 * hidden + j]
            g = a[b, 3 * hidden + j]
            t = tc[b, j]
            h_grad = dh[b, j]
            d[b, 0, j] = (h_grad * t) * (o - o * o)
            total = dc[b, j] + ((_ONE - t * t) * o) * h_grad
            d[b, 1, j] = (total * g) * (i - i * i)
            d[b, 2, j] = (total * c_prev[b, j]) * (f - f * f)
            d[b, 3, j] = total * ((_ONE - g * g) * i)
            dc_out[b, j] = total * f



@njit(**_JIT)
def lstm_step_cell(g, c, c_out):
    """One LSTM step forward (`Lstm.forward`), after the tanh of its gates g (batch, 4H) held
    (o, i, f, g): the sigmoid gates from their tanh (t / 2 + 1 / 2, in place), then the new cell
    c_out = f c + i g."""
    batch, hidden = c.shape
    for b in range(batch):
        for k in range(3 * hidden):
            g[b, k] = g[b, k] * _HALF + _HALF
        for j in range(hidden):
            c_out[b, j] = g[b, 2 * hidden + j] * c[b, j] + g[b, hidden + j] * g[b, 3 * hidden + j]


_INV_SQRT_2 = np.float32(1.0 / np.sqrt(2.0))
_FOUR = np.float32(4.0)


@njit(**_JIT)
def gelu_erf32(x, numerator, denominator, cdf, out):
    """GELU by erf32 (`activations.Gelu`, float32) in one pass: cdf = (erf32(x / sqrt 2) + 1) / 2,
    out = x cdf; erf32's clip, Horner steps and division in its order."""
    last_p, last_q = len(numerator) - 1, len(denominator) - 1
    for i in range(x.size):
        xi = x[i]
        v = xi * _INV_SQRT_2
        if v < -_FOUR:
            v = -_FOUR
        elif v > _FOUR:
            v = _FOUR
        z = v * v
        p = z * numerator[0]
        for k in range(1, last_p):
            p = (p + numerator[k]) * z
        p = p + numerator[last_p]
        q = z * denominator[0]
        for k in range(1, last_q):
            q = (q + denominator[k]) * z
        q = q + denominator[last_q]
        c = ((p * v) / q + _ONE) * _HALF
        cdf[i] = c
        out[i] = xi * c


@njit(**_JIT)
def route_to_first_max(products, best, g, routed):
    """`conv_relu_max_pool`'s backward routing: routed[p] = g where candidate p is the first
    (in p order) to equal the window's largest value, else g * 0 (numpy's g * False)."""
    count, rows, channels = products.shape
    zero = g.dtype.type(0)
    one = g.dtype.type(1)
    for m in range(rows):
        for o in range(channels):
            found = False
            for p in range(count):
                hit = not found and products[p, m, o] == best[m, o]
                found = found or hit
                routed[p, m, o] = g[m, o] * (one if hit else zero)
