"""Sizes computed in Python from symbolic sizes: `n - 1`, `2 * n`, `n // 2`, `b * t`.

A size read from a symbolic axis while a trace records (`x.shape[1]`) is a `SymInt` (an int whose
`expr` is a `Poly`). Arithmetic on it builds the expression as an integer polynomial over atoms,

    Poly = sum of coefficient x product of factors  (+ a constant term),

a factor being an atom (a symbol, or an extent an operation made) or a floor quotient `p // q` of
two polynomials. The form is canonical: terms sorted, zero terms dropped, a quotient that divides
exactly simplified (`(2*n + 4) // 2` is `n + 2`, exact at every size; `(2*n + 1) // 2` is also
`n`), so equal sizes written differently compare equal where that can be proved, and a
quotient stays a factor (`n // 2`) where it cannot.

    steps = Atom("steps", 7, 1, source=0, axis=1)
    n = Poly.of(Sym(1, (steps,)))
    str(n - 1), (n - 1).example          # ('steps-1', 6)
    str((2 * n) // 2), str(n // 2)        # ('steps', 'steps//2')
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Iterable, Union

from deepsharp.tracing.symbols import Atom, Dim, Sym


@dataclass(frozen=True)
class Quotient:
    """floor(num / den), a factor of a term when the division is not exact."""

    num: "Poly"
    den: "Poly"

    @property
    def example(self) -> int:
        return self.num.example // self.den.example

    def __str__(self) -> str:
        return f"{_grouped(self.num)}//{_grouped(self.den)}"


Factor = Union[Atom, Quotient]
Term = tuple[tuple[Factor, ...], int]  # (factors, coefficient); () is the constant term


def _key(factor: Factor) -> tuple:
    return (0, factor.order, "") if isinstance(factor, Atom) else (1, 0, str(factor))


def _grouped(poly: "Poly") -> str:
    text = str(poly)
    return text if len(poly.terms) <= 1 and not text.startswith("-") else f"({text})"


@dataclass(frozen=True)
class Poly:
    """An integer polynomial over atoms and quotients (see the module docstring)."""

    terms: tuple[Term, ...]

    # -- making ---------------------------------------------------------------------------------
    @staticmethod
    def _of(mapping: dict[tuple[Factor, ...], int]) -> "Poly":
        kept = [(f, c) for f, c in mapping.items() if c]
        return Poly(tuple(sorted(kept, key=lambda t: (len(t[0]) == 0, [_key(f) for f in t[0]]))))

    @staticmethod
    def const(value: int) -> "Poly":
        return Poly._of({(): int(value)})

    @staticmethod
    def of(dim: "Dim | Poly") -> "Poly":
        """A Dim (a number or coef x atoms) as a polynomial."""
        if isinstance(dim, Poly):
            return dim
        if isinstance(dim, Sym):
            return Poly._of({dim.atoms: dim.coef})
        return Poly.const(int(dim))

    # -- reading --------------------------------------------------------------------------------
    @property
    def example(self) -> int:
        return sum(c * math.prod(f.example for f in fs) for fs, c in self.terms)

    @property
    def constant(self) -> int | None:
        """The value when the polynomial is a number, else None."""
        if not self.terms:
            return 0
        if len(self.terms) == 1 and not self.terms[0][0]:
            return self.terms[0][1]
        return None

    def as_dim(self) -> Dim | None:
        """The polynomial as a Dim: a number, or `coef x atoms` (one term, a positive
        coefficient, atoms only); None when it is neither (it needs an atom of its own)."""
        if self.constant is not None:
            return self.constant
        if len(self.terms) == 1:
            factors, coef = self.terms[0]
            if coef > 0 and factors and all(isinstance(f, Atom) for f in factors):
                return Sym(coef, factors)
        return None

    def atoms(self) -> set[Atom]:
        """Every atom the polynomial reads, inside quotients too."""
        found: set[Atom] = set()
        for factors, _ in self.terms:
            for f in factors:
                found |= {f} if isinstance(f, Atom) else f.num.atoms() | f.den.atoms()
        return found

    def __str__(self) -> str:
        text = ""
        for factors, coef in self.terms:
            parts = ([str(abs(coef))] if abs(coef) != 1 or not factors else []) + [
                _factor_text(f) for f in factors]
            if len(parts) > 1:  # a derived atom or a quotient in a product: 2*(steps-1)
                parts = [f"({p})" if any(c in p for c in "+-/") else p for p in parts]
            text += ("-" if coef < 0 else "+" if text else "") + "*".join(parts)
        return text or "0"

    # -- arithmetic -----------------------------------------------------------------------------
    def __add__(self, other: Any) -> "Poly":
        other = _poly(other)
        if other is None:
            return NotImplemented
        total = dict(self.terms)
        for factors, coef in other.terms:
            total[factors] = total.get(factors, 0) + coef
        return Poly._of(total)

    __radd__ = __add__

    def __neg__(self) -> "Poly":
        return Poly._of({f: -c for f, c in self.terms})

    def __sub__(self, other: Any) -> "Poly":
        other = _poly(other)
        return NotImplemented if other is None else self + (-other)

    def __rsub__(self, other: Any) -> "Poly":
        other = _poly(other)
        return NotImplemented if other is None else other + (-self)

    def __mul__(self, other: Any) -> "Poly":
        other = _poly(other)
        if other is None:
            return NotImplemented
        total: dict[tuple[Factor, ...], int] = {}
        for fa, ca in self.terms:
            for fb, cb in other.terms:
                factors = tuple(sorted(fa + fb, key=_key))
                total[factors] = total.get(factors, 0) + ca * cb
        return Poly._of(total)

    __rmul__ = __mul__

    def __floordiv__(self, other: Any) -> "Poly":
        """floor(self / other): exact polynomial division where every non-constant coefficient
        is a multiple of a positive constant divisor (k*A + r) // k = A + r // k; else a
        quotient factor."""
        other = _poly(other)
        if other is None:
            return NotImplemented
        k = other.constant
        if k == 1:
            return self
        if k is not None and k > 0 and all(c % k == 0 for fs, c in self.terms if fs):
            rest = self.constant_term
            return Poly._of({fs: c // k for fs, c in self.terms if fs}) + rest // k
        if self.constant is not None and k is not None and k != 0:
            return Poly.const(self.constant // k)
        return Poly._of({(Quotient(self, other),): 1})

    def __rfloordiv__(self, other: Any) -> "Poly":
        other = _poly(other)
        return NotImplemented if other is None else other // self

    def __mod__(self, other: Any) -> "Poly":
        other = _poly(other)
        return NotImplemented if other is None else self - other * (self // other)

    def __rmod__(self, other: Any) -> "Poly":
        other = _poly(other)
        return NotImplemented if other is None else other % self

    @property
    def constant_term(self) -> int:
        return next((c for fs, c in self.terms if not fs), 0)

    def divide(self, other: "Poly") -> "Poly | None":
        """self / other when `other` divides it exactly as polynomials (batch*steps - batch by
        steps - 1 is batch), else None: the division algorithm on graded leading terms."""
        quotient: dict[tuple[Factor, ...], int] = {}
        rest, lead = self, _lead(other)
        for _ in range(4 * len(self.terms) + 4):
            if not rest.terms:
                return Poly._of(quotient)
            factors, coef = _lead(rest)
            remaining = list(factors)
            for f in lead[0]:
                if f not in remaining:
                    return None
                remaining.remove(f)
            if coef % lead[1]:
                return None
            step = Poly._of({tuple(remaining): coef // lead[1]})
            quotient[step.terms[0][0]] = quotient.get(step.terms[0][0], 0) + step.terms[0][1]
            rest = rest - step * other
        return None


def as_product(size: Poly, atoms: Iterable[Atom], depth: int = 2) -> Sym | None:
    """`size` as a product of atoms some of which are sizes computed from others (`atoms` with
    an `expr`): batch*steps - batch is batch x the atom steps-1. None when it is not one."""
    atoms = [a for a in atoms if a.expr is not None]
    for atom in atoms:
        if not atom.expr.atoms() <= size.atoms():
            continue
        rest = size.divide(atom.expr)
        if rest is None:
            continue
        dim = rest.as_dim()
        if dim is None and depth > 1:
            dim = as_product(rest, atoms, depth - 1)
        if isinstance(dim, Sym):
            return Sym.of(dim.atoms + (atom,), dim.coef)
        if isinstance(dim, int) and dim > 0:
            return Sym(dim, (atom,))
    return None


def _lead(poly: Poly) -> Term:
    """The leading term: the most factors, then the last in the factors' order."""
    return max(poly.terms, key=lambda t: (len(t[0]), [_key(f) for f in t[0]]))


