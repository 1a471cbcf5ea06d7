"""SymInt: a size read from a symbolic axis while a trace records.

While a trace records, `x.shape[i]`, `x.size(i)`, `x.size()` and `x.numel()` of a traced tensor
give, for each symbolic axis, a `SymInt`: an `int` whose value is the example's size (so numpy,
`range`, hashing and comparisons see the number) and which carries the size's symbolic
expression (`expr`, the tracer's polynomial over atoms: `deepsharp.tracing.sizes.Poly`).
Arithmetic with integers keeps it (`n - 1`, `2 * n`, `n // 2`, `b * t`, `-n`, `n % 2`), so an
operation given a SymInt (a slice bound, a reshape, `arange`, `zeros`, `x / n`) writes the size the
graph computes at run time instead of the number seen in the traced run.

What would fix the size at the traced one is refused while the trace records, naming the call
(`TraceException`, kind SYMBOLIC_SHAPE): `int(n)`, `float(n)` (and what calls it: `math.sqrt(n)`,
`np.float32(n)`), `n.__index__()`, `n / 2` and arithmetic with floats, `len(x)`, iteration and
`unbind` over a symbolic axis. Outside a trace (after `finish`, or a SymInt kept from an earlier
trace) a SymInt is a plain int.

Library code keeps reading `x._data.shape` (plain numbers) where it means the traced run's size.
"""

from __future__ import annotations

import operator
from typing import Any, Callable

import numpy as np


# Why a loop over a symbolic axis is refused (iteration, unbind).
UNROLLED = ("a loop over the axis runs once per element in the traced run, and the graph would "
            "repeat it that many times at every size; compute over the whole axis with tensor "
            "operations (x.sum(1), x[:, 1:] - x[:, :-1], cumsum, F.lstm), or leave the axis out "
            "of axis_names to make it fixed")


