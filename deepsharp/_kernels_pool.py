"""The numba kernels of `conv_relu_max_pool`'s pool (deepsharp.tensors.ops.conv_pool), for
`deepsharp.compiled` (imported only when it is on; `deepsharp._kernels` names them): the max, bias
and relu over a window's candidates and the backward routing to its first largest one, and on the
Winograd path (deepsharp.tensors.ops.winograd) the same two folded into that path's transforms:
forward, the output's transform and the pool in one pass, so the candidates are neither written
nor kept; back, the routing and the candidates' gradients' transform in one pass.

Each repeats numpy's float32 operations in numpy's order (see deepsharp._kernels), so the results
are numpy's bit for bit (tests/deepsharp/test_compiled.py).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from deepsharp._kernels_winograd import a_columns, a_rows

_JIT = {"cache": True, "error_model": "numpy", "nogil": True}


@njit(**_JIT)
def _maximum(a, b):
    """numpy's maximum of two values: a where a > b or a is NaN, else b (of two equal values,
    signed zeros among them, the second)."""
    return a if (a > b) | (a != a) else b


@njit(**_JIT)
def pool_of_four(products, bias, with_bias, best, pre, out, first, start, stop):
    """`conv_relu_max_pool`'s max, bias and relu over four candidates (a 2 x 2 pool, or a pool
    of four along one axis) for the rows start..stop, numpy's five passes in their order
    (best = max(max(max(c0, c1), c2), c3), pre = best + bias, out = max(pre, 0)), and `first`,
    the first candidate equal to best (3 where none is: a NaN), read while the candidates are in
    cache, so the backward pass routes by it (route_by_first) instead of reading the candidates
    again. Without a bias, pre is best (the same array)."""
    channels = best.shape[1]
    for m in range(start, stop):
        for o in range(channels):
            _pool_place(products[0, m, o], products[1, m, o], products[2, m, o],
                        products[3, m, o], bias, with_bias, best, pre, out, first, m, o)


@njit(**_JIT)
def _pool_place(c0, c1, c2, c3, bias, with_bias, best, pre, out, first, m, o):
    """One pooled place (row m, channel o) of four candidates: best = max(max(max(c0, c1), c2),
    c3), pre = best + bias, out = max(pre, 0), and the first candidate equal to best in
    `first` (3 where none is: a NaN)."""
    b = _maximum(_maximum(_maximum(c0, c1), c2), c3)
    best[m, o] = b
    q = b + bias[o] if with_bias else b
    pre[m, o] = q
    out[m, o] = _maximum(q, best.dtype.type(0))
    # (the four comparisons written out: a loop over the candidates would not vectorise)
    first[m, o] = 0 if c0 == b else (1 if c1 == b else (2 if c2 == b else 3))


@njit(**_JIT)
def route_by_first(first, pre, grad, g, routed, start, stop):
    """`conv_relu_max_pool`'s backward routing for the rows start..stop by the first largest
    candidate pool_of_four found: g = grad * (pre > 0) (relu's rule), routed[p] = g where p is
    that candidate, else g * 0 (numpy's g * False)."""
    rows, channels = g.shape
    zero = g.dtype.type(0)
    one = g.dtype.type(1)
    for m in range(start, stop):
        for o in range(channels):
            gi = grad[m, o] * (one if pre[m, o] > zero else zero)
            g[m, o] = gi
            k = first[m, o]  # four stores written out: a loop over them would not vectorise
            routed[0, m, o] = gi * (one if k == 0 else zero)
            routed[1, m, o] = gi * (one if k == 1 else zero)
            routed[2, m, o] = gi * (one if k == 2 else zero)
            routed[3, m, o] = gi * (one if k == 3 else zero)


@njit(**_JIT)
def route_to_first_max(products, best, g, routed, start, stop):
    """`conv_relu_max_pool`'s backward routing of the rows start..stop: routed[p] = g where
    candidate p is the first (in p order) to equal the window's largest value, else g * 0
    (numpy's g * False). The loop over channels is innermost and branch-free, so it vectorises
    (the whole arrays are passed, contiguous, and the rows picked here: a view of some rows
    would be typed as strided and not vectorised)."""
    count, rows, channels = products.shape
    zero = g.dtype.type(0)
    one = g.dtype.type(1)
    free = np.empty(channels, np.bool_)
    for m in range(start, stop):
        free[:] = True
        for p in range(count):
            for o in range(channels):
                hit = free[o] and products[p, m, o] == best[m, o]
                free[o] = free[o] and not hit
                routed[p, m, o] = g[m, o] * (one if hit else zero)


@njit(**_JIT)
def winograd_output_pool(m, bias, with_bias, best, pre, out, first, start):
    """`winograd.output_transform` of one run's products m (16, rows, O) (the tiles of the
    pooled rows start..start + rows), then `pool_of_four` on its four candidates, in one pass:
    each tile's candidates Y = A^T M A (rows first: s0 = (m1 + m2) + m0, s1 = (m1 - m2) - m3 over
    M's rows, then the same over s's columns; candidate 2 a + b is Y[a, b]), the largest, plus
    the bias, relu, and the first largest candidate's index, in numpy's order of operations."""
    count, channels = m.shape[1], m.shape[2]
    s = np.empty((2, 4, channels), m.dtype)  # s[a, j]: the row pass of M's column j
    for q in range(count):
        for j in range(4):
            for o in range(channels):
                m1 = m[4 + j, q, o]
                m2 = m[8 + j, q, o]
                s[0, j, o] = (m1 + m2) + m[j, q, o]
                s[1, j, o] = (m1 - m2) - m[12 + j, q, o]
        for o in range(channels):
            _pool_place((s[0, 1, o] + s[0, 2, o]) + s[0, 0, o],
                        (s[0, 1, o] - s[0, 2, o]) - s[0, 3, o],
                        (s[1, 1, o] + s[1, 2, o]) + s[1, 0, o],
                        (s[1, 1, o] - s[1, 2, o]) - s[1, 3, o],
                        bias, with_bias, best, pre, out, first, start + q, o)


@njit(**_JIT)
def winograd_routed_grad(first, pre, grad, g, start, stop):
    """`route_by_first` for the pooled rows start..stop (g = grad * (pre > 0); candidate p's
    gradient g where p is the first largest, else g * 0), then `winograd_output_grad` of those
    four gradients, in one pass: dM (16, stop - start, O) = A dY A^T, columns first."""
    channels = g.shape[1]
    zero = g.dtype.type(0)
    one = g.dtype.type(1)
    dm = np.empty((16, stop - start, channels), g.dtype)
    ds = np.empty((2, 4, channels), g.dtype)  # ds[a, k]: the column pass of dY's row a
    for q in range(stop - start):
        p = start + q
        for o in range(channels):
            gi = grad[p, o] * (one if pre[p, o] > zero else zero)
            g[p, o] = gi
            k = first[p, o]
            for a in range(2):
                a_columns(gi * (one if k == 2 * a else zero),
                          gi * (one if k == 2 * a + 1 else zero), ds, a, o)
        a_rows(ds, dm, q)
    return dm