def _factor_text(factor: Factor) -> str:
    return factor.name if isinstance(factor, Atom) else str(factor)


def _poly(value: Any) -> Poly | None:
    if isinstance(value, Poly):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return Poly.const(int.__int__(value))
    return None


def atoms_in(value: Any) -> set[Atom]:
    """The atoms a value of an operation's attributes reads: a size (SymInt), a polynomial or a
    Dim, inside tuples, lists and dicts."""
    expr = getattr(value, "expr", None) if isinstance(value, int) else None
    if isinstance(expr, Poly):
        return expr.atoms()
    if isinstance(value, Poly):
        return value.atoms()
    if isinstance(value, Sym):
        return set(value.atoms)
    if isinstance(value, Atom):
        return {value}
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, (tuple, list)):
        found: set[Atom] = set()
        for v in value:
            found |= atoms_in(v)
        return found
    return set()


def expr_of(value: Any) -> Poly | None:
    """The polynomial a size stands for: a SymInt's expression (None for a plain number)."""
    expr = getattr(value, "expr", None) if isinstance(value, int) else None
    return expr if isinstance(expr, Poly) else None


def poly_or_int(value: Any) -> "Poly | int":
    """A bound or size as the tracer reads it: a SymInt's polynomial, else the number."""
    expr = expr_of(value)
    return expr if expr is not None else int.__int__(value) if isinstance(value, int) \
        else value



# The arguments of each primitive that may hold a size computed from symbolic sizes (a SymInt):
# its dims rule reads the size's polynomial and its ONNX writer computes it at run time. A size
# in any other argument would stay the number of the traced run: the trace refuses it.
TAKES_SIZES: dict[str, tuple[str, ...]] = {
    "reshape": ("shape",), "expand": ("shape",), "slice": ("starts", "stops"),
    "setitem": ("starts", "stops"), "arange": ("start", "stop"), "full": ("shape", "value"),
}
