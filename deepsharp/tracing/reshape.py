"""Which output axes of a reshape are symbolic, and as what.

Eager code reshapes with plain integers (`x.reshape(b * t, d)` where `b, t, d = x.shape`), so the
record only holds the example sizes. Both shapes are split into groups of equal element count
(axes of size 1 stand alone); within a group, the input's atoms are given to output axes so that
each axis is `coefficient x its atoms`: assignments where an axis's atoms multiply exactly to its
size are preferred (exact products first), then ones where they divide it. Every atom must land
somewhere, and the best assignment must be the only one: otherwise the reshape mixes symbolic
sizes in a way the trace cannot tell apart (two symbols of the same size, or a fixed size equal to
a symbol's, which is why example sizes must be distinct and differ from the model's fixed sizes).
"""

from __future__ import annotations

import itertools
import math
from collections import Counter
from typing import Callable, Sequence

from deepsharp.tracing.symbols import Dim, Dims, Sym, describe, examples, split, symbolic

_MOST_ASSIGNMENTS = 100_000


class Inexpressible(Exception):
    """The symbolic sizes cannot be written for this operation (the caller names it)."""


def groups(ins: Sequence[int], outs: Sequence[int]) -> list[tuple[list[int], list[int]]]:
    """Split two shapes of the same (non-zero) element count into groups of equal count: lists of
    input and output axis indices. Axes of size 1 form groups of their own."""
    result: list[tuple[list[int], list[int]]] = []
    i = j = 0
    while i < len(ins) or j < len(outs):
        if i < len(ins) and ins[i] == 1:
            result.append(([i], []))
            i += 1
            continue
        if j < len(outs) and outs[j] == 1:
            result.append(([], [j]))
            j += 1
            continue
        gi, gj, pi, pj = [i], [j], ins[i], outs[j]
        i, j = i + 1, j + 1
        while pi != pj:
            if pi < pj:
                gi.append(i)
                pi *= ins[i]
                i += 1
            else:
                gj.append(j)
                pj *= outs[j]
                j += 1
        result.append((gi, gj))
    return result


def reshape_dims(dims: Dims, shape: Sequence[int]) -> Dims:
    """The symbolic dims of `shape`, reshaped from a value of symbolic `dims`."""
    shape = tuple(int(s) for s in shape)
    if not symbolic(dims):
        return shape
    sizes = examples(dims)
    if math.prod(sizes) == 0:
        raise Inexpressible(f"an empty tensor {describe(dims)} cannot be reshaped with symbolic "
                            f"axes (its groups of axes cannot be told apart)")
    out: list[Dim] = list(shape)
    for gi, gj in groups(sizes, shape):
        coef, atoms = split(dims[i] for i in gi)
        if atoms:
            for j, dim in zip(gj, _assign(atoms, [shape[j] for j in gj], dims, gi, shape, gj)):
                out[j] = dim
    return tuple(out)


def _assign(atoms, outs: list[int], dims: Dims, gi, shape, gj) -> tuple[Dim, ...]:
    where = (f"input axes {gi} {describe(tuple(dims[i] for i in gi))} -> output axes {gj} "
             f"{tuple(outs)}")
    if not outs:
        raise Inexpressible(f"{where}: symbolic sizes would vanish")
    if len(outs) ** len(atoms) > _MOST_ASSIGNMENTS:
        raise Inexpressible(f"{where}: too many symbolic sizes in one group to place them")
    best: set[tuple[Dim, ...]] = set()
    best_score = -1
    for choice in itertools.product(range(len(outs)), repeat=len(atoms)):
        products = [1] * len(outs)
        for atom, j in zip(atoms, choice):
            products[j] *= atom.example
        if any(o % p for o, p in zip(outs, products)):
            continue
        score = sum(1 for j, p in enumerate(products) if j in choice and p == outs[j])
        result = tuple(Sym.of([a for a, c in zip(atoms, choice) if c == j], outs[j] // products[j])
                       for j in range(len(outs)))
        if score > best_score:
            best, best_score = {result}, score
        elif score == best_score:
            best.add(result)
    if not best:
        names = ", ".join(f"{a.name}={a.example}" for a in atoms)
        raise Inexpressible(f"{where}: the symbolic sizes {names} cannot be spread over the "
                            f"output sizes (a symbol would be split between axes)")
    if len(best) > 1:
        options = " or ".join(describe(r) for r in sorted(best, key=str))
        raise Inexpressible(f"{where}: ambiguous, the output could be {options}; trace with "
                            f"symbol sizes that differ from each other and from the model's "
                            f"fixed sizes")
    return best.pop()


def reshape_given(dims: Dims, shape: Sequence[int], given: dict[int, Dim],
                  minus_one: Callable[[int], Dim | None]) -> Dims:
    """The symbolic dims of `shape` when the sizes of axes `given` were given as sizes read from
    symbolic axes (their Dims). The input's atoms those sizes do not hold go to the other axes by
    value, as `reshape_dims` gives them; when the given sizes hold an atom the input lacks
    (`t // 2` of an input of `t`), nothing can be said of the rest but what is written: a size is
    fixed, and a -1 is `minus_one(axis)` (a new atom held by the result)."""
    shape = tuple(int(s) for s in shape)
    out: list[Dim] = [given.get(j, shape[j]) for j in range(len(shape))]
    rest = [j for j in range(len(shape)) if j not in given]
    _, atoms = split(dims)
    _, taken = split(given.values())
    left = Counter(atoms)
    left.subtract(Counter(taken))
    if any(n < 0 for n in left.values()):
        for j in rest:
            out[j] = minus_one(j) or shape[j]
        return tuple(out)
    leftover = list(left.elements())
    if leftover:
        everything = list(range(len(dims)))
        for j, dim in zip(rest, _assign(leftover, [shape[j] for j in rest], dims, everything,
                                        shape, rest)):
            out[j] = dim
    return tuple(out)
