"""Winograd F(2x2, 3x3) for `conv_relu_max_pool`: one 2x2 output tile is one 2x2 pool window.

A 3x3 convolution's 2x2 outputs over a 4x4 input tile d are

    Y = A^T [(G g G^T) * (B^T d B)] A        (* elementwise, per input channel, summed over them)

so the sixteen elementwise products become sixteen matrix products (tiles, C) @ (C, O), one
`np.matmul` over a (16, tiles, C) stack: 16 C O multiplies per tile against the direct product's
36 C O (2.25x fewer). The tiles sit at stride 2, so tile (i, j) makes exactly the four candidates
of pool window (i, j), in the pool's row-major order; the rows and columns the floor-mode pool
never reads are never read here either.

The backward pass is the same three steps transposed: the candidates' gradients dY become
dM = A dY A^T; then dU = V^T dM (sixteen products, the weight's gradient G^T dU G) and
dV = dM U^T (sixteen products, the input's gradient B dV B^T, tiles added where they overlap).

Float rounding differs from the direct product: the transforms add and subtract the inputs before
the products (the kernel's transform is made in float64, so it carries one rounding). Measured
against a float64 direct convolution (tests/deepsharp/test_winograd.py), the error stays within a
few units of 1e-7 relative to the size of the products. `conv_pool` takes this path only for a
float32 3x3 kernel, a 2x2 pool and at least WINOGRAD_CHANNELS input channels (below, the product
is too thin for the transforms to pay), and only when x and w are finite: an infinite input would
make inf - inf inside a transform, where the direct product gives an infinity.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from deepsharp.compiled import kernel
from deepsharp.tensors.ops.two_threads import both, split_batch, split_work

WINOGRAD_CHANNELS = 24  # measured (1 thread, forward + backward): a wash at 16, 1.15-1.4x from 24
CHUNK_TILES = 800
SHARE_TILES = 200  # inside data_parallel(2): runs that stay in one core's cache (see _chunks)
DTYPES = (np.dtype(np.float32),)  # float64 keeps the direct product's exact path
SUM_ON_WORKER = 1 << 17  # input values: a smaller sum is not worth a hand-off (~25 us)

# G (4, 3): the kernel's transform, U = G g G^T
_G = np.array([[1.0, 0.0, 0.0], [0.5, 0.5, 0.5], [0.5, -0.5, 0.5], [0.0, 0.0, 1.0]])


def prepare(x: np.ndarray, w: np.ndarray, pool) -> np.ndarray | None:
    """The kernel's transform U (see kernel_transform) when the Winograd path applies, else
    None: float32, 2-D places, a 3x3 kernel, a 2x2 pool, enough input channels, every input and
    weight finite (one summed pass: a sum that is not finite means an infinity, a NaN or an
    overflow, and the direct path then keeps its numbers). Inside `data_parallel(2)` the input's
    sum runs on the worker while the caller transforms the kernel (`both`: two independent
    computations, the same results either way)."""
    if not (x.ndim == 4 and w.shape[:2] == (3, 3) and tuple(pool) == (2, 2)
            and x.dtype in DTYPES and w.dtype == x.dtype
            and x.shape[-1] >= WINOGRAD_CHANNELS and bool(np.isfinite(np.sum(w)))):
        return None
    u, finite = both(lambda: kernel_transform(w), lambda: bool(np.isfinite(np.sum(x))),
                     worth=x.size >= SUM_ON_WORKER)
    return u if finite else None


def forward(xp: np.ndarray, u: np.ndarray, tiles,
            finish: Callable[[np.ndarray, slice], None] | None = None,
            pool: Callable[[np.ndarray, slice], None] | None = None):
    """(saved, candidates (4, N * th * tw, O)) of the 3x3 convolution of xp (N, H, W, C) by a
    kernel (3, 3, C, O) whose transform is u (prepare), over th x tw tiles, a few images at a
    time (see _chunks); `finish(candidates, rows)`, if given, runs on each run's rows as soon as
    they are made, by the thread making them (while they are in its cache). With `pool`, each
    run's products M (16, rows, O) go to `pool(M, rows)` instead of the output's transform (a
    kernel doing the transform and what `finish` would do in one pass), and candidates is None."""
    n, c, o = xp.shape[0], xp.shape[-1], u.shape[-1]
    per = tiles[0] * tiles[1]
    v = np.empty((16, n * per, c), xp.dtype)
    candidates = None if pool is not None else np.empty((4, n * per, o), xp.dtype)
    tiled = v.reshape(4, 4, n, *tiles, c)

    into = kernel("winograd_input")  # (deepsharp.compiled: the same numbers in one pass)

    def runs(chunks) -> None:
        for images, rows in chunks:
            if into is not None:
                into(xp, v, images.start, images.stop, *tiles)
            else:
                input_transform(xp[images], tiles, tiled[:, :, images])
            if pool is not None:
                pool(np.matmul(v[:, rows], u), rows)
                continue
            output_transform(np.matmul(v[:, rows], u), candidates[:, rows])
            if finish is not None:
                finish(candidates, rows)

    split_work(runs, list(_chunks(n, per)))
    return (v, u, tiles), candidates


def backward(routed: np.ndarray | None, saved, padded, w_shape, input_grad_needed: bool,
             route: Callable[[slice], None] | None = None,
             grads: Callable[[slice], np.ndarray] | None = None):
    """(dX (padded) or None, dW (3, 3, C, O)) from the candidates' gradients (4, tiles, O);
    `route(rows)`, if given, fills those rows of `routed` first, run by run. With `grads`,
    `grads(rows)` gives the rows' dM = A dY A^T itself (a kernel routing and transforming in one
    pass), and routed is not read."""
    v, u, tiles = saved
    dtype = u.dtype
    du = np.zeros(u.shape, dtype)
    gx = None
    if input_grad_needed:
        gx = np.empty(padded, dtype)
        gx[:, 2 * tiles[0] + 2:] = 0                     # places no tile reads
        gx[:, :, 2 * tiles[1] + 2:] = 0

    back = kernel("winograd_output_grad")  # (deepsharp.compiled: the same numbers)

    def runs(chunks) -> list[np.ndarray]:
        sums = []
        for images, rows in chunks:
            if grads is None and route is not None:
                route(rows)
            dm = (grads(rows) if grads is not None else output_grad(routed[:, rows])
                  if back is None else back(routed, rows.start, rows.stop))
            sums.append(np.matmul(v[:, rows].transpose(0, 2, 1), dm))
            if gx is not None:
                input_grad(dm, u, gx[images], tiles)
        return sums

    for sums in split_work(runs, list(_chunks(padded[0], tiles[0] * tiles[1]))):
        for part in sums:  # run by run, in order: the same sum on one thread or two
            du += part
    gw = _both_axes(_G.T, du.reshape(4, 4, -1).astype(np.float64))    # G^T dU G
    return gx, gw.astype(dtype).reshape(w_shape)


def _chunks(n: int, per: int):
    """(images, their tiles' rows) in runs of about CHUNK_TILES tiles: the transforms' arrays
    of one run stay in cache between the passes (measured 5-10% faster than whole batches of
    64 13x13 images, and than runs of half the size). Inside `data_parallel(2)` two threads run
    at once and each has one core's cache: runs of SHARE_TILES (8 13x13 images, 0.8 MB of
    products) ... The products' sums along a row do not depend on the run's length, but
    OpenBLAS rounds a row otherwise at another row count, and the kernel's gradient sums over
    runs: so one thread keeps CHUNK_TILES, and its numbers."""
    step = max(1, (SHARE_TILES if split_batch() else CHUNK_TILES) // per)
    for start in range(0, n, step):
        stop = min(start + step, n)
        yield slice(start, stop), slice(start * per, stop * per)


def kernel_transform(w: np.ndarray) -> np.ndarray:
    """U (16, C, O) = G g G^T per channel pair, made in float64 and rounded once."""
    u = _both_axes(_G, w.astype(np.float64).reshape(3, 3, -1))
    return u.astype(w.dtype).reshape(16, w.shape[2], w.shape[3])


def _both_axes(m: np.ndarray, a: np.ndarray) -> np.ndarray:
    """m a m^T on a's first two axes, a (k, k, rest): two products, one per axis."""
    t = (m @ a.reshape(a.shape[0], -1)).reshape(m.shape[0], a.shape[1], -1)
    return m @ t


