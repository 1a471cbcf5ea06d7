"""The numba kernels that work one row of the last axis at a time, for `deepsharp.compiled`:
layer normalisation (`deepsharp.tensors.ops.norm.LayerNorm`) and the softmax of attention
(`deepsharp.tensors.ops.attention`) around numpy's exp.

numpy's `mean` over the last axis of a C-ordered float32 array is a pairwise sum of each row
(numpy's `pairwise_sum`: eight running sums over blocks of up to 128 values, halves above that)
added to 0, divided by the count; its `sum` over the leading axes of such an array adds the
rows to 0 one after another. `row_sum` and the column loops repeat those orders, so these
kernels give numpy's bits; `deepsharp.compiled` uses them only where a probe finds numpy's
numbers (`matches_numpy`), and tests/deepsharp/test_compiled.py holds them to the numpy path.
"""

from __future__ import annotations

import functools

import numpy as np
from numba import njit

_JIT = {"cache": True, "error_model": "numpy", "nogil": True}
_ZERO = np.float32(0.0)
_BLOCK = 128  # numpy's PW_BLOCKSIZE


@njit(**_JIT)
def _block(a, start, n):
    """numpy's pairwise sum of a[start:start + n] for n <= 128: eight running sums."""
    if n < 8:
        res = np.float32(-0.0)
        for i in range(n):
            res += a[start + i]
        return res
    r0, r1, r2, r3 = a[start], a[start + 1], a[start + 2], a[start + 3]
    r4, r5, r6, r7 = a[start + 4], a[start + 5], a[start + 6], a[start + 7]
    i = 8
    whole = n - n % 8
    while i < whole:
        k = start + i
        r0 += a[k]
        r1 += a[k + 1]
        r2 += a[k + 2]
        r3 += a[k + 3]
        r4 += a[k + 4]
        r5 += a[k + 5]
        r6 += a[k + 6]
        r7 += a[k + 7]
        i += 8
    res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    while i < n:
        res += a[start + i]
        i += 1
    return res


@njit(**_JIT)
def _left(n):
    """The first part of numpy's split of n values: half, down to a multiple of 8."""
    half = n // 2
    return half - half % 8


@njit(**_JIT)
def _pairwise(a, start, n):
    """numpy's pairwise sum of a[start:start + n] (float32): a block of up to 128 values, else
    the sum of its two parts' sums (`_left`), walked with a stack here (numba's cache cannot
    load a recursive function)."""
    if n <= _BLOCK:
        return _block(a, start, n)
    starts = np.empty(64, np.int64)  # the parts from the whole down to the part being summed
    sizes = np.empty(64, np.int64)
    lefts = np.empty(64, np.float32)  # a part's first part's sum, once made
    done = np.zeros(64, np.bool_)  # whether it is made
    depth = 0
    starts[0], sizes[0] = start, n
    while True:
        while sizes[depth] > _BLOCK:  # down the first parts
            starts[depth + 1], sizes[depth + 1] = starts[depth], _left(sizes[depth])
            done[depth] = False
            depth += 1
        value = _block(a, starts[depth], sizes[depth])
        while True:  # up: a second part's sum ends its parent, a first part's begins the second
            if depth == 0:
                return value
            depth -= 1
            if done[depth]:
                value = lefts[depth] + value
                continue
            lefts[depth], done[depth] = value, True
            left = _left(sizes[depth])
            starts[depth + 1] = starts[depth] + left
            sizes[depth + 1] = sizes[depth] - left
            depth += 1
            break


@njit(**_JIT)
def row_sum(a):
    """numpy's `a.sum()` of one contiguous float32 row: 0 + its pairwise sum."""
    return _ZERO + _pairwise(a, 0, a.size)


@njit(**_JIT)
def row_sums(x, out):
    """out[r] = x[r].sum() for each row of a C-ordered (rows, n) array (the probe's kernel)."""
    for r in range(x.shape[0]):
        out[r] = row_sum(x[r])


