"""conv -> relu -> max pool as one primitive: the three primitives' numbers in less work.

    y = apply("conv_relu_max_pool", x, w[, bias], pads=(...), pool=(2, 2))

is max_pool(relu(conv(x, w, bias, pads)), kernel=pool, strides=pool) for a convolution of stride
1, dilation 1 and one group, and a pool whose windows lie side by side without a border (floor
mode: places past the last whole window are never read). Four things make it cheaper:

- the im2col rows are ordered by pool window: one block of rows per offset inside the window (in
  row-major order, as the pool reads them), so the pool's candidates are contiguous blocks of the
  product and the rows no window reads are never made;
- the bias and the relu come after the max, on a quarter of the values (2x2 windows): both are
  non-decreasing, so relu(max(y) + b) = max(relu(y + b)) exactly, ties included;
- the backward pass sends each pooled gradient to the first largest candidate (as `max_pool`'s
  rule does), only where the pooled value is above zero (as `relu`'s rule does); inside
  `compiled()` the direct path with four candidates finds that candidate in the forward pass
  (deepsharp._kernels_pool.pool_of_four) and keeps it, one byte a pooled value, instead of the
  candidates, and so does the Winograd path, whose output's transform and pool are then one
  pass (winograd_output_pool), as are its routing and its candidates' gradients' transform;
- a float32 3x3 kernel over enough channels with a 2x2 pool takes Winograd F(2x2, 3x3)
  (`winograd.py`): one 2x2 output tile is one pool window, 2.25x fewer multiplies each way.

The direct product is the same product `conv` makes, without the bias's column of ones (the bias
is added after): values agree with the three primitives to float rounding, a few units in the last
place (tests/deepsharp/test_fused_kernels.py holds values and gradients to 1e-6 relative and
ties exactly; the Winograd path rounds otherwise, within 1e-5 relative of the direct one and
nearer a float64 convolution, tests/deepsharp/test_winograd.py). x (N, *places, C),
w (*kernel, C, O), bias (O,); y (N, *pooled, O).
"""

from __future__ import annotations

import numpy as np

from deepsharp import _cblas
from deepsharp.compiled import kernel
from deepsharp.errors import OpError
from deepsharp.tensors.ops.windows import (
    _FEW_CHANNELS, crop_places, offset_slices, offsets, output_lengths, pad_places, windows,
)
from deepsharp.tensors.ops import winograd
from deepsharp.tensors.ops.two_threads import half_point, idle_point, in_halves, split_work
from deepsharp.tensors.ops.conv import _input_grad as conv_input_grad
from deepsharp.tensors.primitives import needs_input_grad, primitive


