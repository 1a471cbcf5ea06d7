"""Activation layers: each applies one primitive elementwise (softmax over the last axis).

Every activation spec names the primitive it applies and its attributes; one step type runs them
all, and one exporter writer writes them all from the primitive's ONNX mapping.
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
from pydantic import Field, model_validator

from deepsharp.errors import ShapeError
from deepsharp.layers.base import LayerSpec, Lowering, Step, layer
from deepsharp.module import Parameter
from deepsharp.shape import Shape
from deepsharp.tensors import Tensor, apply
from deepsharp.tensors.api.activations import plain_softplus, scaled_softplus


class ActivationSpec(LayerSpec):
    """An elementwise function of the values; the shape is unchanged."""

    def primitive(self) -> str:
        return self.kind

    def attrs(self, rank: int) -> dict[str, Any]:
        return {}

    def build(self, shape: Shape, at: Lowering) -> "ActivationStep":
        return ActivationStep(self, at.place, shape, shape)


class ActivationStep(Step):
    def forward(self, x: Tensor) -> Tensor:
        return apply(self.spec.primitive(), x, **self.spec.attrs(x.ndim))


@layer("relu")
class Relu(ActivationSpec):
    """max(x, 0)."""


@layer("sigmoid")
class Sigmoid(ActivationSpec):
    """1 / (1 + e^-x). A last sigmoid before BinaryCrossEntropy is lifted into the loss."""


@layer("tanh")
class Tanh(ActivationSpec):
    """tanh(x)."""


@layer("gelu")
class Gelu(ActivationSpec):
    """x * Phi(x) (`approximate="none"`) or PyTorch's tanh form (`approximate="tanh"`)."""

    approximate: Literal["none", "tanh"] = "none"

    def attrs(self, rank: int) -> dict[str, Any]:
        return {"approximate": int(self.approximate == "tanh")}


@layer("silu")
class Silu(ActivationSpec):
    """x * sigmoid(x) (also called swish)."""


@layer("elu")
class Elu(ActivationSpec):
    """x where x > 0, else alpha * (e^x - 1)."""

    alpha: float = Field(1.0, gt=0)

    def attrs(self, rank: int) -> dict[str, Any]:
        return {"alpha": float(self.alpha)}


@layer("leaky_relu")
class LeakyRelu(ActivationSpec):
    """x where x > 0, else slope * x."""

    slope: float = Field(0.01, ge=0)

    def attrs(self, rank: int) -> dict[str, Any]:
        return {"slope": float(self.slope)}


@layer("softplus")
class Softplus(ActivationSpec):
    """log(1 + e^(beta x)) / beta, and x itself where beta x > threshold, as PyTorch's
    nn.Softplus(beta, threshold); `threshold=None`: none (PyTorch's TorchScript exporter writes
    it so). At beta 1 and a threshold of 20 or more, the softplus primitive alone (float32's
    log(1 + e^x) is x above 20)."""

    beta: float = Field(1.0, gt=0, allow_inf_nan=False)
    threshold: float | None = Field(20.0, allow_inf_nan=False)

    def build(self, shape: Shape, at: Lowering) -> "ActivationStep":
        if plain_softplus(self.beta, self.threshold):
            return ActivationStep(self, at.place, shape, shape)
        return SoftplusStep(self, at.place, shape, shape)


class SoftplusStep(Step):
    """softplus at another beta or threshold: PyTorch's formula, a few primitives."""

    def forward(self, x: Tensor) -> Tensor:
        return scaled_softplus(x, self.spec.beta, self.spec.threshold)


@layer("hardtanh")
class Hardtanh(ActivationSpec):
    """x clipped to [low, high], as PyTorch's nn.Hardtanh(min_val, max_val): the gradient is 1
    strictly between the bounds, 0 at and beyond them."""

    low: float = -1.0
    high: float = 1.0

    @model_validator(mode="after")
    def _ordered(self) -> "Hardtanh":
        if not (np.isfinite(self.low) and np.isfinite(self.high) and self.low < self.high):
            raise ValueError(f"low must be below high, both finite, received low={self.low}, "
                             f"high={self.high}")
        return self

    def primitive(self) -> str:
        return "hardtanh"

    def attrs(self, rank: int) -> dict[str, Any]:
        return {"low": float(self.low), "high": float(self.high)}


@layer("relu6")
class Relu6(ActivationSpec):
    """min(max(x, 0), 6), as PyTorch's nn.ReLU6 and Keras's relu6: hardtanh(0, 6)."""

    def primitive(self) -> str:
        return "hardtanh"

    def attrs(self, rank: int) -> dict[str, Any]:
        return {"low": 0.0, "high": 6.0}


@layer("mish")
class Mish(ActivationSpec):
    """x * tanh(softplus(x)), as PyTorch's nn.Mish."""


@layer("hard_sigmoid")
class HardSigmoid(ActivationSpec):
    """min(max(x + 3, 0), 6) / 6, as PyTorch's nn.Hardsigmoid and Keras 3's hard_sigmoid."""


@layer("hard_swish")
class HardSwish(ActivationSpec):
    """x * min(max(x + 3, 0), 6) / 6, as PyTorch's nn.Hardswish and Keras 3's hard_swish."""


@layer("prelu")
class Prelu(LayerSpec):
    """x where x > 0, else a * x, with a learnt: one value (`per_channel=False`, PyTorch's
    nn.PReLU()) or one per channel of the last axis (nn.PReLU(C)), each starting at `init`."""

    per_channel: bool = False
    init: float = 0.25

    def build(self, shape: Shape, at: Lowering) -> "PreluStep":
        if self.per_channel and shape.rank == 0:
            raise ShapeError("per_channel needs a channel axis (a weight per channel of the "
                             "last axis)")
        count = shape[-1] if self.per_channel else 1
        return PreluStep(self, at.place, shape, shape, np.full(count, self.init, np.float32))


class PreluStep(Step):
    def __init__(self, spec: Prelu, place: str, input_shape: Shape, output_shape: Shape,
                 weight: np.ndarray) -> None:
        super().__init__(spec, place, input_shape, output_shape)
        self.weight = Parameter(weight)

    def forward(self, x: Tensor) -> Tensor:
        return apply("prelu", x, self.weight, axis=-1)


@layer("softmax")
class Softmax(ActivationSpec):
    """e^x / sum(e^x) over the last axis. A last softmax before CrossEntropy is lifted into the
    loss."""

    def attrs(self, rank: int) -> dict[str, Any]:
        return {"axis": rank - 1}
