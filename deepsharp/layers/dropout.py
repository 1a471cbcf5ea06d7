"""dropout(rate): in training, zero each value with probability `rate` and scale the rest by
1 / (1 - rate); in evaluation, nothing."""

from __future__ import annotations

from pydantic import Field

from deepsharp.functional import dropout
from deepsharp.layers.base import LayerSpec, Lowering, Step, layer
from deepsharp.shape import Shape
from deepsharp.tensors import Tensor


@layer("dropout")
class Dropout(LayerSpec):
    """Inverted dropout; masks drawn from the run's stream under `dropout:{place}:{step}`."""

    training_only = True
    rate: float = Field(ge=0.0, lt=1.0)

    def build(self, shape: Shape, at: Lowering) -> "DropoutStep":
        return DropoutStep(self, at.place, shape, shape)


class DropoutStep(Step):
    def forward(self, x: Tensor) -> Tensor:
        return dropout(x, self.spec.rate, self.training, purpose=f"dropout:{self.place}")