@njit(**_JIT)
def layer_norm_forward(x, gamma, beta, eps, y, xhat, rstd):
    """`LayerNorm.forward` over the rows of x (rows, n): xhat = x - mean, rstd = 1 / sqrt(mean
    of xhat^2 + eps), xhat *= rstd, y = xhat gamma + beta; y's row holds xhat^2 first."""
    rows, n = x.shape
    count = np.float32(n)
    one = np.float32(1.0)
    for r in range(rows):
        xr, hr, yr = x[r], xhat[r], y[r]
        mean = row_sum(xr) / count
        for j in range(n):
            c = xr[j] - mean
            hr[j] = c
            yr[j] = c * c
        s = np.sqrt(row_sum(yr) / count + eps)
        s = one / s
        rstd[r] = s
        for j in range(n):
            h = hr[j] * s
            hr[j] = h
            yr[j] = h * gamma[j] + beta[j]


@njit(**_JIT)
def layer_norm_backward(grad, xhat, rstd, gamma, dx, work, dgamma, dbeta):
    """`LayerNorm.backward` over the rows (rows, n): dx = grad gamma; dx = ((dx - mean(dx))
    - xhat mean(dx xhat)) rstd; dgamma and dbeta the sums over the rows, in order, of grad xhat
    and grad. `work` is one row of scratch."""
    rows, n = grad.shape
    count = np.float32(n)
    for j in range(n):
        dgamma[j] = _ZERO
        dbeta[j] = _ZERO
    for r in range(rows):
        gr, hr, dr = grad[r], xhat[r], dx[r]
        for j in range(n):
            d = gr[j] * gamma[j]
            dr[j] = d
            work[j] = d * hr[j]
        mean_dx = row_sum(dr) / count
        mean_dx_xhat = row_sum(work) / count
        s = rstd[r]
        for j in range(n):
            dr[j] = ((dr[j] - mean_dx) - hr[j] * mean_dx_xhat) * s
        for j in range(n):
            dgamma[j] += gr[j] * hr[j]
            dbeta[j] += gr[j]


@njit(**_JIT)
def softmax_shift(x, scale, scaled):
    """In place over the rows of x (rows, n): x *= scale when `scaled`, then x -= the row's
    largest value (numpy's max: a NaN anywhere in the row makes it NaN)."""
    rows, n = x.shape
    for r in range(rows):
        row = x[r]
        if scaled:
            for j in range(n):
                row[j] = row[j] * scale
        top = row[0]
        for j in range(1, n):
            if top != top:
                break
            v = row[j]
            if not v <= top:
                top = v
        for j in range(n):
            row[j] = row[j] - top


@njit(**_JIT)
def softmax_divide(x):
    """In place over the rows of x (rows, n): x /= the row's sum (numpy's `sum`)."""
    for r in range(x.shape[0]):
        row = x[r]
        total = row_sum(row)
        for j in range(x.shape[1]):
            row[j] = row[j] / total


@njit(**_JIT)
def softmax_grad(ds, w, factor, work):
    """In place over the rows (rows, n): ds = ((ds - sum(ds w)) w) factor, the softmax's rule
    with the scores' scale; `work` one row of scratch."""
    for r in range(ds.shape[0]):
        d, p = ds[r], w[r]
        for j in range(ds.shape[1]):
            work[j] = d[j] * p[j]
        total = row_sum(work)
        for j in range(ds.shape[1]):
            d[j] = ((d[j] - total) * p[j]) * factor


@functools.cache
def matches_numpy() -> bool:
    """Whether numpy's row sums are `row_sums`' on this numpy: rows of lengths about the blocks'
    edges, values of many scales (checked once per process, by deepsharp.compiled)."""
    generator = np.random.default_rng(0)
    for n in (2, 7, 8, 9, 64, 127, 128, 129, 255, 256, 300, 1000):
        x = generator.standard_normal((6, n)) * np.exp(generator.standard_normal((6, n)) * 4)
        x = x.astype(np.float32)
        out = np.empty(6, np.float32)
        row_sums(x, out)
        if not np.array_equal(out, x.sum(axis=-1)) or not np.array_equal(
                out / np.float32(n), x.mean(axis=-1)):
            return False
        columns = np.zeros(n, np.float32)
        for row in x:
            columns += row
        if not np.array_equal(columns, x.sum(axis=0)):
            return False
    return True