def input_transform(xp: np.ndarray, tiles, out: np.ndarray) -> None:
    """out (4, 4, N, th, tw, C) = V = B^T d B of every 4x4 input tile d at stride 2, with
    B^T = [[1, 0, -1, 0], [0, 1, 1, 0], [0, -1, 1, 0], [0, 1, 0, -1]] applied to rows, then
    columns."""
    th, tw = tiles
    n, c = xp.shape[0], xp.shape[-1]
    height = 2 * th + 2
    # columns first: their reads step over places, so the inner loops run over the channels
    # only; done on the fewer values (4 x 2 th + 2 rows, not 16 x th), the rows' then run
    # over whole contiguous rows of tiles
    cols = np.empty((4, n, height, tw, c), xp.dtype)
    _bt(*(xp[:, :height, k:k + 2 * tw:2] for k in range(4)), cols)
    _bt(*(cols[:, :, k:k + 2 * th:2] for k in range(4)), out)


def _bt(d0, d1, d2, d3, out) -> None:
    np.subtract(d0, d2, out=out[0])
    np.add(d1, d2, out=out[1])
    np.subtract(d2, d1, out=out[2])
    np.subtract(d1, d3, out=out[3])


def output_transform(m: np.ndarray, out: np.ndarray) -> None:
    """out (4, tiles, O) = the four candidates, row-major in the tile, of Y = A^T M A with
    A^T = [[1, 1, 1, 0], [0, 1, -1, -1]]: rows first, then columns."""
    m4 = m.reshape(4, 4, *m.shape[1:])
    s = np.empty((2, *m4.shape[1:]), m.dtype)                  # (2, 4, tiles, O)
    _at(m4[0], m4[1], m4[2], m4[3], s)
    y = out.reshape(2, 2, *m.shape[1:])
    _at(s[:, 0], s[:, 1], s[:, 2], s[:, 3], y.transpose(1, 0, 2, 3))


