"""numpy's float32 tanh as a numba scalar function, bit for bit (imported only with numba).

numpy 2.x computes float32 tanh on a CPU with fused multiply-add (x86-64 with AVX2 and FMA3, or
AVX-512; ARM NEON) by Intel SVML's table method (numpy/_core/src/umath/loops_hyperbolic.dispatch):
|x| picks one of 32 sub-intervals by its exponent and top mantissa bits, y = |x| - b is a
degree-6 polynomial's argument, evaluated by Horner steps each one fused multiply-add, the sign
put back by its bit; beyond the table's last interval (and for infinities) the answer is 1, and
NaN gives numpy's quiet NaN. Each lane is computed alone, so a scalar loop doing the same float32
operations gives numpy's numbers exactly, and so do 16 or 8 such lanes at once (`tanh_into_16`
with AVX-512, `tanh_into_8` with AVX2: the loop the kernels run is the widest the CPU has; else
`tanh_into_loop`). `matches_numpy()` checks that on this machine (numpy falls back to libm's
tanhf on a CPU without FMA, whose numbers differ): the kernels that use this tanh run only where
it holds. scripts/check_tanh32.py compares all 2^32 float32 values once, by each loop the CPU can
run.
"""

from __future__ import annotations

import functools

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

# Per sub-interval: b, then the polynomial's c0 .. c6 (float32 bit patterns, numpy's table).
_TABLE_HEX = """
00000000 00000000 3f800000 b0343c7b beaaaaa5 b76dd6b9 3e0910e9 bc0e2f66
3d700000 3d6fb9c9 3f7f1f84 bd6ee69d beab0612 be1c276d 43761143 460bda12
3d900000 3d8fc35f 3f7ebd11 bd8f0da7 bea7f01f 3c1dcf2f 4165ecdc 43d638ef
3db00000 3daf9169 3f7e1e5f bdae477d bea4e120 3dc1a78d c190f756 c3e11c3e
3dd00000 3dcf49ab 3f7d609f bdcd2a1f bea387b7 3d96f985 c08c097d c2baa4e9
3df00000 3deee849 3f7c842d bdeba80d bea15962 3da2b61b c02ba813 c249da2d
3e100000 3e0f0ee8 3f7b00e5 be0c443b be9d57f7 3dc13397 bf7f6bda c1859b82
3e300000 3e2e4984 3f789580 be293cf3 be976b5a 3dd2f670 3f2b1dc0 40dd5b57
3e500000 3e4d2f8e 3f75b8ad be44f282 be90230d 3df48a0a 3ece105d 40494640
3e700000 3e6bb32e 3f726fd9 be5f3651 be880dff 3e06c5a8 3f426a94 40c730a8
3e900000 3e8c51cd 3f6cc59b be81c7c0 be7479b3 3e1a3aba badb0dc4 bf0f160e
3eb00000 3ea96163 3f63fb92 be96d7ca be4c3d88 3e27c405 3da43b17 3e30e76f
3ed00000 3ec543f1 3f59ff97 bea7fb8e be212482 3e2e78d0 bd51ab88 bea81387
3ef00000 3edfd735 3f4f11d7 beb50e9e bdeb8cba 3e2c3e44 bcaea23d bdb26a1c
3f100000 3f028438 3f3d7573 bec12efe bd5e78ad 3e1d3097 bd3b6d8d bd351e57
3f300000 3f18abf0 3f24f360 bec4be92 3c6b5e6e 3df4a8f4 bd6caaad bb4c01a0
3f500000 3f2bc480 3f0cbfe7 bebce070 3d839143 3da38508 bd795bed 3c1d7bfb
3f700000 3f3bec1c 3eec1a69 bead510e 3dc21ee1 3d31416a bd5fddda 3c722cd1
3f900000 3f4f2e5b 3eb0a801 be8ef7d6 3de347af 3b562657 bd038f3b 3c973f1c
3fb00000 3f613c53 3e6753a2 be4b8704 3dcbec96 bcaeeac9 bc1cad63 3c33a31b
3fd00000 3f6ce37d 3e132f1a be083237 3d99ef2d bcce9419 3abb4766 3b862ef4
3ff00000 3f743c4f 3db7e7d3 bdaf7449 3d542ea1 bcaaeac4 3b95f10b 3a27b3d0
40100000 3f7a5feb 3d320845 bd2e1ec4 3cdde701 bc49e7d0 3b825873 ba3b5907
40300000 3f7dea85 3c84d3d4 bc83bf06 3c2cca67 bba71ddd 3afaea66 ba0efc22
40500000 3f7f3b3d 3bc477b7 bbc3e0b5 3b81cb27 bb003b0e 3a49f878 b97f9f0f
40700000 3f7fb78c 3b10d3da bb10aadc 3ac073a1 ba3f9a05 39996bf3 b8c8af50
40900000 3f7fefd4 3a01601e ba0157db 39ac3032 b92c08a7 388f3e6c b7bdddfb
40b00000 3f7ffdd0 388c1a3b b88c18f2 383a94d9 b7ba9232 371bb0e3 b64f2950
40d00000 3f7fffb4 3717b0da b717b096 36ca081d b64a0b0f 35a8a5e6 b4e085b1
40f00000 3f7ffff6 35a43bce b5a43bae 355abd4c b4dac169 34369b17 b3731dfa
41100000 3f7fffff 338306c6 b383012c 332b3cb6 b2ab78ac 322487b0 b15a1f04
00000000 3f800000 00000000 00000000 00000000 00000000 00000000 00000000
"""
_TABLE = np.array([int(word, 16) for word in _TABLE_HEX.split()], np.uint32).view(
    np.float32).reshape(32, 8)
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


