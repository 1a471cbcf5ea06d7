"""Argument checks for the public entry points that are not specs (optimizers, schedules).

The rule, the same as the verbs': a bool is not a number, a string is not a number, a float is not
an integer; numpy scalars count as the Python scalars they hold. A wrong type or value is a
SpecError naming the owner, the argument and the value received.

    number("Adam", "lr", 1e-3)        # 0.001
    integer("StepDecay", "every", np.int64(3))   # 3
    flag("SGD", "nesterov", 1)        # SpecError: SGD: nesterov must be True or False, received 1 (int)
"""

from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np

from deepsharp.errors import SpecError


def _received(value: Any) -> str:
    return f"received {value!r} ({type(value).__name__})"


def number(owner: str, name: str, value: Any) -> float:
    """A finite real number as a float."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise SpecError(f"{owner}: {name} must be a number, {_received(value)}")
    result = float(value)
    if not math.isfinite(result):
        raise SpecError(f"{owner}: {name} must be finite, {_received(value)}")
    return result


def integer(owner: str, name: str, value: Any, low: int | None = None) -> int:
    """An integer (Python or numpy, not a bool) as an int, at least `low` if given."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise SpecError(f"{owner}: {name} must be an integer, {_received(value)}")
    if low is not None and int(value) < low:
        bound = "a positive integer" if low == 1 else f"an integer >= {low}"
        raise SpecError(f"{owner}: {name} must be {bound}, {_received(value)}")
    return int(value)


def flag(owner: str, name: str, value: Any) -> bool:
    """True or False (a numpy bool too); 1, 0 and strings are refused."""
    if not isinstance(value, (bool, np.bool_)):
        raise SpecError(f"{owner}: {name} must be True or False, {_received(value)}")
    return bool(value)


def instance(owner: str, name: str, value: Any, kind: type, optional: bool = True) -> Any:
    """`value` if it is a `kind` (or None when optional)."""
    if (value is None and optional) or isinstance(value, kind):
        return value
    what = f"a {kind.__name__}" + (" or None" if optional else "")
    raise SpecError(f"{owner}: {name} must be {what}, {_received(value)}")
