"""The numba kernels of three of Winograd F(2x2, 3x3)'s transforms (deepsharp.tensors.ops.winograd:
the input's, forward; the candidates' gradients' and the input gradient's scatter, back), for
`deepsharp.compiled` (imported only when it is on; `deepsharp._kernels` names them).

Each is numpy's passes (winograd.py's `_bt` twice, `_a` twice, `_b_scatter` twice) folded into
one loop: every value gets the very float32 additions and subtractions numpy gives it, in the
same order (a value numpy makes once and reads twice, such as the column transform of a row two
tiles share, is made twice here, the same way), so the results are numpy's: the same bits
wherever they are numbers (where two NaNs meet, which one's payload and sign a sum keeps is the
compiler's choice of operand order). The channels are the innermost loop, contiguous and
branch-free, so it vectorises; whole arrays are passed with the range of images or rows (a view
would be typed as strided). Measured on one run of 800 tiles x 32 channels (1 thread): the
input's transform 0.64 -> 0.34 ms, the gradients' 0.37 -> 0.21 ms, the scatter 0.59 -> 0.28 ms
(each place's case chosen once, its channels read straight from dV). The output's transform
alone was tried too and not kept: no faster (0.27 against 0.28 ms) than numpy's passes, which
run on a run's arrays in the cache; folded with the pool after it, it is
(deepsharp._kernels_pool.winograd_output_pool, and winograd_routed_grad for the gradients').
"""

from __future__ import annotations

import numpy as np
from numba import njit

_JIT = {"cache": True, "error_model": "numpy", "nogil": True}


@njit(**_JIT)
def winograd_input(xp, v, start, stop, th, tw):
    """`input_transform` of images start..stop of xp (N, H, W, C) into their rows of
    v (16, N th tw, C): V = B^T d B of each 4x4 tile at stride 2, columns first, then rows."""
    c = xp.shape[3]
    per = th * tw
    t = np.empty((4, 4, c), xp.dtype)  # t[k, j]: column transform j of the tile's row k
    for b in range(start, stop):
        for ti in range(th):
            for tj in range(tw):
                for k in range(4):
                    r = 2 * ti + k
                    s = 2 * tj
                    for ch in range(c):
                        d0 = xp[b, r, s, ch]
                        d1 = xp[b, r, s + 1, ch]
                        d2 = xp[b, r, s + 2, ch]
                        d3 = xp[b, r, s + 3, ch]
                        t[k, 0, ch] = d0 - d2
                        t[k, 1, ch] = d1 + d2
                        t[k, 2, ch] = d2 - d1
                        t[k, 3, ch] = d1 - d3
                row = b * per + ti * tw + tj
                for j in range(4):
                    for ch in range(c):
                        v[j, row, ch] = t[0, j, ch] - t[2, j, ch]
                        v[4 + j, row, ch] = t[1, j, ch] + t[2, j, ch]
                        v[8 + j, row, ch] = t[2, j, ch] - t[1, j, ch]
                        v[12 + j, row, ch] = t[1, j, ch] - t[3, j, ch]


@njit(**_JIT)
def winograd_output_grad(dy, start, stop):
    """`output_grad` of rows start..stop of the candidates' gradients dy (4, rows, O): dM (16,
    stop - start, O) = A dY A^T, columns first, with A's rows y0, y0 + y1, y0 - y1, -y1."""
    o = dy.shape[2]
    dm = np.empty((16, stop - start, o), dy.dtype)
    ds = np.empty((2, 4, o), dy.dtype)  # ds[a, k]: the column pass of dY's row a
    for q in range(stop - start):
        p = start + q
        for a in range(2):
            for ch in range(o):
                a_columns(dy[2 * a, p, ch], dy[2 * a + 1, p, ch], ds, a, ch)
        a_rows(ds, dm, q)
    return dm


@njit(**_JIT)
def a_columns(y0, y1, ds, a, ch):
    """`_a` on one channel of one row of dY: ds[a, 0..3, ch] = y0, y0 + y1, y0 - y1, -y1."""
    ds[a, 0, ch] = y0
    ds[a, 1, ch] = y0 + y1
    ds[a, 2, ch] = y0 - y1
    ds[a, 3, ch] = -y1


@njit(**_JIT)
def a_rows(ds, dm, q):
    """`_a` over the column pass ds (2, 4, O): dM's tile q, dm[4 i + col, q] (A's rows again)."""
    for col in range(4):
        for ch in range(ds.shape[2]):
            y0 = ds[0, col, ch]
            y1 = ds[1, col, ch]
            dm[col, q, ch] = y0
            dm[4 + col, q, ch] = y0 + y1
            dm[8 + col, q, ch] = y0 - y1
            dm[12 + col, q, ch] = -y1


@njit(**_JIT)
def winograd_input_scatter(dv, gx, th, tw):
    """`input_grad`'s two `_b_scatter` passes into gx (images, H, W, C) from dV (16, images th tw,
    C) (each tile's B dV B^T added where it lies): rows first, then columns. B e puts e0,
    (e1 - e2) + e3, (e1 + e2) - e0 and -e3 at a tile's offsets 0..3; tiles at stride 2 overlap
    by two places, so place 2 i gets e0 of tile i + offset 2 of tile i - 1, and place 2 i + 1
    gets offset 1 of tile i - e3 of tile i - 1 (in numpy's order of operations)."""
    c = dv.shape[2]
    per = th * tw
    images = dv.shape[1] // per
    rows = np.empty((4, tw, c), dv.dtype)  # rows[j, tj]: the row pass at this place
    for b in range(images):
        for r in range(2 * th + 2):
            i, odd = r // 2, r % 2
            for j in range(4):
                for tj in range(tw):
                    now = b * per + i * tw + tj        # tile i's row in dv (when i < th)
                    before = now - tw                  # tile i - 1's (when i > 0)
                    _place(dv, 4, j, now, before, i, th, odd, rows[j, tj])
            for s in range(2 * tw + 2):
                _place(rows, 1, 0, s // 2, s // 2 - 1, s // 2, tw, s % 2, gx[b, r, s])


@njit(**_JIT)
def _place(e, stride, j, now, before, i, t, odd, out):
    """One place of `_b_scatter`'s output into out (C,): e[k * stride + j, tile] is gradient k of
    a tile (k = 0..3), `now` tile i's index and `before` tile i - 1's, t tiles."""
    c = out.shape[0]
    e0, e1, e2, e3 = j, stride + j, 2 * stride + j, 3 * stride + j
    if odd == 0:
        if i == t:
            for ch in range(c):
                out[ch] = (e[e1, before, ch] + e[e2, before, ch]) - e[e0, before, ch]
        elif i == 0:
            for ch in range(c):
                out[ch] = e[e0, now, ch]
        else:
            for ch in range(c):
                out[ch] = e[e0, now, ch] + ((e[e1, before, ch] + e[e2, before, ch])
                                            - e[e0, before, ch])
    elif i == t:
        for ch in range(c):
            out[ch] = -e[e3, before, ch]
    elif i == 0:
        for ch in range(c):
            out[ch] = (e[e1, now, ch] - e[e2, now, ch]) + e[e3, now, ch]
    else:
        for ch in range(c):
            out[ch] = ((e[e1, now, ch] - e[e2, now, ch]) + e[e3, now, ch]) - e[e3, before, ch]