# The same steps on 16 or 8 lanes at once. The loop vectoriser turns tanh32's table loads into
# gathers, which AMD's Zen cores run slowly (a loop of tanh32 ran at 2.6 ns a value on a Zen 5,
# np.tanh at 0.26 with its AVX-512 loop, 1.1 with its AVX2 one). numpy's AVX-512 loop looks the
# table up by two-register permutes (vpermi2ps), and so does `_tanh16`; `_tanh8` (AVX2) looks
# each quarter of the table up by one permute (vpermps) and picks among the four by the index's
# bits 3 and 4.
def _splat(kind, lanes: int, value):
    return ir.Constant(ir.VectorType(kind, lanes), [value] * lanes)


def _table_part(column: np.ndarray, lanes: int, part: int) -> ir.Constant:
    return ir.Constant(ir.VectorType(ir.FloatType(), lanes),
                       [float(v) for v in column[part * lanes:(part + 1) * lanes]])


def _look_up_16(builder, k):
    floats, ints = ir.VectorType(ir.FloatType(), 16), ir.VectorType(ir.IntType(32), 16)
    permute = cgutils.get_or_insert_function(
        builder.module, ir.FunctionType(floats, [floats, ints, floats]),
        "llvm.x86.avx512.vpermi2var.ps.512")
    return lambda column: builder.call(permute, [_table_part(column, 16, 0), k,
                                                 _table_part(column, 16, 1)])


def _look_up_8(builder, k):
    i32 = ir.IntType(32)
    floats, ints = ir.VectorType(ir.FloatType(), 8), ir.VectorType(i32, 8)
    permute = cgutils.get_or_insert_function(
        builder.module, ir.FunctionType(floats, [floats, ints]), "llvm.x86.avx2.permps")
    zero = _splat(i32, 8, 0)
    second = builder.icmp_signed("!=", builder.and_(k, _splat(i32, 8, 8)), zero)
    upper = builder.icmp_signed("!=", builder.and_(k, _splat(i32, 8, 16)), zero)

    def look_up(column):
        quarters = [builder.call(permute, [_table_part(column, 8, q), k]) for q in range(4)]
        return builder.select(upper, builder.select(second, quarters[3], quarters[2]),
                              builder.select(second, quarters[1], quarters[0]))

    return look_up


_LOOK_UP = {16: _look_up_16, 8: _look_up_8}


