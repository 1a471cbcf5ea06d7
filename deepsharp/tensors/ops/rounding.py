"""Rounding, remainders, erf, norms and the tests for special values, as PyTorch's.

- floor, ceil, round (half to even), trunc: the same type out; integers unchanged; a zero
  gradient (PyTorch's: the result takes part in the graph and passes it nothing).
- remainder (Python's `%`: the sign of the divisor), fmod (C's: the sign of the dividend) and
  floor_divide (`//`, rounding down), by numpy's algorithms, which are PyTorch's (C's fmod, then
  the sign corrected; exact on integers, where a zero divisor is refused as PyTorch refuses it).
  Gradients as PyTorch's: remainder passes grad to a and -grad * (a // b) to b, fmod
  -grad * trunc(a / b) to b, floor_divide nothing.
- erf(x) = 2/sqrt(pi) * integral of exp(-t^2) from 0 to x (scipy's), gradient 2/sqrt(pi) e^-x^2.
- norm over axes, p 1 or 2 (`api.reduce.norm` builds the others): the gradient at a zero norm
  is zero, as PyTorch's.
- isnan, isinf: bool results, no gradient; an integer is neither.
- roll along one axis.
- tan, asin, acos, atan, sinh, cosh, asinh, acosh, atanh: numpy's, with their derivatives.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special

from deepsharp.errors import OpError
from deepsharp.tensors.ops.reduce import _restore
from deepsharp.tensors.primitives import primitive, unbroadcast

ROUNDINGS = {"floor": np.floor, "ceil": np.ceil, "round": np.round, "trunc": np.trunc}


def _rounding(fn):
    class Rounding:
        def forward(a):
            return (fn(a) if a.dtype.kind == "f" else a.copy()), None

        def backward(grad, saved, a):
            return (np.zeros(a.shape, grad.dtype),)

    return Rounding


for _name, _fn in ROUNDINGS.items():
    primitive(_name)(_rounding(_fn))


def _no_zero_divisor(op: str, a: np.ndarray, b: np.ndarray) -> None:
    """Refuse an integer quotient by zero; bools count as the integers 0 and 1 (a False divisor
    of an integer, or of a bool, is a zero one: PyTorch refuses both, numpy gives 0)."""
    if a.dtype.kind in "biu" and b.dtype.kind in "biu" and not np.all(b):
        raise OpError(f"{op}: integer division by zero (PyTorch refuses it too)")


def _remainder(name: str, fn, quotient):
    """a - quotient(a, b) * b: grad to a, -grad * quotient(a, b) to b."""

    class Remainder:
        def forward(a, b):
            _no_zero_divisor(name, a, b)
            return fn(a, b), None

        def backward(grad, saved, a, b):
            return (unbroadcast(grad, a.shape), unbroadcast(-grad * quotient(a, b), b.shape))

    return Remainder


primitive("remainder")(_remainder("remainder", np.remainder, np.floor_divide))
primitive("fmod")(_remainder("fmod", np.fmod, lambda a, b: np.trunc(a / b)))


@primitive("floor_divide")
class FloorDivide:
    def forward(a, b):
        _no_zero_divisor("floor_divide", a, b)
        return np.floor_divide(a, b), None

    def backward(grad, saved, a, b):
        return (np.zeros(a.shape, grad.dtype), np.zeros(b.shape, grad.dtype))


@primitive("erf")
class Erf:
    def forward(a):
        return special.erf(a), None

    def backward(grad, saved, a):
        return (grad * (np.asarray(2 / math.sqrt(math.pi), a.dtype) * np.exp(-a * a)),)


@primitive("norm")
class Norm:
    """sum(|a|) (p = 1) or sqrt(sum(a^2)) (p = 2) over the axes."""

    def forward(a, *, p, axes, keepdims):
        if p == 1:
            out = np.abs(a).sum(axis=axes, keepdims=True)
        else:
            out = np.sqrt((a * a).sum(axis=axes, keepdims=True))
        return (out if keepdims else np.squeeze(out, axis=axes)), out

    def backward(grad, out, a, *, p, axes, keepdims):
        grad = _restore(grad, a.shape, axes, keepdims)
        if p == 1:
            return (grad * np.sign(a),)
        with np.errstate(divide="ignore", invalid="ignore"):
            scaled = np.where(out > 0, a / out, 0).astype(a.dtype)
        return (grad * scaled,)


@primitive("isnan", differentiable=False)
class IsNan:
    def forward(a):
        return (np.isnan(a) if a.dtype.kind == "f" else np.zeros(a.shape, bool)), None


@primitive("isinf", differentiable=False)
class IsInf:
    def forward(a):
        return (np.isinf(a) if a.dtype.kind == "f" else np.zeros(a.shape, bool)), None


@primitive("roll")
class Roll:
    """The entries moved `shift` places along `axis`, wrapping round (numpy's and PyTorch's
    roll, |shift| below the axis's size: api.join.roll reduces it); the gradient rolls back."""

    def forward(a, *, shift, axis):
        return np.roll(a, shift, axis), None

    def backward(grad, saved, a, *, shift, axis):
        return (np.roll(grad, -shift, axis),)


# -- the rest of numpy's (and ONNX's) trigonometric and hyperbolic functions ---------------------
# name: (forward, the derivative from the input a and the result y)
TRIGONOMETRIC = {
    "tan": (np.tan, lambda a, y: 1 + y * y),
    "asin": (np.arcsin, lambda a, y: 1 / np.sqrt(1 - a * a)),
    "acos": (np.arccos, lambda a, y: -1 / np.sqrt(1 - a * a)),
    "atan": (np.arctan, lambda a, y: 1 / (1 + a * a)),
    "sinh": (np.sinh, lambda a, y: np.cosh(a)),
    "cosh": (np.cosh, lambda a, y: np.sinh(a)),
    "asinh": (np.arcsinh, lambda a, y: 1 / np.sqrt(a * a + 1)),
    "acosh": (np.arccosh, lambda a, y: 1 / np.sqrt(a * a - 1)),
    "atanh": (np.arctanh, lambda a, y: 1 / (1 - a * a)),
}


def _trigonometric(fn, derivative):
    class Trigonometric:
        def forward(a):
            y = fn(a)
            return y, y

        def backward(grad, y, a):
            return (grad * derivative(a, y).astype(a.dtype),)

    return Trigonometric


for _name, (_fn, _derivative) in TRIGONOMETRIC.items():
    primitive(_name)(_trigonometric(_fn, _derivative))
