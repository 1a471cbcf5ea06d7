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


SYMBOLS = {"&": ("bitwise_and", "logical_and"), "|": ("bitwise_or", "logical_or"),
           "^": ("bitwise_xor", "logical_xor"), "~": ("bitwise_not", "logical_not")}  # (PyTorch's)


def bitwise(symbol: str, *operands: Any) -> Tensor:
    """PyTorch's `&`, `|`, `^` and `~` (and `bitwise_and`, ...): logical where every operand is a
    bool tensor or a bool (the result a bool tensor), else bitwise on integers, the operands
    promoted together as PyTorch promotes them (a bool reads as 0 or 1; a Python integer takes
    the tensor's type); a float operand is refused, as PyTorch refuses it."""
    tensors = [as_tensor(t) for t in operands]
    for given, t in zip(operands, tensors):
        if t.dtype.kind not in "biu" or isinstance(given, float):
            what = f"a {t.dtype} tensor" if isinstance(given, Tensor) else repr(given)
            raise OpError(f"{symbol} on {what}: PyTorch's bitwise operators take integers and "
                          f"bools only (for the truth of floats use logical_and/or/xor/not, "
                          f"which read non-zero as True)")
    bitwise_op, logical_op = SYMBOLS[symbol]
    if all(t.dtype == np.bool_ for t in tensors):
        return apply(logical_op, *operands)
    return apply(bitwise_op, *operands)
