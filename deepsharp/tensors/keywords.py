"""PyTorch's keywords beside numpy's: `dim` or `axis`, `keepdim` or `keepdims`.

Either spelling may be given, never both (that is an error naming both). Axes are checked against
the rank, as PyTorch and numpy check them: an axis out of range is an error, never wrapped.

    dims("sum", 2, None, ndim=3)        # (2,)
    keep("sum", True, None)             # True
"""

from __future__ import annotations

import operator
from typing import Any, Sequence

import numpy as np

from deepsharp.errors import OpError


def either(op: str, torch_name: str, torch_value: Any, numpy_name: str, numpy_value: Any,
           default: Any = None) -> Any:
    """The value given under PyTorch's or numpy's name (None = not given), else `default`."""
    if torch_value is not None and numpy_value is not None:
        raise OpError(f"{op}: give {torch_name} or {numpy_name}, not both (received "
                      f"{torch_name}={torch_value!r}, {numpy_name}={numpy_value!r})")
    value = torch_value if torch_value is not None else numpy_value
    return default if value is None else value


def floating(op: str, x: Any) -> None:
    """Refuse an integer or bool tensor where PyTorch refuses one (mean, var, softmax, norm)."""
    if x.dtype.kind != "f":
        raise OpError(f"{op}: needs a floating-point tensor, received {x.dtype} (PyTorch "
                      f"refuses it too); convert it with .float()")


def keep(op: str, keepdim: Any, keepdims: Any) -> bool:
    return flag(op, "keepdim", either(op, "keepdim", keepdim, "keepdims", keepdims, False))


def axis(op: str, value: Any, ndim: int) -> int:
    """One axis in 0..ndim-1 (a negative one counts from the end)."""
    value = integer(op, "dim", value)
    extent = max(ndim, 1)  # a 0-d tensor takes dim 0 or -1, as in PyTorch
    if not -extent <= value < extent:
        raise OpError(f"{op}: dim {value} is out of range for a tensor of rank {ndim} "
                      f"(expected {-extent}..{extent - 1})")
    return value % extent if ndim else 0


def has_dims(op: str, ndim: int) -> None:
    """Refuse a 0-d tensor where `op` needs an axis to cut, move along or grow (split, chunk,
    unbind, narrow, roll, repeat_interleave and unflatten along a dim: PyTorch refuses these
    too)."""
    if ndim == 0:
        raise OpError(f"{op}: needs a tensor of rank 1 or more along a dim, received a 0-d "
                      f"tensor (PyTorch refuses it too)")


def dims(op: str, dim: Any, axis_: Any, ndim: int) -> tuple[int, ...]:
    """The axes a reduction runs over, sorted: all of them when neither is given. An empty tuple
    is refused: PyTorch reads it as every axis, numpy as none."""
    value = either(op, "dim", dim, "axis", axis_)
    if value is None:
        return tuple(range(ndim))
    if isinstance(value, (tuple, list)) and not value:
        raise OpError(f"{op}: dim=() reduces every axis in PyTorch and none in numpy; give "
                      f"dim=None for every axis")
    values: Sequence[Any] = value if isinstance(value, (tuple, list)) else (value,)
    found = [axis(op, v, ndim) for v in values]
    if len(set(found)) != len(found):
        raise OpError(f"{op}: dim {tuple(values)!r} names an axis twice")
    return tuple(sorted(found)) if ndim else ()


def one_dim(op: str, dim: Any, axis_: Any, ndim: int, default: Any = None) -> int | None:
    """The one axis an operation runs along (None when neither is given and no default)."""
    value = either(op, "dim", dim, "axis", axis_, default)
    return None if value is None else axis(op, value, ndim)


def flag(op: str, name: str, value: Any) -> bool:
    """A True/False argument (PyTorch takes a bool there; 0 and 1 read as one)."""
    if not isinstance(value, (bool, int, np.bool_, np.integer)) or value not in (0, 1):
        raise OpError(f"{op}: {name} must be True or False, received {value!r}")
    return bool(value)


def integer(op: str, name: str, value: Any) -> int:
    """An integer argument (a numpy integer or a 0-d integer tensor too), never a bool."""
    try:
        if isinstance(value, bool):
            raise TypeError
        return operator.index(value)
    except (TypeError, ValueError):
        raise OpError(f"{op}: {name} must be an integer, received {value!r}") from None


def number(op: str, name: str, value: Any) -> float:
    """A real number argument, as a float."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.number)) \
            or isinstance(value, np.complexfloating):
        raise OpError(f"{op}: {name} must be a number, received {value!r}")
    return float(value)


def tensor_like(op: str, name: str, value: Any) -> Any:
    """An argument whose shape or dtype is taken (expand_as, view_as, type_as): a tensor."""
    if not hasattr(value, "shape") or not hasattr(value, "dtype"):
        raise OpError(f"{op}: {name} must be a tensor, received {type(value).__name__}")
    return value