def _geometry(x: np.ndarray, w: np.ndarray, pads, pool):
    nd = x.ndim - 2
    if w.ndim != nd + 2 or len(pool) != nd or w.shape[-2] != x.shape[-1]:
        raise OpError(f"conv_relu_max_pool: needs x (N, *places, C), a kernel (*window, C, O) "
                      f"and a pool window per place axis, received {x.shape}, {w.shape} and "
                      f"{tuple(pool)}")
    kernel = w.shape[:nd]
    conv_out = output_lengths(x.shape[1:-1], kernel, (1,) * nd, (1,) * nd, pads)
    pooled = tuple(n // p for n, p in zip(conv_out, pool))
    if min(pooled) < 1:
        raise OpError(f"conv_relu_max_pool: a pool window {tuple(pool)} does not fit in the "
                      f"convolution's output of {conv_out} places")
    return kernel, pooled


def _shifted(xp: np.ndarray, shift) -> np.ndarray:
    return xp[(slice(None),) + tuple(slice(s, None) for s in shift) + (slice(None),)]


def _pool_ordered_cols(xp: np.ndarray, kernel, pool, pooled) -> np.ndarray:
    """(P, N * prod(pooled), prod(kernel) * C): block p holds the windows of the convolution
    outputs at offset p (row-major) of every pool window."""
    n, c = xp.shape[0], xp.shape[-1]
    k = int(np.prod(kernel))
    cols = np.empty((int(np.prod(pool)), n, *pooled, k, c), xp.dtype)
    ones = (1,) * len(kernel)

    def blocks(which) -> None:  # the pool offsets' blocks: two halves at once under split_work
        for p, shift in which:
            shifted = _shifted(xp, shift)
            if c >= _FEW_CHANNELS:
                np.copyto(cols[p].reshape(n, *pooled, *kernel, c),
                          windows(shifted, pooled, kernel, pool, ones))
            else:  # few channels: one copy per kernel offset moves whole runs of places
                for index, offset in enumerate(offsets(kernel)):
                    cols[p, ..., index, :] = shifted[offset_slices(offset, pooled, pool, ones)]

    split_work(blocks, list(enumerate(offsets(pool))))
    return cols.reshape(cols.shape[0], -1, k * c)


@primitive("conv_relu_max_pool", fresh=True)
class ConvReluMaxPool:
    def forward(x, w, *bias, pads, pool):
        kernel, pooled = _geometry(x, w, pads, pool)
        xp = pad_places(x, pads)
        bias = bias[0] if bias else None
        u = winograd.prepare(xp, w, pool)
        if u is not None:  # each run's max, bias and relu by the thread running it
            size = (x.shape[0] * int(np.prod(pooled)), w.shape[-1])
            best, pre, out, rows = _pooling(size, np.result_type(xp, w), bias)
            first, fused = _winograd_pool(best, pre, out, bias)  # (compiled: no candidates)
            cols, products = winograd.forward(xp, u, pooled, rows, fused)  # (4, tiles, O)
        else:
            cols = _pool_ordered_cols(xp, kernel, pool, pooled)         # (P, M, K)
            products = _product(cols, w.reshape(-1, w.shape[-1]))      # (P, M, O)
            best, pre, out, first = _max_bias_relu(products, bias)
            if first is not None:  # the windows' first largest candidates, not the candidates
                products = None
        return out.reshape(x.shape[0], *pooled, w.shape[-1]), (cols, products, best, pre,
                                                               xp.shape, first)

    def backward(grad, saved, x, w, *bias, pads, pool):
        cols, products, best, pre, padded, first = saved
        out_channels = w.shape[-1]
        grad2d = grad.reshape(-1, out_channels)
        g = np.empty(grad2d.shape, grad2d.dtype)
        winograd_grads = (kernel("winograd_routed_grad")
                          if first is not None and isinstance(cols, tuple) else None)
        compiled = kernel("route_to_first_max") if first is None else None
        by_first = None if first is None else kernel("route_by_first")
        if by_first is not None or winograd_grads is not None:
            grad2d = np.ascontiguousarray(grad2d)
        routed = grads = None
        if winograd_grads is not None:  # route and dM = A dY A^T in one pass, run by run
            def grads(r: slice) -> np.ndarray:
                return winograd_grads(first, pre, grad2d, g, r.start, r.stop)
        else:
            routed = np.empty((len(products) if first is None else 4, *best.shape), best.dtype)

        def route(r: slice) -> None:  # rows r of g and routed
            if by_first is not None:  # relu's rule and the route in one pass
                by_first(first, pre, grad2d, g, routed, r.start, r.stop)
                return
            # relu's rule: a gradient only where the pooled value (bias added) is above zero
            np.multiply(grad2d[r], pre[r] > 0, out=g[r])
            # max_pool's rule: to the first largest candidate of each window, in row-major order
            if first is not None:  # (found by the forward pass: deepsharp.compiled)
                for p in range(len(routed)):
                    np.multiply(g[r], first[r] == p, out=routed[p, r])
            elif compiled is not None:  # the same selection in one pass (deepsharp.compiled)
                compiled(products, best, g, routed, r.start, r.stop)
            else:
                _route_to_first_max(products[:, r], best[r], g[r], routed[:, r])

        if isinstance(cols, tuple):  # the Winograd path's (v, u, tiles)
            # each run's rows routed just before the run reads them, by the thread running it
            gx, gw = winograd.backward(routed, cols, padded, w.shape, needs_input_grad(0), route,
                                       grads)
            gx = None if gx is None else crop_places(gx, pads)
        else:
            in_halves(route, len(best))  # row by row: two halves at once under in_halves
            idle_point()  # one product on the caller: the worker may take deferred work
            flat = routed.reshape(-1, out_channels)
            # (numpy's product, without the GIL however small the result: _cblas)
            gw = _cblas.matmul(cols.reshape(-1, cols.shape[-1]).T, flat).reshape(w.shape)
            gx = _input_grad(routed, w, padded, pool, pads) if needs_input_grad(0) else None
        # the bias's gradient as a product with ones: one BLAS pass, 6x faster than sum(axis=0)
        return (gx, gw) + ((np.ones(len(g), g.dtype) @ g,) if bias else ())


def _product(cols: np.ndarray, w: np.ndarray) -> np.ndarray:
    """cols (P, M, K) @ w (K, O) as one product of P M rows, or two of row ranges at once
    (in_halves) split at a multiple of ROW_ALIGN rows: OpenBLAS computes a row's sums the same
    way wherever such a split falls (it walks the rows in blocks of 3 x its kernel's width, here
    24), so the numbers are one product's, as long as both ranges take the kernel the whole
    takes (`_splits_alike`; tests/deepsharp/test_parallel.py holds them so with OpenBLAS's
    Haswell and SkylakeX kernels; another BLAS may round the rows otherwise, within 1e-6)."""
    flat = cols.reshape(-1, cols.shape[-1])
    out = np.empty((len(flat), w.shape[-1]), np.result_type(cols, w))
    if _splits_alike(*flat.shape, w.shape[-1]):
        in_halves(lambda r: np.matmul(flat[r], w, out=out[r]), len(flat), ROW_ALIGN)
    else:
        np.matmul(flat, w, out=out)
    return out.reshape(cols.shape[0], cols.shape[1], w.shape[-1])


def _splits_alike(rows: int, inner: int, columns: int) -> bool:
    """Whether both row ranges of `in_halves` fall on the whole product's side of OpenBLAS's
    small-matrix bound: its SkylakeX kernels take a float32 product of at most
    SMALL_PRODUCT multiply-adds (M N K) to other kernels, which round some shapes' rows otherwise
    (a 2304 x 60 x 8 product against its halves, seen on a Xeon of 3 December)."""
    half = half_point(rows, ROW_ALIGN)
    smaller = min(half, rows - half)
    return rows * inner * columns <= SMALL_PRODUCT or smaller * inner * columns > SMALL_PRODUCT


ROW_ALIGN = 144  # 3 x 2, 4, 6, 8, 12 and 16: a block boundary for each kernel width
SMALL_PRODUCT = 100 ** 3  # OpenBLAS's bound for its small-matrix kernels (M N K)
SPLIT_VALUES = 1 << 18  # the max, bias and relu of fewer pooled values stay on one thread


def _max_bias_relu(products: np.ndarray, bias: np.ndarray | None):
    """(best, pre, out, first) (M, O): the largest candidate of each window, plus the bias (pre;
    best itself without one), then relu; row by row, two halves at once under in_halves. With
    four candidates inside `compiled()`, one pass (deepsharp._kernels_pool.pool_of_four) that also
    finds each window's first largest candidate (`first`, uint8), so the backward pass routes by
    it and the candidates need not be kept; else first is None."""
    best, pre, out, rows = _pooling(products.shape[1:], products.dtype, bias)
    m, o = products.shape[1:]
    fused = (kernel("pool_of_four") if len(products) == 4 and products.flags.c_contiguous
             and (bias is None or bias.dtype == products.dtype) else None)
    first = None
    if fused is not None:
        first = np.empty((m, o), np.uint8)
        plus = np.empty(0, products.dtype) if bias is None else bias  # (unread without one)

        def rows(products: np.ndarray, r: slice) -> None:
            fused(products, plus, bias is not None, best, pre, out, first, r.start, r.stop)

    if m * o >= SPLIT_VALUES:
        in_halves(lambda r: rows(products, r), m)
    else:  # a few values: handing half to the worker costs more than it saves
        rows(products, slice(0, m))
    return best, pre, out, first


def _winograd_pool(best, pre, out, bias: np.ndarray | None):
    """(first, pool) for the Winograd path inside `compiled()`: `pool(M, rows)` makes the rows'
    candidates from a run's products M and their max, bias and relu in one pass
    (deepsharp._kernels_pool.winograd_output_pool), keeping each window's first largest
    candidate in `first` (uint8) as pool_of_four does; else (None, None)."""
    fused = (kernel("winograd_output_pool") if bias is None or bias.dtype == best.dtype
             else None)
    if fused is None:
        return None, None
    first = np.empty(best.shape, np.uint8)
    plus = np.empty(0, best.dtype) if bias is None else bias  # (unread without one)

    def pool(m: np.ndarray, rows: slice) -> None:
        fused(m, plus, bias is not None, best, pre, out, first, rows.start)

    return first, pool


def _pooling(size, dtype, bias: np.ndarray | None):
    """(best, pre, out, rows) for M x O pooled values: three arrays, and `rows(products, r)`
    filling rows r of them from the candidates `products` (P, M, O) (elementwise: the same
    numbers whichever thread fills which rows, in whatever runs)."""
    best = np.empty(size, dtype)
    pre = best if bias is None else np.empty(size, np.result_type(dtype, bias))
    out = np.empty_like(pre)

    def rows(products: np.ndarray, r: slice) -> None:
        if len(products) == 1:
            best[r] = products[0, r]
        else:
            np.maximum(products[0, r], products[1, r], out=best[r])
        for block in products[2:]:
            np.maximum(best[r], block[r], out=best[r])
        if bias is not None:
            plus_bias(best[r], bias, out=pre[r])
        np.maximum(pre[r], 0, out=out[r])

    return best, pre, out, rows


def _route_to_first_max(products: np.ndarray, best: np.ndarray, g: np.ndarray,
                        routed: np.ndarray) -> None:
    """routed[p] = g where candidate p is the first equal to `best`, else g * 0. The last
    candidate takes what no earlier one took: where `best` is a candidate, it is then the one;
    where `best` is NaN (none is), relu's rule has already made g = grad * 0, the same either way."""
    hit = np.equal(products[0], best)
    np.multiply(g, hit, out=routed[0])
    if len(products) == 1:
        return
    free = np.logical_not(hit)
    for p in range(1, len(products) - 1):
        np.equal(products[p], best, out=hit)
        hit &= free
        np.multiply(g, hit, out=routed[p])
        free ^= hit
    np.multiply(g, free, out=routed[-1])


def plus_bias(rows: np.ndarray, bias: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """rows (M, O) + bias (O,) (into `out`, contiguous, if given), with the rows taken a few at
    a time: numpy's broadcast loop runs once per row, so for short rows (a few dozen channels)
    most of its time is the loop's, not the additions'. The same additions, the same values."""
    m, o = rows.shape
    if out is None:
        out = np.empty((m, o), np.result_type(rows, bias))
    for k in (16, 8, 4, 2):
        if m % k == 0:
            np.add(rows.reshape(m // k, k * o), np.tile(bias, k), out=out.reshape(m // k, k * o))
            return out
    return np.add(rows, bias, out=out)


def _input_grad(routed: np.ndarray, w: np.ndarray, padded, pool, pads) -> np.ndarray:
    """The gradient of the input: the candidates' gradients put back where their convolution
    outputs lie (one strided copy per pool offset), then conv's own input gradient over the
    places the pool reads."""
    nd = w.ndim - 2
    kernel = w.shape[:nd]
    pooled = tuple(n // p for n, p in zip(_conv_out(padded, kernel), pool))
    read = tuple(n * p for n, p in zip(pooled, pool))
    dense = np.empty((padded[0], *read, w.shape[-1]), routed.dtype)
    blocks = routed.reshape(len(routed), padded[0], *pooled, w.shape[-1])
    for p, shift in enumerate(offsets(pool)):
        dense[offset_slices(shift, pooled, pool, (1,) * nd)] = blocks[p]
    ones = (1,) * nd
    gxp = conv_input_grad(dense.reshape(-1, w.shape[-1]), w, padded, read, ones, ones)
    return crop_places(gxp, pads)


def _conv_out(padded, kernel) -> tuple[int, ...]:
    return tuple(n - k + 1 for n, k in zip(padded[1:-1], kernel))
