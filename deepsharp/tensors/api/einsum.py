"""einsum as PyTorch and numpy read it: letters, `...` for leading axes, the result's letters
after `->` (when absent: the letters used once, in alphabetical order, after the `...` axes).
The equation is written out in full (each `...` as letters of its own) for the primitive."""

from __future__ import annotations

import string
from typing import Any

from deepsharp.errors import OpError
from deepsharp.tensors.tensor import Tensor, apply, as_tensor


def _refuse(equation: str, why: str) -> OpError:
    return OpError(f"einsum {equation!r}: {why}")


def explicit(equation: str, shapes: list[tuple[int, ...]]) -> str:
    """The equation with every `...` written as letters and the result's letters given."""
    text = equation.replace(" ", "")
    lhs, arrow, rhs = text.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(shapes):
        raise _refuse(equation, f"{len(terms)} operand terms for {len(shapes)} operands")
    used = set(text) - set(".,->")
    if not used <= set(string.ascii_letters):
        stray = sorted(used - set(string.ascii_letters))
        raise _refuse(equation, f"subscripts must be letters, received {stray}")
    spare = [c for c in string.ascii_uppercase + string.ascii_lowercase if c not in used]
    width = max([len(s) - (len(t) - 3) for t, s in zip(terms, shapes) if "..." in t] or [0])
    ellipsis = "".join(spare[:width])
    written, sizes = [], {}
    for term, shape in zip(terms, shapes):
        if term.count("...") > 1 or (term.replace("...", "").count(".")):
            raise _refuse(equation, f"the term {term!r} has a stray '.'")
        letters = term.replace("...", ellipsis[width - (len(shape) - (len(term) - 3)):]
                               if "..." in term else "")
        if len(letters) != len(shape):
            raise _refuse(equation, f"the term {term!r} names {len(letters)} axes of an operand "
                                    f"of rank {len(shape)}")
        for c, n in zip(letters, shape):
            if sizes.setdefault(c, n) != n:
                raise _refuse(equation, f"the letter {c!r} stands for sizes {sizes[c]} and {n} "
                                        f"(broadcasting is not done: the sizes must agree)")
        written.append(letters)
    if arrow:
        output = rhs.replace("...", ellipsis)
        if len(set(output)) != len(output) or not set(output) <= set(sizes):
            raise _refuse(equation, f"the result {rhs!r} must name distinct letters of the "
                                    f"operands")
    else:
        counts = "".join(written)
        output = ellipsis + "".join(sorted(c for c in set(counts) - set(ellipsis)
                                           if counts.count(c) == 1))
    return ",".join(written) + "->" + output


def einsum(equation: str, *operands: Any) -> Tensor:
    """The sum of products `equation` names: `einsum("ij,jk->ik", a, b)` is a @ b,
    `"bij,bjk->bik"` a batched product, `"i,j->ij"` the outer product, `"ii->"` the trace.
    Operands may also come as one list (PyTorch's form)."""
    if not isinstance(equation, str):
        raise OpError(f"einsum: the equation comes first, as a string, received "
                      f"{type(equation).__name__}")
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    tensors = [as_tensor(o) for o in operands]
    return apply("einsum", *tensors, equation=explicit(equation, [t.shape for t in tensors]))
