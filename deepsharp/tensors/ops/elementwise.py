"""Elementwise primitives with numpy broadcasting: arithmetic and the plain functions."""

from __future__ import annotations

import numpy as np

from deepsharp.tensors.primitives import primitive, unbroadcast


def sign_of(a: np.ndarray) -> np.ndarray:
    """-1, 0 or 1, and 0 at NaN (PyTorch's sign and sgn; numpy's sign gives NaN there); a
    bool's is itself, as PyTorch's."""
    if a.dtype == np.bool_:
        return a.copy()
    out = np.sign(a)
    return np.where(np.isnan(out), out.dtype.type(0), out) if out.dtype.kind == "f" else out


@primitive("add")
class Add:
    def forward(a, b):
        return a + b, None

    def backward(grad, saved, a, b):
        return unbroadcast(grad, a.shape), unbroadcast(grad, b.shape)


@primitive("sub")
class Sub:
    def forward(a, b):
        return a - b, None

    def backward(grad, saved, a, b):
        return unbroadcast(grad, a.shape), unbroadcast(-grad, b.shape)


@primitive("mul")
class Mul:
    def forward(a, b):
        return a * b, None

    def backward(grad, saved, a, b):
        return unbroadcast(grad * b, a.shape), unbroadcast(grad * a, b.shape)


@primitive("div")
class Div:
    def forward(a, b):
        return a / b, None

    def backward(grad, saved, a, b):
        ga = grad / b
        return unbroadcast(ga, a.shape), unbroadcast(-ga * a / b, b.shape)


@primitive("pow")
class Pow:
    """a ** b. Gradients as PyTorch's: the base's b * a**(b-1), zero where b == 0; the
    exponent's a**b * log(a), zero where a == 0 and b >= 0 (NaN where a < 0: log's)."""

    def forward(a, b):
        if a.dtype == np.bool_ and b.dtype == np.bool_:  # a bool, as PyTorch's (numpy's int8)
            out = a | ~b
            return out, out
        out = np.power(a, b)
        return out, out

    def backward(grad, out, a, b):
        zero = np.zeros((), out.dtype)
        with np.errstate(divide="ignore", invalid="ignore"):
            ga = np.where(b == 0, zero, grad * b * np.power(a, b - 1))
            gb = np.where((a == 0) & (b >= 0), zero, grad * out * np.log(a))
        return unbroadcast(ga.astype(out.dtype), a.shape), unbroadcast(gb.astype(out.dtype),
                                                                         b.shape)


@primitive("maximum")
class Maximum:
    """Elementwise max; a tie sends half the gradient to each side (as PyTorch)."""

    def forward(a, b):
        return np.maximum(a, b), None

    def backward(grad, saved, a, b):
        return _shares(grad, a, b, a < b, a > b)


@primitive("minimum")
class Minimum:
    """Elementwise min; a tie sends half the gradient to each side (as PyTorch)."""

    def forward(a, b):
        return np.minimum(a, b), None

    def backward(grad, saved, a, b):
        return _shares(grad, a, b, a > b, a < b)


def _shares(grad, a, b, a_loses, b_loses):
    """The gradient of a max or min: all of it to the side chosen, half to each on a tie, and, as
    PyTorch's rule has it, all of it to both sides where a NaN makes every comparison false."""
    half = np.where(a == b, 0.5, 1.0)
    zero = np.zeros((), grad.dtype)
    return (unbroadcast(np.where(a_loses, zero, grad * half.astype(grad.dtype)), a.shape),
            unbroadcast(np.where(b_loses, zero, grad * half.astype(grad.dtype)), b.shape))


@primitive("where")
class Where:
    """where(condition, a, b): a where the (bool) condition holds, else b."""

    def forward(condition, a, b):
        return np.where(condition, a, b), None

    def backward(grad, saved, condition, a, b):
        zero = np.zeros((), grad.dtype)
        return (None, unbroadcast(np.where(condition, grad, zero), a.shape),
                unbroadcast(np.where(condition, zero, grad), b.shape))


@primitive("neg")
class Neg:
    def forward(a):
        return -a, None

    def backward(grad, saved, a):
        return (-grad,)


@primitive("exp")
class Exp:
    def forward(a):
        out = np.exp(a)
        return out, out

    def backward(grad, out, a):
        return (grad * out,)


@primitive("log")
class Log:
    def forward(a):
        return np.log(a), None

    def backward(grad, saved, a):
        return (grad / a,)


@primitive("sqrt")
class Sqrt:
    """sqrt(a); with `zero_at_zero` (std's root) the gradient is 0 where the root is 0, as in
    PyTorch's std (a plain sqrt's is inf there)."""

    def forward(a, *, zero_at_zero=0):
        out = np.sqrt(a)
        return out, out

    def backward(grad, out, a, *, zero_at_zero=0):
        with np.errstate(divide="ignore"):
            step = grad / (2 * out)
        return (np.where(out == 0, step.dtype.type(0), step) if zero_at_zero else step,)


@primitive("abs")
class Abs:
    def forward(a):
        return np.abs(a), None

    def backward(grad, saved, a):
        return (grad * sign_of(a),)  # zero at NaN, as PyTorch's sgn


@primitive("sin")
class Sin:
    def forward(a):
        return np.sin(a), None

    def backward(grad, saved, a):
        return (grad * np.cos(a),)


@primitive("cos")
class Cos:
    def forward(a):
        return np.cos(a), None

    def backward(grad, saved, a):
        return (-grad * np.sin(a),)


@primitive("copy")
class Copy:
    """A copy of the values (clone, contiguous): the tracer treats it as an alias."""

    def forward(a):
        return a.copy(), None

    def backward(grad, saved, a):
        return (grad,)


@primitive("cast")
class Cast:
    """The values as another dtype (`to` is numpy's dtype string, e.g. '<f4', '<i8')."""

    def forward(a, *, to):
        return a.astype(np.dtype(to)), None

    def backward(grad, saved, a, *, to):
        return (grad.astype(a.dtype) if a.dtype.kind == "f" else None,)