@intrinsic
def _tanh_lanes(typingctx, source, out, start, lanes):
    """out[start:start + lanes] = tanh32 of source's values there (contiguous 1-D float32
    arrays; `lanes` a literal 16, AVX-512 only, or 8, AVX2 only), as vector operations: tanh32's
    float32 steps, lane by lane, its table looked up by `_LOOK_UP[lanes]`."""
    for array in (source, out):  # read and written as `lanes` adjacent float32 values
        if not (isinstance(array, types.Array) and array.ndim == 1 and array.layout == "C"
                and array.dtype == types.float32):
            return None
    if not isinstance(lanes, types.IntegerLiteral) or lanes.literal_value not in _LOOK_UP:
        return None
    width = lanes.literal_value

    def codegen(context, builder, sig, args):
        f32, i32 = ir.FloatType(), ir.IntType(32)
        floats, ints = ir.VectorType(f32, width), ir.VectorType(i32, width)
        suffix = f"v{width}f32"

        def place(array_type, array):
            data = context.make_array(array_type)(context, builder, array).data
            return builder.bitcast(builder.gep(data, [args[2]]), floats.as_pointer())

        def ints_of(value):
            return _splat(i32, width, int(value))

        fma = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(floats, [floats] * 3), f"llvm.fma.{suffix}")
        fabs = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(floats, [floats]), f"llvm.fabs.{suffix}")
        x = builder.load(place(sig.args[0], args[0]), align=4)
        bits = builder.bitcast(x, ints)
        part = builder.and_(bits, ints_of(_PART))
        k = builder.sub(part, ints_of(_FIRST))
        k = builder.select(builder.icmp_signed(">", k, ints_of(0)), k, ints_of(0))
        k = builder.select(builder.icmp_signed("<", k, ints_of(_LAST)), k, ints_of(_LAST))
        look_up = _LOOK_UP[width](builder, builder.ashr(k, ints_of(21)))
        y = builder.fsub(builder.call(fabs, [x]), look_up(_B))
        r = builder.call(fma, [look_up(_C6), y, look_up(_C5)])
        for column in (_C4, _C3, _C2, _C1, _C0):
            r = builder.call(fma, [r, y, look_up(column)])
        r = builder.select(builder.icmp_signed(">", part, ints_of(_HUGE)),
                           _splat(f32, width, 1.0), r)
        r = builder.select(builder.icmp_signed("<", bits, ints_of(0)),
                           builder.fneg(builder.call(fabs, [r])), r)
        r = builder.select(builder.fcmp_unordered("uno", x, x), _splat(f32, width, float(_NAN)),
                           r)
        builder.store(r, place(sig.args[1], args[1]), align=4)
        return context.get_dummy_value()

    return types.void(source, out, types.intp, lanes), codegen


@njit(cache=True, nogil=True)
def tanh_into_loop(source, out, count):
    """out[:count] = tanh32(source[:count]) (1-D; a loop of its own, so it vectorises, its
    table loads made gathers)."""
    for k in range(count):
        out[k] = tanh32(source[k])


@njit(cache=True, nogil=True, inline="always")
def _by_lanes(source, out, count, lanes):
    done = count - count % lanes
    for start in range(0, done, lanes):
        _tanh_lanes(source, out, start, lanes)
    tanh_into_loop(source[done:count], out[done:count], count - done)  # the tail, one by one


@njit(cache=True, nogil=True)
def tanh_into_16(source, out, count):
    """out[:count] = tanh32(source[:count]) (1-D), 16 values at a time (AVX-512 only)."""
    _by_lanes(source, out, count, 16)


@njit(cache=True, nogil=True)
def tanh_into_8(source, out, count):
    """out[:count] = tanh32(source[:count]) (1-D), 8 values at a time (AVX2 only)."""
    _by_lanes(source, out, count, 8)


def vector_features() -> frozenset[str]:
    """Which of avx512f and avx2 numba compiles for here: its host CPU's, or those named by
    NUMBA_CPU_FEATURES when NUMBA_CPU_NAME or it is set."""
    from llvmlite import binding
    from numba.core import config

    if config.CPU_NAME or config.CPU_FEATURES:
        named = (config.CPU_FEATURES or "").split(",")
        return frozenset(f for f in ("avx512f", "avx2") if f"+{f}" in named)
    host = binding.get_host_cpu_features()
    return frozenset(f for f in ("avx512f", "avx2") if host.get(f, False))


def loops() -> dict[str, object]:
    """Every loop this CPU can run, the kernels' first: by 16 lanes (AVX-512), by 8 (AVX2), or
    the vectorised loop."""
    features = vector_features()
    found = {"16 lanes": tanh_into_16} if "avx512f" in features else {}
    if "avx2" in features:
        found["8 lanes"] = tanh_into_8
    return {**found, "loop": tanh_into_loop}


# The loop the kernels run: the widest this CPU has.
tanh_into = next(iter(loops().values()))


@njit(cache=True, nogil=True)
def tanh32_array(x, out):
    """out = tanh32(x) by the loop the kernels run (`tanh_into`; flat arrays)."""
    tanh_into(x, out, x.size)


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
    try:
        tanh32_array(x, out)
    except Exception:  # noqa: BLE001 (a numba or LLVM that cannot build the loop: kernels off)
        return False
    expected = np.tanh(x)
    return bool(np.array_equal(out.view(np.uint32), expected.view(np.uint32)))
