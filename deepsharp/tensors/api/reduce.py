"""Reductions, as PyTorch's: `x.max(dim)` gives (values, indices), `x.max()` the largest value,
`amax`/`amin` the values over any axes; `var` and `std` are unbiased unless told
(`correction=0`, `unbiased=False` or numpy's `ddof=0`)."""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from deepsharp.errors import OpError
from deepsharp.tensors import keywords as kw
from deepsharp.tensors.tensor import Tensor, apply


class ValuesIndices(NamedTuple):
    """What `max(dim)`, `min(dim)`, `topk` and `sort` return (PyTorch's return types)."""

    values: Tensor
    indices: Tensor


def _over(op: str, primitive: str, x: Tensor, dim: Any, keepdim: Any, axis: Any, keepdims: Any,
          **attrs: Any) -> Tensor:
    axes = kw.dims(op, dim, axis, x.ndim)
    return apply(primitive, x, axes=axes, keepdims=int(kw.keep(op, keepdim, keepdims)), **attrs)


def cast_first(x: Tensor, dtype: Any) -> Tensor:
    """x cast to `dtype` first when one is given (PyTorch's `dtype=` of sum, mean, prod, cumsum,
    cumprod, softmax and log_softmax: "the input is cast to dtype before the operation")."""
    return x if dtype is None else x.to(dtype)


def sum(x, dim=None, keepdim=None, *, axis=None, keepdims=None, dtype=None):
    """The sum over `dim` (every axis when None)."""
    return _over("sum", "sum", cast_first(x, dtype), dim, keepdim, axis, keepdims)


def mean(x, dim=None, keepdim=None, *, axis=None, keepdims=None, dtype=None):
    x = cast_first(x, dtype)
    kw.floating("mean", x)
    return _over("mean", "mean", x, dim, keepdim, axis, keepdims)


def amax(x, dim=None, keepdim=None, *, axis=None, keepdims=None):
    """The largest values over `dim` (ties share the gradient equally)."""
    return _over("amax", "max", x, dim, keepdim, axis, keepdims)


def amin(x, dim=None, keepdim=None, *, axis=None, keepdims=None):
    return _over("amin", "min", x, dim, keepdim, axis, keepdims)


def _extreme(op: str, x, dim, keepdim, axis, keepdims):
    """max/min as PyTorch: of everything, against another tensor, or (values, indices) along one
    dim."""
    if isinstance(dim, (Tensor, np.ndarray, float, np.floating)):
        if keepdim is not None or axis is not None or keepdims is not None:
            raise OpError(f"{op}(other) takes no dim or keepdim")
        return apply("maximum" if op == "max" else "minimum", x, dim)
    given = kw.either(op, "dim", dim, "axis", axis)
    if given is None:
        if kw.keep(op, keepdim, keepdims):
            raise OpError(f"{op}: keepdim needs a dim (PyTorch's {op}() of everything gives a "
                          f"0-d tensor)")
        return apply("max" if op == "max" else "min", x, axes=tuple(range(x.ndim)), keepdims=0)
    if isinstance(given, (tuple, list)):
        raise OpError(f"{op}: dim must be one integer, received {given!r} (PyTorch's {op}(dim) "
                      f"gives values and indices along one axis; amax/amin take several)")
    at, keep = kw.axis(op, given, x.ndim), int(kw.keep(op, keepdim, keepdims))
    if x.ndim == 0:  # dim 0 or -1 of a 0-d tensor: (the value, index 0) either way, as PyTorch
        x, keep = x.reshape(1), 0
    values, indices = apply(f"{op}_along", x, axis=at, keepdims=keep)
    return ValuesIndices(values, indices)


def max(x, dim=None, keepdim=None, *, axis=None, keepdims=None):
    """`x.max()`: the largest value (0-d); `x.max(dim)`: (values, indices) along dim, the first
    of equal values, the gradient to it alone; `x.max(other)`: the elementwise maximum."""
    return _extreme("max", x, dim, keepdim, axis, keepdims)


def min(x, dim=None, keepdim=None, *, axis=None, keepdims=None):
    return _extreme("min", x, dim, keepdim, axis, keepdims)


