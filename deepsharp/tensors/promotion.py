"""PyTorch's type promotion for the operations that mix operands elementwise.

numpy and PyTorch disagree where an integer (or bool) tensor meets a float one: numpy computes in
float64, PyTorch in the float operand's type (float32). deepsharp follows PyTorch, so a module
written as a PyTorch user writes it keeps its dtype and its numbers:

- categories rank bool < integer < float; the result takes the highest category present;
- within the float category the result is the widest float among the operands that have axes
  (a 0-d float64 array mixed into a float32 tensor keeps float32, as PyTorch's zero-dim rule);
  only 0-d floats decide when nothing with axes is a float;
- `div` of integers is true division in the default float type (float32), as PyTorch's.

Python numbers are already tensors of the operation's float type or of int64 (`as_tensor`).
Each operand whose type differs from the result's is converted by a recorded `cast` (autograd
carries gradients through it; the tracer writes a Cast).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from deepsharp.tensors import modes

# the operands (by position) that are promoted together
PROMOTES: dict[str, tuple[int, ...] | None] = {
    "add": (0, 1), "sub": (0, 1), "mul": (0, 1), "div": (0, 1), "pow": (0, 1),
    "maximum": (0, 1), "minimum": (0, 1), "where": (1, 2),
    "equal": (0, 1), "not_equal": (0, 1), "less": (0, 1), "less_equal": (0, 1),
    "greater": (0, 1), "greater_equal": (0, 1),
    "remainder": (0, 1), "fmod": (0, 1), "floor_divide": (0, 1),
    "bitwise_and": (0, 1), "bitwise_or": (0, 1), "bitwise_xor": (0, 1),
    "clamp": (0, 1, 2),  # x with its tensor or number bounds (int64 clamped by 0.5: float32)
    "concat": None,  # every operand (cat, stack: PyTorch's float32 of float32 and int64)
}


# functions whose result is a float: an integer or bool operand is read as the default float type
# first (PyTorch's exp(int64) is float32; numpy's float64, and float16 for a bool)
FLOATING = frozenset({"exp", "log", "sqrt", "rsqrt", "log1p", "sin", "cos", "sigmoid", "tanh",
                      "erf", "logsumexp", "tan", "asin", "acos", "atan", "sinh", "cosh", "asinh",
                      "acosh", "atanh"})


def result_dtype(op: str, dtypes: Sequence[np.dtype], ranks: Sequence[int]) -> np.dtype | None:
    """The common type of `op`'s promoted operands (None when they already agree)."""
    floats = [d for d in dtypes if d.kind == "f"]
    if not floats:
        if op == "div" and all(d.kind in "iub" for d in dtypes):
            return np.dtype(modes.default_float())
        return None
    if len(set(dtypes)) == 1:
        return None
    shaped = [d for d, r in zip(dtypes, ranks) if d.kind == "f" and r > 0]
    return max(shaped or floats, key=lambda d: d.itemsize)


def promoted(op: str, tensors: tuple, cast) -> tuple:
    """`tensors` with the operands `PROMOTES[op]` names converted to their common type."""
    positions = PROMOTES[op] or tuple(range(len(tensors)))
    chosen = [tensors[i] for i in positions if i < len(tensors)]
    target = result_dtype(op, [t.dtype for t in chosen], [t.ndim for t in chosen])
    if target is None:
        return tensors
    return tuple(cast(t, target) if i in positions and t.dtype != target else t
                 for i, t in enumerate(tensors))
