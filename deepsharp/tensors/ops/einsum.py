"""einsum over an explicit equation (`ij,jk->ik`: letters only, the result's letters given).

The gradient of operand k is the einsum of the result's gradient with the other operands, onto
operand k's letters; a letter only operand k has is broadcast back, and repeated letters (a
diagonal, `ii->`) put the gradient on that diagonal.
"""

from __future__ import annotations

import numpy as np

from deepsharp.tensors.primitives import needs_input_grad, primitive


def parse(equation: str) -> tuple[list[str], str]:
    inputs, output = equation.split("->")
    return inputs.split(","), output


@primitive("einsum")
class Einsum:
    def forward(*operands, equation):
        return np.einsum(equation, *operands, optimize=True), None

    def backward(grad, saved, *operands, equation):
        inputs, output = parse(equation)
        return tuple(_operand_grad(grad, operands, inputs, output, k) if needs_input_grad(k)
                     else None for k in range(len(operands)))


def _operand_grad(grad, operands, inputs, output, k):
    letters, operand = inputs[k], operands[k]
    unique = "".join(dict.fromkeys(letters))
    others = [i for i in range(len(operands)) if i != k]
    available = set(output).union(*(inputs[i] for i in others))
    target = "".join(c for c in unique if c in available)
    spec = ",".join([output] + [inputs[i] for i in others]) + "->" + target
    g = np.einsum(spec, grad, *(operands[i] for i in others), optimize=True)
    sizes = dict(zip(letters, operand.shape))
    for position, c in enumerate(unique):
        if c not in available:  # summed by operand k alone: every entry gets the gradient
            g = np.expand_dims(g, position)
    g = np.broadcast_to(g, tuple(sizes[c] for c in unique))
    if unique == letters:
        return g
    full = np.zeros(operand.shape, grad.dtype)
    np.einsum(f"{letters}->{unique}", full)[...] = g  # a writeable view of the diagonal
    return full