class SymInt(int):
    """An int read from a symbolic axis (see the module docstring). `expr` is the size's
    polynomial (None for a plain number) and `owner` the tracer that read it."""

    expr: Any
    owner: Any

    def __new__(cls, value: int, expr: Any = None, owner: Any = None) -> "SymInt":
        n = super().__new__(cls, int.__int__(value) if isinstance(value, int) else value)
        n.expr = expr
        n.owner = owner
        return n

    @property
    def live(self) -> bool:
        """Whether the size is symbolic in a trace that is recording now."""
        return self.expr is not None and self.owner is not None and self.owner.active()

    def describe(self) -> str:
        """`the size steps-1 (6 in the traced run)`."""
        return f"the size {self.expr} ({int.__int__(self)} in the traced run)"

    def fixed(self, what: str, why: str | None = None) -> None:
        """Refuse `what` (it fixes this size at the traced one) when the trace records."""
        if self.live:
            raise self.owner.fixed_size(self, what, why)

    # -- what fixes the size --------------------------------------------------------------------
    def __int__(self) -> int:
        self.fixed("int()")
        return int.__int__(self)

    def __index__(self) -> int:
        self.fixed("__index__()")
        return int.__int__(self)

    def __float__(self) -> float:
        self.fixed("float() (or a math function, or numpy's float types)")
        return int.__float__(self)

    def __complex__(self) -> complex:
        self.fixed("complex()")
        return complex(int.__int__(self))

    def __truediv__(self, other: Any) -> Any:
        return self._float("/", other, int.__truediv__)

    def __rtruediv__(self, other: Any) -> Any:
        return self._float("/", other, int.__rtruediv__)

    def _float(self, symbol: str, other: Any, fn: Callable[[Any, Any], Any]) -> Any:
        if not isinstance(other, (int, float, np.number)):
            return NotImplemented  # a Tensor: x / n is computed in the graph
        self.fixed(f"'{symbol}' (a true division gives a float)",
                   "divide a tensor by the size (x / n is computed in the graph), or use // "
                   "for an integer size")
        return fn(int.__int__(self), other)

    # -- arithmetic that keeps the expression ---------------------------------------------------
    def _combine(self, other: Any, op: Callable[[Any, Any], Any], symbol: str,
                 reflected: bool = False) -> Any:
        if isinstance(other, (float, np.floating)):
            self.fixed(f"'{symbol}' with the float {other!r}",
                       "compute with tensors (x * n is computed in the graph)")
        if isinstance(other, bool) or not isinstance(other, (int, np.integer)):
            return NotImplemented
        a, b = (other, self) if reflected else (self, other)
        value = op(_plain(a), _plain(b))
        expr_a, expr_b = _expr(a), _expr(b)
        if isinstance(expr_a, int) and isinstance(expr_b, int):
            return value
        return SymInt(value, op(expr_a, expr_b), self.owner if self.expr is not None
                      else getattr(other, "owner", None))

    def __add__(self, o): return self._combine(o, operator.add, "+")
    def __radd__(self, o): return self._combine(o, operator.add, "+", True)
    def __sub__(self, o): return self._combine(o, operator.sub, "-")
    def __rsub__(self, o): return self._combine(o, operator.sub, "-", True)
    def __mul__(self, o): return self._combine(o, operator.mul, "*")
    def __rmul__(self, o): return self._combine(o, operator.mul, "*", True)
    def __floordiv__(self, o): return self._combine(o, operator.floordiv, "//")
    def __rfloordiv__(self, o): return self._combine(o, operator.floordiv, "//", True)
    def __mod__(self, o): return self._combine(o, operator.mod, "%")
    def __rmod__(self, o): return self._combine(o, operator.mod, "%", True)

    def __divmod__(self, o): return self // o, self % o
    def __rdivmod__(self, o): return o // self, o % self

    def __pow__(self, o: Any, modulo: Any = None) -> Any:
        """n ** k for an integer k >= 0 is a product; other powers are plain numbers."""
        if modulo is None and isinstance(o, (int, np.integer)) and not isinstance(o, bool) \
                and 0 <= int(o) <= 8 and self.expr is not None:
            result: Any = 1
            for _ in range(int(o)):
                result = self * result
            return result
        if isinstance(o, (float, np.floating)) or (isinstance(o, (int, np.integer)) and o < 0):
            self.fixed("'**' giving a float")
        return pow(int.__int__(self), o, modulo)

    def __neg__(self): return self._combine(-1, operator.mul, "-")
    def __pos__(self): return self

    def __abs__(self) -> Any:
        """A size (a product of symbols) is not negative: abs keeps it; a difference may be."""
        if self.expr is not None and self.expr.as_dim() is None:
            self.fixed("abs() of a size that may be negative")
        return self if int.__int__(self) >= 0 else -self

    def __rpow__(self, o: Any) -> Any:
        self.fixed("'**' with the size as the exponent")
        return pow(o, int.__int__(self))

    def __lshift__(self, o: Any) -> Any:
        return self * (1 << int(o)) if isinstance(o, (int, np.integer)) else NotImplemented

    def __rshift__(self, o: Any) -> Any:
        return self // (1 << int(o)) if isinstance(o, (int, np.integer)) else NotImplemented

    def _bits(self, symbol: str, other: Any, fn: Callable[[Any, Any], Any]) -> Any:
        self.fixed(f"'{symbol}' (bitwise arithmetic)")
        return fn(int.__int__(self), other)

    def __and__(self, o): return self._bits("&", o, operator.and_)
    def __rand__(self, o): return self._bits("&", o, operator.and_)
    def __or__(self, o): return self._bits("|", o, operator.or_)
    def __ror__(self, o): return self._bits("|", o, operator.or_)
    def __xor__(self, o): return self._bits("^", o, operator.xor)
    def __rxor__(self, o): return self._bits("^", o, operator.xor)
    def __invert__(self): return self._bits("~", 0, lambda a, _: ~a)

    # an int's rounding is the int itself
    def __trunc__(self): return self
    def __floor__(self): return self
    def __ceil__(self): return self

    def __round__(self, ndigits: Any = None) -> Any:
        return self if ndigits is None or ndigits >= 0 else round(int.__int__(self), ndigits)

    # copies are the same size; pickles (and copies outside a trace) a plain int
    def __copy__(self): return self
    def __deepcopy__(self, memo: Any): return self
    def __reduce__(self): return (int, (int.__int__(self),))

    def __repr__(self) -> str:
        return int.__repr__(self)


def _plain(n: Any) -> int:
    return int.__int__(n) if isinstance(n, int) else int(n)


def _expr(n: Any) -> Any:
    """A SymInt's expression, or the plain number."""
    if isinstance(n, SymInt) and n.expr is not None:
        return n.expr
    return _plain(n)


def plain(n: Any) -> Any:
    """The number, never a SymInt (and never a refusal): what numpy and the forward rules see."""
    return int.__int__(n) if isinstance(n, SymInt) else n


def live(value: Any) -> bool:
    """Whether `value` is a SymInt of the trace recording now."""
    return isinstance(value, SymInt) and value.live


def holds_live(attrs: dict[str, Any]) -> bool:
    """Whether an operation's attributes hold a size of the trace recording now (then the
    operation is recorded even when every input is a constant: `weight[:n]`, `zeros(b, 5)`)."""
    for value in attrs.values():
        if isinstance(value, SymInt):
            if value.live:
                return True
        elif isinstance(value, (tuple, list)) and any(live(v) for v in value):
            return True
    return False