def _arg(op: str, x, dim, keepdim, axis, keepdims):
    given = kw.one_dim(op, dim, axis, x.ndim)
    keep = int(kw.keep(op, keepdim, keepdims))
    if given is None:
        return apply(op, x, axis=0, flat=1, keepdims=keep)
    return apply(op, x, axis=given, flat=0, keepdims=keep)


def argmax(x, dim=None, keepdim=None, *, axis=None, keepdims=None):
    """The index of the largest value along `dim` (the first of equal ones); of the flattened
    values when dim is None."""
    return _arg("argmax", x, dim, keepdim, axis, keepdims)


def argmin(x, dim=None, keepdim=None, *, axis=None, keepdims=None):
    return _arg("argmin", x, dim, keepdim, axis, keepdims)


def prod(x, dim=None, keepdim=None, *, axis=None, keepdims=None, dtype=None):
    return _over("prod", "prod", cast_first(x, dtype), dim, keepdim, axis, keepdims)


def _correction(op: str, unbiased: Any, correction: Any, ddof: Any) -> float:
    given = {k: v for k, v in (("unbiased", unbiased), ("correction", correction),
                               ("ddof", ddof)) if v is not None}
    if len(given) > 1:
        raise OpError(f"{op}: give one of unbiased, correction and ddof, received "
                      f"{', '.join(f'{k}={v!r}' for k, v in given.items())}")
    if unbiased is not None:
        return 1.0 if kw.flag(op, "unbiased", unbiased) else 0.0
    if correction is not None:
        return kw.number(op, "correction", correction)
    return 1.0 if ddof is None else kw.number(op, "ddof", ddof)


def var(x, dim=None, unbiased=None, keepdim=None, *, correction=None, axis=None, keepdims=None,
        ddof=None):
    """sum((x - mean)^2) / (n - correction): correction 1 (unbiased) unless given, as PyTorch;
    numpy's `ddof` is the same number (numpy's default, 0, is not)."""
    if isinstance(dim, bool):  # PyTorch's old var(unbiased) overload
        dim, unbiased = None, dim if unbiased is None else unbiased
    kw.floating("var", x)
    return _over("var", "var", x, dim, keepdim, axis, keepdims,
                 correction=_correction("var", unbiased, correction, ddof))


def std(x, dim=None, unbiased=None, keepdim=None, *, correction=None, axis=None, keepdims=None,
        ddof=None):
    """sqrt(var(...)), with var's arguments; the gradient is zero where the deviation is zero
    (PyTorch's std: all values equal give 0, not NaN)."""
    return apply("sqrt", var(x, dim, unbiased, keepdim, correction=correction, axis=axis,
                             keepdims=keepdims, ddof=ddof), zero_at_zero=1)


def logsumexp(x, dim=None, keepdim=None, *, axis=None, keepdims=None):
    """log(sum(exp(x))) over `dim`, computed stably."""
    return _over("logsumexp", "logsumexp", x, dim, keepdim, axis, keepdims)


def all(x, dim=None, keepdim=None, *, axis=None, keepdims=None):
    return _over("all", "all", x, dim, keepdim, axis, keepdims)


def any(x, dim=None, keepdim=None, *, axis=None, keepdims=None):
    return _over("any", "any", x, dim, keepdim, axis, keepdims)


def _scan(op: str, x, dim, axis):
    given = kw.one_dim(op, dim, axis, x.ndim)
    if given is None:
        raise OpError(f"{op}: give dim (PyTorch requires it; numpy's flattening when axis is "
                      f"None is not done)")
    if x.ndim == 0:
        return apply(op, x.reshape(1), axis=0).reshape(())
    return apply(op, x, axis=given)


def cumsum(x, dim=None, *, axis=None, dtype=None):
    """Running sums along `dim` (bool and integer values sum as int64)."""
    return _scan("cumsum", cast_first(x, dtype), dim, axis)


def cumprod(x, dim=None, *, axis=None, dtype=None):
    return _scan("cumprod", cast_first(x, dtype), dim, axis)


__all__ = ["ValuesIndices", "all", "amax", "amin", "any", "argmax", "argmin", "cumprod", "cumsum",
           "logsumexp", "max", "mean", "min", "prod", "std", "sum", "var"]
