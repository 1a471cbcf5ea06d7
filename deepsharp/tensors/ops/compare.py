"""Comparisons and logical functions: bool results, numpy broadcasting, no gradient.

Comparisons compare in the operands' common type (numpy's promotion); the logical functions read
any operand as bool (non-zero is True), as PyTorch's `logical_and` does.
"""

from __future__ import annotations

import numpy as np

from deepsharp.tensors.primitives import primitive

COMPARISONS = {"equal": np.equal, "not_equal": np.not_equal, "less": np.less,
               "less_equal": np.less_equal, "greater": np.greater,
               "greater_equal": np.greater_equal}
LOGICAL = {"logical_and": np.logical_and, "logical_or": np.logical_or,
           "logical_xor": np.logical_xor}


def _binary(fn):
    class Binary:
        def forward(a, b):
            return fn(a, b), None

    return Binary


for _name, _fn in {**COMPARISONS, **LOGICAL}.items():
    primitive(_name, differentiable=False)(_binary(_fn))


@primitive("logical_not", differentiable=False)
class LogicalNot:
    def forward(a):
        return np.logical_not(a), None


# PyTorch's bitwise operators on integers (and bools), the operands promoted to one type first
# (deepsharp.tensors.promotion): two's complement bits, numpy's and PyTorch's alike
BITWISE = {"bitwise_and": np.bitwise_and, "bitwise_or": np.bitwise_or,
           "bitwise_xor": np.bitwise_xor}
for _name, _fn in BITWISE.items():
    primitive(_name, differentiable=False)(_binary(_fn))


@primitive("bitwise_not", differentiable=False)
class BitwiseNot:
    def forward(a):
        return np.invert(a), None

