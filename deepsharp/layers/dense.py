"""dense(units): y = x @ W + b over the last axis, W kept (in, out)."""

from __future__ import annotations

import math

import numpy as np
from pydantic import PositiveInt

from deepsharp.layers.base import LayerSpec, Lowering, Step, layer, require_rank
from deepsharp.module import Parameter
from deepsharp.shape import Shape
from deepsharp.tensors import Tensor, apply, modes


def kaiming_uniform(generator: np.random.Generator, fan_in: int, shape: tuple[int, ...]) -> np.ndarray:
    """PyTorch's default for Linear and Conv weights: Kaiming-uniform with a = sqrt(5), i.e.
    U(-b, b) with b = gain * sqrt(3 / fan_in), gain = sqrt(2 / (1 + a^2)), so b = 1 / sqrt(fan_in)."""
    gain = math.sqrt(2.0 / (1.0 + 5.0))
    bound = gain * math.sqrt(3.0 / fan_in) if fan_in else 0.0
    return generator.uniform(-bound, bound, size=shape).astype(np.float32)


def fan_in_uniform(generator: np.random.Generator, fan_in: int, shape: tuple[int, ...]) -> np.ndarray:
    """PyTorch's default bias: U(-1/sqrt(fan_in), 1/sqrt(fan_in))."""
    bound = 1.0 / math.sqrt(fan_in) if fan_in else 0.0
    return generator.uniform(-bound, bound, size=shape).astype(np.float32)


@layer("dense")
class Dense(LayerSpec):
    """A fully connected layer on the last axis: y = x @ W + b, W of shape (in, out).

    Input (..., in) -> output (..., units): a row, or every step of a series, or every place of an
    image. Weights are Kaiming-uniform(a=sqrt 5) and the bias fan-in uniform, as PyTorch's Linear.

    >>> Sequential().dense(16).relu().dense(1)
    """

    units: PositiveInt
    bias: bool = True

    def build(self, shape: Shape, at: Lowering) -> "DenseStep":
        require_rank(self, shape, (1, 2, 3, 4), "at least one axis")
        fan_in = shape[-1]
        generator = at.generator()
        weight = kaiming_uniform(generator, fan_in, (fan_in, self.units))
        bias = fan_in_uniform(generator, fan_in, (self.units,)) if self.bias else None
        return DenseStep(self, at.place, shape, Shape(*shape[:-1], self.units), weight, bias)


class DenseStep(Step):
    def __init__(self, spec: Dense, place: str, input_shape: Shape, output_shape: Shape,
                 weight: np.ndarray, bias: np.ndarray | None) -> None:
        super().__init__(spec, place, input_shape, output_shape)
        self.weight = Parameter(weight)
        if bias is not None:
            self.bias = Parameter(bias)

    def forward(self, x: Tensor) -> Tensor:
        if self.spec.bias and modes.may_fuse() and x.ndim >= 2:
            return apply("matmul_add", x, self.weight, self.bias)  # matmul and add, fused
        y = apply("matmul", x, self.weight)
        return apply("add", y, self.bias) if self.spec.bias else y