def _at(m0, m1, m2, m3, out) -> None:
    np.add(m1, m2, out=out[0])
    out[0] += m0
    np.subtract(m1, m2, out=out[1])
    out[1] -= m3


def output_grad(dy: np.ndarray) -> np.ndarray:
    """dM (16, tiles, O) = A dY A^T from the candidates' gradients dY (4, tiles, O)."""
    dy = dy.reshape(2, 2, *dy.shape[1:])
    ds = np.empty((2, 4, *dy.shape[2:]), dy.dtype)               # columns first
    _a(dy[:, 0], dy[:, 1], ds.transpose(1, 0, 2, 3))
    dm = np.empty((4, 4, *dy.shape[2:]), dy.dtype)
    _a(ds[0], ds[1], dm)
    return dm.reshape(16, *dy.shape[2:])


def _a(y0, y1, out) -> None:
    """out[0..3] = y0, y0 + y1, y0 - y1, -y1 (A = [[1, 0], [1, 1], [1, -1], [0, -1]])."""
    out[0] = y0
    np.add(y0, y1, out=out[1])
    np.subtract(y0, y1, out=out[2])
    np.negative(y1, out=out[3])


def input_grad(dm: np.ndarray, u: np.ndarray, gx: np.ndarray, tiles) -> None:
    """gx's places the tiles read, from dV = dM U^T: each tile's B dV B^T added where the tile
    lies (tiles overlap by two places)."""
    th, tw = tiles
    n, c = gx.shape[0], gx.shape[-1]
    dv = np.matmul(dm, u.transpose(0, 2, 1))
    scatter = kernel("winograd_input_scatter")
    if scatter is not None and gx.flags.c_contiguous:  # (deepsharp.compiled: the same numbers)
        scatter(dv, gx, th, tw)
        return
    dv = dv.reshape(4, 4, n, th, tw, c)
    height, width = 2 * th + 2, 2 * tw + 2
    rows = np.empty((4, n, height, tw, c), dm.dtype)            # rows placed, columns per b
    _b_scatter(dv[0], dv[1], dv[2], dv[3], rows)
    _b_scatter(rows[0], rows[1], rows[2], rows[3], gx[:, :height, :width])


def _b_scatter(e0, e1, e2, e3, out) -> None:
    """out (2 t + 2 places on axis 2) from t tiles at stride 2 on axis 2: B's rows put each
    tile's four gradients at offsets 0..3, out[2 i + r] = sum of (B e)[r] of the tiles i there,
    with B e = (e0, e1 - e2 + e3, e1 + e2 - e0, -e3); every place of out is written."""
    t = e0.shape[2]
    even, odd = out[:, :, 0::2], out[:, :, 1::2]              # t + 1 places each
    even[:, :, :t] = e0
    np.subtract(e1, e2, out=odd[:, :, :t])
    odd[:, :, :t] += e3
    third = np.add(e1, e2)
    third -= e0                                                 # offset 2: tile i - 1's
    even[:, :, 1:t] += third[:, :, :-1]
    even[:, :, t] = third[:, :, -1]
    odd[:, :, 1:t] -= e3[:, :, :-1]                            # offset 3: tile i - 1's
    np.negative(e3[:, :, -1], out=odd[:, :, t])
