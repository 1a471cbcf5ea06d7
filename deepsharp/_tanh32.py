"""numpy's float32 tanh as a numba scalar function, bit for bit (imported only with numba).

numpy 2.x computes float32 tanh on a CPU with fused multiply-add (x86-64 with AVX2 and FMA3, or
AVX-512; ARM NEON) by Intel SVML's table method (numpy/_core/src/umath/loops_hyperbolic.dispatch):
|x| picks one of 32 sub-intervals by its exponent and top mantissa bits, y = |x| - b is a
degree-6 polynomial's argument, evaluated by Horner steps each one fused multiply-add, the sign
put back by its bit; beyond the table's last interval (and for infinities) the answer is 1, and
NaN gives numpy's quiet NaN. Each lane is computed alone, so a scalar loop doing the same float32
operations gives numpy's numbers exactly. `matches_numpy()` checks that on this machine (numpy
falls back to libm's tanhf on a CPU without FMA, whose numbers differ): the kernels that use this
tanh run only where it holds. scripts/check_tanh32.py compares all 2^32 float32 values once.
"""

from __future__ import annotations

import functools

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

# Per sub-interval: b, then the polynomial's c0 .. c6 (float32 bit patterns, numpy's table).
_TABLE_BITS = [
    (0x00000000, 0x00000000, 0x3f800000, 0xb0343c7b, 0xbeaaaaa5, 0xb76dd6b9, 0x3e0910e9, 0xbc0e2f66),
    (0x3d700000, 0x3d6fb9c9, 0x3f7f1f84, 0xbd6ee69d, 0xbeab0612, 0xbe1c276d, 0x43761143, 0x460bda12),
    (0x3d900000, 0x3d8fc35f, 0x3f7ebd11, 0xbd8f0da7, 0xbea7f01f, 0x3c1dcf2f, 0x4165ecdc, 0x43d638ef),
    (0x3db00000, 0x3daf9169, 0x3f7e1e5f, 0xbdae477d, 0xbea4e120, 0x3dc1a78d, 0xc190f756, 0xc3e11c3e),
    (0x3dd00000, 0x3dcf49ab, 0x3f7d609f, 0xbdcd2a1f, 0xbea387b7, 0x3d96f985, 0xc08c097d, 0xc2baa4e9),
    (0x3df00000, 0x3deee849, 0x3f7c842d, 0xbdeba80d, 0xbea15962, 0x3da2b61b, 0xc02ba813, 0xc249da2d),
    (0x3e100000, 0x3e0f0ee8, 0x3f7b00e5, 0xbe0c443b, 0xbe9d57f7, 0x3dc13397, 0xbf7f6bda, 0xc1859b82),
    (0x3e300000, 0x3e2e4984, 0x3f789580, 0xbe293cf3, 0xbe976b5a, 0x3dd2f670, 0x3f2b1dc0, 0x40dd5b57),
    (0x3e500000, 0x3e4d2f8e, 0x3f75b8ad, 0xbe44f282, 0xbe90230d, 0x3df48a0a, 0x3ece105d, 0x40494640),
    (0x3e700000, 0x3e6bb32e, 0x3f726fd9, 0xbe5f3651, 0xbe880dff, 0x3e06c5a8, 0x3f426a94, 0x40c730a8),
    (0x3e900000, 0x3e8c51cd, 0x3f6cc59b, 0xbe81c7c0, 0xbe7479b3, 0x3e1a3aba, 0xbadb0dc4, 0xbf0f160e),
    (0x3eb00000, 0x3ea96163, 0x3f63fb92, 0xbe96d7ca, 0xbe4c3d88, 0x3e27c405, 0x3da43b17, 0x3e30e76f),
    (0x3ed00000, 0x3ec543f1, 0x3f59ff97, 0xbea7fb8e, 0xbe212482, 0x3e2e78d0, 0xbd51ab88, 0xbea81387),
    (0x3ef00000, 0x3edfd735, 0x3f4f11d7, 0xbeb50e9e, 0xbdeb8cba, 0x3e2c3e44, 0xbcaea23d, 0xbdb26a1c),
    (0x3f100000, 0x3f028438, 0x3f3d7573, 0xbec12efe, 0xbd5e78ad, 0x3e1d3097, 0xbd3b6d8d, 0xbd351e57),
    (0x3f300000, 0x3f18abf0, 0x3f24f360, 0xbec4be92, 0x3c6b5e6e, 0x3df4a8f4, 0xbd6caaad, 0xbb4c01a0),
    (0x3f500000, 0x3f2bc480, 0x3f0cbfe7, 0xbebce070, 0x3d839143, 0x3da38508, 0xbd795bed, 0x3c1d7bfb),
    (0x3f700000, 0x3f3bec1c, 0x3eec1a69, 0xbead510e, 0x3dc21ee1, 0x3d31416a, 0xbd5fddda, 0x3c722cd1),
    (0x3f900000, 0x3f4f2e5b, 0x3eb0a801, 0xbe8ef7d6, 0x3de347af, 0x3b562657, 0xbd038f3b, 0x3c973f1c),
    (0x3fb00000, 0x3f613c53, 0x3e6753a2, 0xbe4b8704, 0x3dcbec96, 0xbcaeeac9, 0xbc1cad63, 0x3c33a31b),
    (0x3fd00000, 0x3f6ce37d, 0x3e132f1a, 0xbe083237, 0x3d99ef2d, 0xbcce9419, 0x3abb4766, 0x3b862ef4),
    (0x3ff00000, 0x3f743c4f, 0x3db7e7d3, 0xbdaf7449, 0x3d542ea1, 0xbcaaeac4, 0x3b95f10b, 0x3a27b3d0),
    (0x40100000, 0x3f7a5feb, 0x3d320845, 0xbd2e1ec4, 0x3cdde701, 0xbc49e7d0, 0x3b825873, 0xba3b5907),
    (0x40300000, 0x3f7dea85, 0x3c84d3d4, 0xbc83bf06, 0x3c2cca67, 0xbba71ddd, 0x3afaea66, 0xba0efc22),
    (0x40500000, 0x3f7f3b3d, 0x3bc477b7, 0xbbc3e0b5, 0x3b81cb27, 0xbb003b0e, 0x3a49f878, 0xb97f9f0f),
    (0x40700000, 0x3f7fb78c, 0x3b10d3da, 0xbb10aadc, 0x3ac073a1, 0xba3f9a05, 0x39996bf3, 0xb8c8af50),
    (0x40900000, 0x3f7fefd4, 0x3a01601e, 0xba0157db, 0x39ac3032, 0xb92c08a7, 0x388f3e6c, 0xb7bdddfb),
    (0x40b00000, 0x3f7ffdd0, 0x388c1a3b, 0xb88c18f2, 0x383a94d9, 0xb7ba9232, 0x371bb0e3, 0xb64f2950),
    (0x40d00000, 0x3f7fffb4, 0x3717b0da, 0xb717b096, 0x36ca081d, 0xb64a0b0f, 0x35a8a5e6, 0xb4e085b1),
    (0x40f00000, 0x3f7ffff6, 0x35a43bce, 0xb5a43bae, 0x355abd4c, 0xb4dac169, 0x34369b17, 0xb3731dfa),
    (0x41100000, 0x3f7fffff, 0x338306c6, 0xb383012c, 0x332b3cb6, 0xb2ab78ac, 0x322487b0, 0xb15a1f04),
    (0x00000000, 0x3f800000, 0x00000000, 0x00000000, 0x00000000, 0x00000000, 0x00000000, 0x00000000),
]
_TABLE = np.array(_TABLE_BITS, np.uint32).view(np.float32)
# one array per column: loads by sub-interval the loop vectoriser can gather
_B, _C0, _C1, _C2, _C3, _C4, _C5, _C6 = (np.ascontiguousarray(column) for column in _TABLE.T)
_NAN = np.float32(np.nan)
_ONE = np.float32(1.0)
_PART, _FIRST, _LAST, _HUGE = (np.int32(v) for v in (0x7FE00000, 0x3D400000, 0x3E00000, 0x7F000000))
_ZERO = np.int32(0)


