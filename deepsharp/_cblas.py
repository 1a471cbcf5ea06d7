"""numpy's own float32 matrix product, called so that it lets go of the GIL while it runs.

numpy's matmul releases the GIL only for a product of more than 500 values (its threshold is on
the result's size, whatever the work): the first conv layer's kernel gradient, 9 x 32 values each
summed over 43,264 rows, holds it for a millisecond, and inside `data_parallel(2)` the other
thread can start nothing in that time. `matmul(a, b)` makes the very call numpy's matmul makes
for two float32 matrices (numpy's bundled OpenBLAS `cblas_sgemm`, found through numpy's own
extension module, with the order, transposes, sizes and strides numpy gives it) through ctypes,
which releases the GIL for a foreign call: the same library, the same arguments, the same
numbers. The function is checked against np.matmul on probes once per process (each layout the
calls here take, results of 500 values or fewer among them); where it cannot be found or a probe
differs, np.matmul runs.
"""

from __future__ import annotations

import ctypes
import functools
import importlib
import itertools

import numpy as np

# numpy's wheels bundle OpenBLAS with 64-bit integers, its symbols ending in 64_ (numpy 2.x's
# scipy-openblas with a scipy_ prefix, numpy 1.26's without).
SYMBOLS = ("scipy_cblas_sgemm64_", "cblas_sgemm64_")
MODULES = ("numpy._core._multiarray_umath", "numpy.core._multiarray_umath")
ROW_MAJOR, NO_TRANS, TRANS = 101, 111, 112
_F32 = np.dtype(np.float32)
_PROTOTYPE = ctypes.CFUNCTYPE(None, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int64,
                              ctypes.c_int64, ctypes.c_int64, ctypes.c_float, ctypes.c_void_p,
                              ctypes.c_int64, ctypes.c_void_p, ctypes.c_int64, ctypes.c_float,
                              ctypes.c_void_p, ctypes.c_int64)


def find() -> int:
    """cblas_sgemm's address in the BLAS numpy's extension module links (dlsym searches the
    libraries it loaded), or 0."""
    for module in MODULES:
        try:
            library = ctypes.CDLL(importlib.import_module(module).__file__)
        except (ImportError, OSError):
            continue
        for symbol in SYMBOLS:
            found = getattr(library, symbol, None)
            if found is not None:
                return ctypes.cast(found, ctypes.c_void_p).value or 0
    return 0


def _layout(a: np.ndarray) -> tuple[int, int] | None:
    """(transpose flag, leading dimension) numpy's matmul gives cblas for a 2-D float32 operand
    (row-major: unit steps along a row, or along a column for a transposed one), else None."""
    rows, cols = a.shape
    step_row, step_col = a.strides
    size = _F32.itemsize
    if step_col == size and step_row % size == 0 and step_row >= cols * size and rows > 0:
        return NO_TRANS, max(step_row // size, 1)
    if step_row == size and step_col % size == 0 and step_col >= rows * size and cols > 0:
        return TRANS, max(step_col // size, 1)
    return None


def _call(function, a: np.ndarray, b: np.ndarray, out: np.ndarray) -> bool:
    la, lb = _layout(a), _layout(b)
    if la is None or lb is None:
        return False
    (m, k), n = a.shape, b.shape[1]
    function(ROW_MAJOR, la[0], lb[0], m, n, k, 1.0, a.ctypes.data, la[1], b.ctypes.data, lb[1],
             0.0, out.ctypes.data, n)
    return True


@functools.cache
def _function():
    """numpy's cblas_sgemm as a ctypes function, checked against np.matmul; None if it cannot
    be had."""
    address = find()
    if not address:
        return None
    function = _PROTOTYPE(address)
    generator = np.random.default_rng(0)
    for (m, k, n), transposed in itertools.product(
            ((9, 4000, 32), (9, 43264, 32), (3, 7, 5), (16, 300, 20), (64, 1600, 128)),
            (False, True)):
        a = generator.standard_normal((k, m) if transposed else (m, k)).astype(np.float32)
        a = a.T if transposed else a
        b = generator.standard_normal((k, n)).astype(np.float32)
        out = np.empty((m, n), np.float32)
        if not _call(function, a, b, out) or not np.array_equal(out, np.matmul(a, b)):
            return None
    return function


def matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a @ b for 2-D arrays, with numpy's numbers; for float32 matrices of two rows and columns
    or more (numpy takes a matrix-vector routine otherwise) by numpy's cblas_sgemm without the
    GIL, else (and when it made a value that is not finite, for numpy's floating-point error
    reports) by np.matmul."""
    function = _function() if (a.dtype == _F32 and b.dtype == _F32 and a.ndim == b.ndim == 2
                               and min(a.shape[0], b.shape[1]) >= 2 and a.shape[1] >= 1
                               and a.shape[1] == b.shape[0]) else None
    if function is not None and a.ctypes.data != b.ctypes.data:  # (numpy takes syrk for a a^T)
        out = np.empty((a.shape[0], b.shape[1]), np.float32)
        # numpy reports the floating-point errors of its BLAS call (an overflow, inf - inf) as
        # the errstate says; ctypes' call does not: a product that made any is numpy's own
        if _call(function, a, b, out) and np.isfinite(out).all():
            return out
    return np.matmul(a, b)
