"""Series helpers: `masking(value)` marks padded steps; `gaussian_noise(stddev)` perturbs values
in training."""

from __future__ import annotations

import math

import numpy as np
from pydantic import Field, field_validator

from deepsharp.layers.base import Flow, LayerSpec, Lowering, Step, layer, require_rank
from deepsharp.run import current_run
from deepsharp.shape import Shape
from deepsharp.tensors import Tensor, apply

BOOL = np.dtype(bool).str


@layer("masking")
class Masking(LayerSpec):
    """Steps whose every channel equals `value` are padding (Keras' `Masking`): they are zeroed
    and the mask riding with the series says which steps are real, for later layers to honour.

    Input (steps, channels) -> the same.

    >>> Sequential().masking(0.0).lstm(32)
    """

    value: float = 0.0

    @field_validator("value")
    @classmethod
    def _comparable(cls, value: float) -> float:
        if math.isnan(value):  # NaN equals nothing: no step would ever be masked
            raise ValueError("must not be NaN: NaN equals nothing, so no step would be masked; "
                             "replace the padding by a number and mask that")
        return value

    def build(self, shape: Shape, at: Lowering) -> "MaskingStep":
        require_rank(self, shape, (2,), "a series (steps x channels)")
        return MaskingStep(self, at.place, shape, shape)


class MaskingStep(Step):
    def call(self, flow: Flow) -> Flow:
        x = flow.value
        # |x - value| has a nonzero largest channel exactly where some channel differs
        distance = apply("abs", apply("sub", x.detach(), float(self.spec.value)))
        keep = apply("cast", apply("max", distance, axes=(2,), keepdims=1), to=BOOL)
        out = apply("mul", x, apply("cast", keep, to=x.dtype.str))
        mask = apply("cast", apply("max", distance, axes=(2,), keepdims=0), to=BOOL)
        return Flow(out, mask)

    def forward(self, x: Tensor) -> Tensor:
        return self.call(Flow(x)).value


@layer("gaussian_noise")
class GaussianNoise(LayerSpec):
    """In training, x + N(0, stddev^2) noise drawn from the run's stream under
    `gaussian_noise:{place}:{step}`; in evaluation, nothing (an exported graph holds no node).

    >>> Sequential().gaussian_noise(0.1).dense(16)
    """

    training_only = True
    stddev: float = Field(ge=0.0)

    def build(self, shape: Shape, at: Lowering) -> "GaussianNoiseStep":
        return GaussianNoiseStep(self, at.place, shape, shape)


class GaussianNoiseStep(Step):
    def forward(self, x: Tensor) -> Tensor:
        if not self.training or self.spec.stddev == 0.0:
            return x
        noise = current_run().draw(f"gaussian_noise:{self.place}", x.shape, "standard_normal")
        noise = noise * self.spec.stddev
        return apply("add", x, Tensor(noise.astype(x.dtype)))
