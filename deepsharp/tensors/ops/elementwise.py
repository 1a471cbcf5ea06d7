"""Elementwise primitives with numpy broadcasting: arithmetic and the plain functions."""

from __future__ import annotations

import numpy as np

from deepsharp.tensors.primitives import primitive, unbroadcast


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
    """a ** b; the exponent's gradient a**b * log(a) is taken only where a > 0."""

    def forward(a, b):
        out = np.power(a, b)
        return out, out

    def backward(grad, out, a, b):
        ga = grad * b * np.power(a, b - 1)
        with np.errstate(divide="ignore", invalid="ignore"):
            gb = np.where(a > 0, grad * out * np.log(np.where(a > 0, a, 1)), 0)
        return unbroadcast(ga, a.shape), unbroadcast(gb.astype(out.dtype), b.shape)


@primitive("maximum")
class Maximum:
    """Elementwise max; a tie sends half the gradient to each side (as PyTorch)."""

    def forward(a, b):
        return np.maximum(a, b), None

    def backward(grad, saved, a, b):
        share = np.where(a > b, 1.0, np.where(a == b, 0.5, 0.0)).astype(grad.dtype)
        return unbroadcast(grad * share, a.shape), unbroadcast(grad * (1 - share), b.shape)


@primitive("minimum")
class Minimum:
    def forward(a, b):
        return np.minimum(a, b), None

    def backward(grad, saved, a, b):
        share = np.where(a < b, 1.0, np.where(a == b, 0.5, 0.0)).astype(grad.dtype)
        return unbroadcast(grad * share, a.shape), unbroadcast(grad * (1 - share), b.shape)


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
    def forward(a):
        out = np.sqrt(a)
        return out, out

    def backward(grad, out, a):
        return (grad / (2 * out),)


@primitive("abs")
class Abs:
    def forward(a):
        return np.abs(a), None

    def backward(grad, saved, a):
        return (grad * np.sign(a),)


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
