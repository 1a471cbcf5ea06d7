"""Symbolic sizes: an axis whose size may differ at run time is `coefficient x product of atoms`.

An atom is a size the graph can read at run time: a declared symbol (`batch`, the axis of an input
that named it) or an extent an operation made (a concatenation of a symbolic axis with a fixed
one), held by the value that operation produced. Every atom keeps its example size (the size in
the traced run) and where the graph finds it (a value and an axis), so a shape operand can be
computed from `Shape` nodes.

    batch, steps = Atom("batch", 3, 0, source=0, axis=0), Atom("steps", 5, 1, source=0, axis=1)
    Sym(4, (batch, steps)).example   # 60
    str(Sym(4, (batch, steps)))      # '4*batch*steps', the dim_param written into the graph
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Iterable, Union


@dataclass(frozen=True, eq=False)
class Atom:
    """A size read at run time from axis `axis` of value `source` (a value id of the trace).
    `order` is the creation order: atoms are equal when they are the same atom. A size computed
    from other atoms (`steps-1`, `steps//2`) keeps its polynomial as `expr` (tracing/sizes.py),
    from which the graph computes it where no value holding it is written yet."""

    name: str
    example: int
    order: int
    source: int
    axis: int
    expr: Any = None

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Atom) and other.order == self.order

    def __hash__(self) -> int:
        return hash(("atom", self.order))

    def __repr__(self) -> str:
        return f"Atom({self.name}={self.example})"


@dataclass(frozen=True)
class Sym:
    """coef x atoms[0] x atoms[1] x ... (atoms sorted by creation order; repeats allowed)."""

    coef: int
    atoms: tuple[Atom, ...]

    @staticmethod
    def of(atoms: Iterable[Atom], coef: int = 1) -> "Dim":
        """The size `coef x atoms`, or the plain integer when there is no atom."""
        ordered = tuple(sorted(atoms, key=lambda a: a.order))
        return Sym(int(coef), ordered) if ordered else int(coef)

    @property
    def example(self) -> int:
        return self.coef * math.prod(a.example for a in self.atoms)

    def __str__(self) -> str:
        parts = ([str(self.coef)] if self.coef != 1 else []) + [a.name for a in self.atoms]
        if len(parts) > 1:  # a derived atom (steps-1) in a product: batch*(steps-1)
            parts = [f"({p})" if "+" in p or "-" in p else p for p in parts]
        return "*".join(parts)


Dim = Union[int, Sym]
Dims = tuple[Dim, ...]


def example(dim: Dim) -> int:
    return dim.example if isinstance(dim, Sym) else int(dim)


def examples(dims: Dims) -> tuple[int, ...]:
    return tuple(example(d) for d in dims)


def symbolic(dims: Dims) -> bool:
    return any(isinstance(d, Sym) for d in dims)


def split(dims: Iterable[Dim]) -> tuple[int, list[Atom]]:
    """The product of `dims` as (coefficient, atoms)."""
    coef, atoms = 1, []
    for d in dims:
        if isinstance(d, Sym):
            coef *= d.coef
            atoms.extend(d.atoms)
        else:
            coef *= int(d)
    return coef, atoms


def describe(dims: Dims) -> str:
    """`(batch, 5, 2*steps)`: dims as a user reads them in messages."""
    inner = ", ".join(str(d) for d in dims)
    return f"({inner}{',' if len(dims) == 1 else ''})"


def onnx_dims(dims: Dims) -> tuple[int | str, ...]:
    """Dims as a shape annotation holds them: numbers, and symbols as dim_param strings."""
    return tuple(str(d) if isinstance(d, Sym) else int(d) for d in dims)
