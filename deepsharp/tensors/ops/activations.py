"""Activation primitives. Each is one primitive because ONNX has an operator of the same name
(SiLU excepted, written as x * Sigmoid(x)) and a fused kernel is faster than its composition."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy.special import erf, expit

from deepsharp.compiled import kernel
from deepsharp.tensors.primitives import primitive

_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_INV_SQRT_2 = 1.0 / math.sqrt(2.0)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)


@primitive("relu")
class Relu:
    def forward(a):
        out = np.maximum(a, 0)
        return out, None

    def backward(grad, saved, a):
        return (grad * (a > 0),)


@primitive("sigmoid")
class Sigmoid:
    def forward(a):
        out = expit(a)
        return out, out

    def backward(grad, out, a):
        return (grad * out * (1 - out),)


@primitive("tanh")
class Tanh:
    def forward(a):
        out = np.tanh(a)
        return out, out

    def backward(grad, out, a):
        return (grad * (1 - out * out),)


# erf(x) ~ x P(x^2) / Q(x^2) on x clipped to [-4, 4] (beyond, erf is +-1 in float32): Eigen's
# float32 rational approximation. Its largest error against float64 erf is 4.5e-7 (tested over
# [-6, 6]), about 4 float32 units in the last place of a value near 1; it runs in 24 vectorised
# passes, 2.6x faster than scipy's erf (about 21 ns a value, which has no vectorised kernel).
_ERF_NUMERATOR = np.array([-2.72614225801306e-10, 2.77068142495902e-08, -2.10102402082508e-06,
                           -5.69250639462346e-05, -7.34990630326855e-04, -2.95459980854025e-03,
                           -1.60960333262415e-02], np.float32)
_ERF_DENOMINATOR = np.array([-1.45660718464996e-05, -2.13374055278905e-04, -1.68282697438203e-03,
                             -7.37332916720468e-03, -1.42647390514189e-02], np.float32)
ERF32_MAX_ERROR = 4.5e-7


# Elementwise chains of many passes run block by block: a block of this many float32 values
# (256 KB) and its temporaries stay in the core's cache between passes (measured 2.4x faster
# than whole-array passes at a transformer's 2M values).
BLOCK = 1 << 16


def blocks(size: int) -> list[slice]:
    return [slice(start, min(start + BLOCK, size)) for start in range(0, size, BLOCK)]


# The constants as 0-d float32 arrays: the same values and the same float32 arithmetic, but
# numpy's clip with Python float bounds runs a slow loop (2.4x slower over a block, measured) and
# a Python float or numpy scalar operand adds call overhead. The Horner steps numerator and
# denominator share run stacked, (c_numerator, c_denominator) a column each: one call per step
# for both (21 numpy calls a block of GELU instead of 28).
def _f32(value: float) -> np.ndarray:
    return np.array(value, np.float32)


_C = {name: _f32(v) for name, v in (
    ("inv_sqrt_2", _INV_SQRT_2), ("low", -4.0), ("high", 4.0), ("half", 0.5),
    ("n0", _ERF_NUMERATOR[0]), ("n1", _ERF_NUMERATOR[1]), ("n2", _ERF_NUMERATOR[2]),
    ("d0", _ERF_DENOMINATOR[0]))}
_ERF_COLUMNS = [np.array([[a], [b]], np.float32)
                for a, b in zip(_ERF_NUMERATOR[3:], _ERF_DENOMINATOR[1:])]
# GELU's Phi = (erf + 1) / 2 = erf / 2 + 1/2, and erf / 2 = p v / (2 q): the denominator's
# coefficients doubled make 2 q exactly (a power of two commutes with every float32 rounding), so
# Phi takes one pass (+ 1/2) where (+ 1) then (* 1/2) took two, with the same float32 numbers (an
# erf so small that its half would round is lost in + 1/2 either way).
_C["d0_twice"] = _f32(2 * _ERF_DENOMINATOR[0])
_HALF_ERF_COLUMNS = [np.array([[a], [2 * b]], np.float32)
                     for a, b in zip(_ERF_NUMERATOR[3:], _ERF_DENOMINATOR[1:])]


def _erf32_block(v: np.ndarray, out: np.ndarray, z: np.ndarray, pq: np.ndarray,
                 d0: np.ndarray = _C["d0"], columns: list = _ERF_COLUMNS) -> None:
    """erf32 of one block of float32 values v into `out` (which may be v), with work buffers z
    and pq (2, n): v clipped to [-4, 4], then Horner's rule in z = v^2, the numerator p's first
    steps alone, then p and the denominator q stacked (q's first step b0 z is z b0, the same
    product), then p v / q. (With the doubled denominator's d0 and columns: erf32 / 2.)"""
    np.clip(v, _C["low"], _C["high"], out=out)
    np.multiply(out, out, out=z)
    p = pq[0]
    np.multiply(z, _C["n0"], out=p)
    np.add(p, _C["n1"], out=p)
    np.multiply(p, z, out=p)
    np.add(p, _C["n2"], out=p)
    np.multiply(p, z, out=p)  # the first stacked step's products, each into its row: q's
    np.multiply(z, d0, out=pq[1])  # written, not filled with b0 and then multiplied
    np.add(pq, columns[0], out=pq)
    for column in columns[1:]:
        np.multiply(pq, z, out=pq)
        np.add(pq, column, out=pq)
    np.multiply(p, out, out=p)
    np.divide(p, pq[1], out=out)


def _by_blocks(size: int, dtype, block: Any) -> None:
    """block(part, z, pq) for each block of `size` values, with work buffers made once."""
    n = min(BLOCK, size)
    z, pq = np.empty(n, dtype), np.empty((2, n), dtype)
    for part in blocks(size):
        m = part.stop - part.start
        block(part, z[:m], pq[:, :m])


def erf32(x: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """erf of float32 values by the rational approximation above (into `out` if given; `out`
    may be `x`)."""
    flat = x.reshape(-1)
    result = np.empty_like(flat) if out is None else out.reshape(-1)
    _by_blocks(flat.size, flat.dtype,
               lambda part, z, pq: _erf32_block(flat[part], result[part], z, pq))
    return result.reshape(x.shape)


def _gelu_erf32_block(x: np.ndarray, c: np.ndarray, out: np.ndarray, z: np.ndarray,
                      pq: np.ndarray) -> None:
    """GELU of one block of float32 values x: c = Phi(x) = (erf32(x / sqrt 2) + 1) / 2, taken as
    erf32 / 2 + 1/2 (the same numbers, above), and out = x c, with erf32's work buffers z and
    pq."""
    np.multiply(x, _C["inv_sqrt_2"], out=c)
    _erf32_block(c, c, z, pq, _C["d0_twice"], _HALF_ERF_COLUMNS)
    np.add(c, _C["half"], out=c)
    np.multiply(x, c, out=out)


def gelu_erf32(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """GELU of float32 values (x Phi(x), Phi by erf32) and Phi(x), block by block with work
    buffers made once; the compiled kernel inside `compiled()` (the same operations)."""
    flat = np.ascontiguousarray(a).reshape(-1)
    cdf, out = np.empty_like(flat), np.empty_like(flat)
    compiled = kernel("gelu_erf32")
    if compiled is not None:  # the same operations in one pass (deepsharp.compiled)
        compiled(flat, cdf, out)
        return out.reshape(a.shape), cdf.reshape(a.shape)
    _by_blocks(flat.size, flat.dtype, lambda part, z, pq: _gelu_erf32_block(
        flat[part], cdf[part], out[part], z, pq))
    return out.reshape(a.shape), cdf.reshape(a.shape)


@primitive("gelu")
class Gelu:
    """x * Phi(x) (approximate=0), or the tanh form 0.5 x (1 + tanh(sqrt(2/pi)(x + 0.044715 x^3)))
    (approximate=1), as PyTorch's `gelu` and ONNX's `Gelu`. Float32 values take erf32 (above),
    block by block; float64 values scipy's erf."""

    def forward(a, *, approximate):
        if approximate:
            inner = _SQRT_2_OVER_PI * (a + 0.044715 * a ** 3)
            t = np.tanh(inner)
            return (0.5 * a * (1 + t)).astype(a.dtype), t
        if a.dtype != np.float32:
            cdf = erf(a * _INV_SQRT_2)
            cdf += 1
            cdf *= 0.5
            return (a * cdf).astype(a.dtype, copy=False), cdf
        return gelu_erf32(a)

    def backward(grad, saved, a, *, approximate):
        if approximate:
            t = saved
            d_inner = _SQRT_2_OVER_PI * (1 + 3 * 0.044715 * a * a)
            d = 0.5 * (1 + t) + 0.5 * a * (1 - t * t) * d_inner
            d *= grad
            return (d.astype(a.dtype, copy=False),)
        # Phi(x) + x phi(x), in place over one buffer, block by block
        flat, cdf = np.ascontiguousarray(a).reshape(-1), saved.reshape(-1)
        g = np.ascontiguousarray(grad).reshape(-1)
        d = np.empty_like(flat)
        exponent, finish = kernel("gelu_grad_exponent"), kernel("gelu_grad_finish")
        if exponent is not None and flat.dtype == np.float32 and g.dtype == np.float32:
            for part in blocks(flat.size):  # the same operations, numpy's exp between two passes
                exponent(flat[part], d[part])
                np.exp(d[part], out=d[part])
                finish(flat[part], cdf[part], g[part], d[part])
            return (d.reshape(a.shape),)
        for part in blocks(flat.size):
            x, b = flat[part], d[part]
            np.multiply(x, x, out=b)
            b *= -0.5
            np.exp(b, out=b)
            b *= x
            b *= _INV_SQRT_2PI
            b += cdf[part]
            b *= g[part]
        return (d.reshape(a.shape).astype(a.dtype, copy=False),)


@primitive("silu")
class Silu:
    def forward(a):
        s = expit(a)
        return a * s, s

    def backward(grad, s, a):
        return (grad * (s * (1 + a * (1 - s))),)


@primitive("elu")
class Elu:
    def forward(a, *, alpha):
        neg = alpha * np.expm1(np.minimum(a, 0))
        return np.where(a > 0, a, neg).astype(a.dtype), neg

    def backward(grad, neg, a, *, alpha):
        return (grad * np.where(a > 0, 1, neg + alpha).astype(a.dtype),)


@primitive("leaky_relu")
class LeakyRelu:
    def forward(a, *, slope):
        return np.where(a > 0, a, a * slope).astype(a.dtype), None

    def backward(grad, saved, a, *, slope):
        return (grad * np.where(a > 0, 1, slope).astype(a.dtype),)


@primitive("softplus")
class Softplus:
    """log(1 + e^x), computed as max(x, 0) + log1p(e^-|x|) so it never overflows."""

    def forward(a):
        return _softplus(a).astype(a.dtype), None

    def backward(grad, saved, a):
        return (grad * expit(a),)


@primitive("hardtanh")
class Hardtanh:
    """x clipped to [low, high], as PyTorch's hardtanh (relu6 is hardtanh(0, 6)): its gradient
    is 1 strictly between the bounds and 0 at them (clamp's is 1 at them)."""

    def forward(a, *, low, high):
        return np.minimum(np.maximum(a, a.dtype.type(low)), a.dtype.type(high)), None

    def backward(grad, saved, a, *, low, high):
        # 0 at a NaN too, as PyTorch's vectorised loop gives (its scalar tail passes the
        # gradient: at NaN PyTorch's answer depends on the place in the tensor)
        return (grad * ((a > low) & (a < high)),)


def _along(w: np.ndarray, axis: int, ndim: int) -> np.ndarray:
    """w (1 or C values) shaped to broadcast along `axis` of a rank-`ndim` value."""
    if w.size == 1 or ndim == 0:
        return w.reshape(())
    shape = [1] * ndim
    shape[axis % ndim] = w.size
    return w.reshape(shape)


@primitive("prelu")
class Prelu:
    """x where x > 0, else w * x, as PyTorch's prelu: w holds one value or one per channel of
    `axis` (PyTorch's F.prelu: axis 1; the prelu layer: the last). The gradient of x is w where
    x > 0 fails (0, below, NaN), of w the sum of x * grad there, PyTorch's."""

    def forward(a, w, *, axis):
        return np.where(a > 0, a, _along(w, axis, a.ndim) * a).astype(a.dtype), None

    def backward(grad, saved, a, w, *, axis):
        above = a > 0  # PyTorch's test: a NaN takes the slope's side
        da = grad * np.where(above, 1, _along(w, axis, a.ndim))
        terms = np.where(above, 0, a * grad)
        if w.size == 1 or a.ndim == 0:
            dw = terms.sum().reshape(w.shape)
        else:
            keep = axis % a.ndim
            dw = terms.sum(axis=tuple(i for i in range(a.ndim) if i != keep)).reshape(w.shape)
        return da.astype(a.dtype), dw.astype(w.dtype)


def _softplus(a: np.ndarray) -> np.ndarray:
    return np.maximum(a, 0) + np.log1p(np.exp(-np.abs(a)))


@primitive("mish")
class Mish:
    """x * tanh(softplus(x)), as PyTorch's mish and ONNX's Mish."""

    def forward(a):
        t = np.tanh(_softplus(a))
        return (a * t).astype(a.dtype), t

    def backward(grad, t, a):
        return ((grad * (t + a * (1 - t * t) * expit(a))).astype(a.dtype),)


@primitive("hard_sigmoid")
class HardSigmoid:
    """min(max(x + 3, 0), 6) / 6, as PyTorch's hardsigmoid (and Keras 3's hard_sigmoid): its
    gradient 1/6 strictly between -3 and 3, 0 elsewhere."""

    def forward(a):
        return (np.minimum(np.maximum(a + 3, 0), 6) / 6).astype(a.dtype), None

    def backward(grad, saved, a):
        return ((grad * ((a > -3) & (a < 3)) / 6).astype(a.dtype),)


@primitive("hard_swish")
class HardSwish:
    """x * min(max(x + 3, 0), 6) / 6, as PyTorch's hardswish (Keras 3's hard_silu): its
    gradient, PyTorch 2.13's, 0 up to -3 (included), x / 3 + 1/2 strictly between -3 and 3, 1
    from 3 (included)."""

    def forward(a):
        return (a * np.minimum(np.maximum(a + 3, 0), 6) / 6).astype(a.dtype), None

    def backward(grad, saved, a):
        # NaN at a NaN, as PyTorch's vectorised loop gives (its scalar tail gives 1)
        d = np.where(a <= -3, 0, np.where(a >= 3, 1, a / 3 + 0.5))
        return ((grad * d).astype(a.dtype),)


def _softmax(a: np.ndarray, axis: int) -> np.ndarray:
    # (the reductions a.max and e.sum call, without their Python frames: the same numbers)
    shifted = a - np.maximum.reduce(a, axis=axis, keepdims=True)
    e = np.exp(shifted)
    return e / np.add.reduce(e, axis=axis, keepdims=True)


@primitive("softmax")
class Softmax:
    def forward(a, *, axis):
        out = a.copy() if 0 in a.shape else _softmax(a, axis)  # nothing to weigh: as PyTorch
        return out, out

    def backward(grad, out, a, *, axis):
        return (out * (grad - (grad * out).sum(axis=axis, keepdims=True)),)


@primitive("log_softmax")
class LogSoftmax:
    def forward(a, *, axis):
        if 0 in a.shape:  # nothing to weigh: an empty answer, as PyTorch's
            return a.copy(), a.copy()
        shifted = a - a.max(axis=axis, keepdims=True)
        out = shifted - np.log(np.exp(shifted).sum(axis=axis, keepdims=True))
        return out, out

    def backward(grad, out, a, *, axis):
        return (grad - np.exp(out) * grad.sum(axis=axis, keepdims=True),)


@primitive("dropout")
class Dropout:
    """x * keep / (1 - rate): `keep` is a bool mask drawn by the caller from its named stream.
    Only training runs call it; a tracer refuses it (a random mask would be frozen)."""

    def forward(a, keep, *, rate):
        scale = np.asarray(1.0 / (1.0 - rate), dtype=a.dtype)
        return a * keep * scale, scale

    def backward(grad, scale, a, keep, *, rate):
        return grad * keep * scale, None
