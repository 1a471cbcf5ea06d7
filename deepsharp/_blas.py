"""numpy's own BLAS product, callable from numba kernels without the GIL (imported only with
numba).

A whole recurrent sequence runs as one compiled call when each step's product h @ W is made
inside it: `sgemm` calls the very `cblas_sgemm` numpy's matmul calls for a float32 product of two
C-contiguous matrices (numpy's bundled OpenBLAS, found through numpy's own extension module),
with the arguments numpy gives it, so the numbers are numpy's (the same library at the same
thread count). The function's address is passed in at run time, so the kernels stay cacheable.
`address()` is 0 where that cannot be had or checked: numpy built against another BLAS whose
symbol is not known here, or a product whose numbers differ from np.matmul's on a probe (numpy
uses a matrix-vector routine for a single row, so the kernels run only on two rows or more).
"""

from __future__ import annotations

import functools

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

from deepsharp._cblas import NO_TRANS as _NO_TRANS, ROW_MAJOR as _ROW_MAJOR, find as _find


@intrinsic
def _call_sgemm(typingctx, function, m, n, k, a, b, c):
    """cblas_sgemm(row major, no transpose, no transpose, m, n, k, 1, a, k, b, n, 0, c, n) at
    the address `function` (C-contiguous float32 a (m, k), b (k, n), c (m, n) by data address)."""
    signature = types.void(types.intp, types.intp, types.intp, types.intp, types.uintp,
                           types.uintp, types.uintp)

    def codegen(context, builder, sig, args):
        function, m, n, k, a, b, c = args
        i32, i64, f32 = ir.IntType(32), ir.IntType(64), ir.FloatType()
        ptr = ir.IntType(8).as_pointer()
        fnty = ir.FunctionType(ir.VoidType(), [i32, i32, i32, i64, i64, i64, f32, ptr, i64, ptr,
                                               i64, f32, ptr, i64])
        callee = builder.inttoptr(function, fnty.as_pointer())
        order, no = ir.Constant(i32, _ROW_MAJOR), ir.Constant(i32, _NO_TRANS)
        builder.call(callee, [order, no, no, m, n, k, ir.Constant(f32, 1.0),
                              builder.inttoptr(a, ptr), k, builder.inttoptr(b, ptr), n,
                              ir.Constant(f32, 0.0), builder.inttoptr(c, ptr), n])
        return context.get_dummy_value()

    return signature, codegen


@njit(cache=True, nogil=True, inline="always")
def sgemm(function, a, b, out):
    """out = a @ b by numpy's BLAS at `function` (float32, C-contiguous, two rows or more)."""
    _call_sgemm(function, a.shape[0], b.shape[1], a.shape[1], a.ctypes.data, b.ctypes.data,
                out.ctypes.data)


@njit(cache=True, nogil=True)
def _product(function, a, b, out):
    sgemm(function, a, b, out)


@functools.cache
def address() -> int:
    """The address of numpy's cblas_sgemm, checked against np.matmul on a probe; 0 if none."""
    function = _find()
    if not function:
        return 0
    generator = np.random.default_rng(0)
    for m, k, n in ((2, 5, 20), (3, 128, 512), (64, 512, 128), (33, 7, 9)):
        a, b = (generator.standard_normal(s).astype(np.float32) for s in ((m, k), (k, n)))
        out = np.empty((m, n), np.float32)
        _product(function, a, b, out)
        if not np.array_equal(out, a @ b):
            return 0
    return function