@intrinsic
def fma32(typingctx, a, b, c):
    """a * b + c rounded once (LLVM's fma: the CPU's instruction where it has one)."""
    signature = types.float32(types.float32, types.float32, types.float32)

    def codegen(context, builder, sig, args):
        f32 = ir.FloatType()
        function = builder.module.declare_intrinsic("llvm.fma", [f32],
                                                    ir.FunctionType(f32, [f32, f32, f32]))
        return builder.call(function, args)

    return signature, codegen


@intrinsic
def _bits(typingctx, x):
    """The float32's bit pattern as an int32."""
    def codegen(context, builder, sig, args):
        return builder.bitcast(args[0], ir.IntType(32))

    return types.int32(types.float32), codegen


@njit(cache=True, nogil=True, inline="always")
def tanh32(x):
    """numpy's float32 tanh of one float32 value (see the module's docstring). Branch-free (every
    choice a select), so a loop over values vectorises."""
    bits = _bits(x)
    part = bits & _PART                          # exponent and the mantissa's top two bits
    k = min(max(part - _FIRST, _ZERO), _LAST) >> 21   # the sub-interval, 0 .. 31
    y = abs(x) - _B[k]
    r = fma32(_C6[k], y, _C5[k])
    r = fma32(r, y, _C4[k])
    r = fma32(r, y, _C3[k])
    r = fma32(r, y, _C2[k])
    r = fma32(r, y, _C1[k])
    r = fma32(r, y, _C0[k])
    r = _ONE if part > _HUGE else r              # beyond the last interval, or infinite
    r = -abs(r) if bits < _ZERO else r           # numpy ORs x's sign bit into r
    return _NAN if x != x else r


@njit(cache=True, nogil=True)
def tanh32_array(x, out):
    """out = tanh32(x), element by element (flat arrays)."""
    for i in range(x.size):
        out[i] = tanh32(x[i])


@functools.cache
def matches_numpy() -> bool:
    """Whether tanh32 gives np.tanh's float32 numbers on this machine: a probe over every
    sub-interval's edges, both signs, zeros, tiny, huge, infinite and NaN values."""
    edges = np.arange(0x3D400000, 0x41A00001, 0x00200000, dtype=np.int64)
    near = (edges[:, None] + np.arange(-3, 4)[None, :]).ravel()
    grid = np.linspace(0.0, 12.0, 20001, dtype=np.float32)
    x = np.concatenate([near.astype(np.uint32).view(np.float32), grid,
                        np.array([0.0, 1e-30, 1e-45, 3e38, np.inf, np.nan], np.float32)])
    x = np.concatenate([x, -x])
    out = np.empty_like(x)
    tanh32_array(x, out)
    expected = np.tanh(x)
    return bool(np.array_equal(out.view(np.uint32), expected.view(np.uint32)))
