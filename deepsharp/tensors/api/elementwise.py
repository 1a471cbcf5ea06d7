"""Elementwise functions with PyTorch's arguments: clamp (tensor or number bounds, either one
optional), comparisons and logical functions giving bool tensors, pow with a tensor exponent."""

from __future__ import annotations

from typing import Any

import numpy as np

from deepsharp.errors import OpError
from deepsharp.tensors import keywords as kw, modes
from deepsharp.tensors.tensor import Tensor, apply, as_tensor


def clamp(x: Tensor, min: Any = None, max: Any = None, *, a_min: Any = None,
          a_max: Any = None) -> Tensor:
    """min(max(x, min), max): bounds are numbers or tensors (broadcast), either may be None.
    The gradient reaches x where min <= x <= max (PyTorch's rule at the bounds)."""
    low = kw.either("clamp", "min", min, "a_min", a_min)
    high = kw.either("clamp", "max", max, "a_max", a_max)
    if low is None and high is None:
        raise OpError("clamp: give min, max or both")
    bounds = [_bound(x, b) for b in (low, high) if b is not None]
    return apply("clamp", x, *bounds, has_low=int(low is not None), has_high=int(high is not None))


def _bound(x: Tensor, bound: Any) -> Tensor:
    if isinstance(bound, Tensor):
        return bound
    try:
        given = np.asarray(bound)
        if given.dtype.kind not in "iubf":
            raise TypeError
        # a number takes x's type unless its kind is higher (PyTorch's: a float bound of an
        # integer clamp is the default float type, an integer bound of a bool one int64)
        if x.dtype.kind == "f" or given.dtype.kind == "b" or x.dtype.kind in "iu" and \
                given.dtype.kind in "iu":
            return Tensor(np.asarray(bound, dtype=x.dtype))
        return Tensor(np.asarray(bound, dtype=modes.default_float() if given.dtype.kind == "f"
                                 else np.int64))
    except (TypeError, ValueError):
        raise OpError(f"clamp: a bound must be a number or a tensor, received {bound!r}") from None


def comparable(other: Any) -> bool:
    """Whether `other` can stand on the other side of a comparison (else NotImplemented, and
    Python's own == falls back to identity)."""
    return isinstance(other, (Tensor, np.ndarray, np.generic, int, float, bool, list, tuple))


def bool_only(op: str, a: Tensor, b: Any = None) -> None:
    """`&`, `|`, `^` and `~` are logical on bool tensors (PyTorch's bitwise operators on integer
    tensors are not supported)."""
    for t in (a, b):
        if t is not None and as_tensor(t).dtype != np.bool_:
            raise OpError(f"{op} on a {as_tensor(t).dtype} tensor: the operators & | ^ ~ are "
                          f"supported on bool tensors only (PyTorch's bitwise meaning on integers "
                          f"is not); use logical_and/or/xor/not, which read non-zero as True")
