"""spatial_dropout(rate): in training, zero whole channels of an example (every place of them)
with probability `rate` and scale the rest by 1 / (1 - rate); in evaluation, nothing.

As PyTorch's Dropout1d/2d/3d (and Keras's SpatialDropout): neighbouring places of a channel are
alike, so dropping single values barely regularises a convolution's output.
"""

from __future__ import annotations

from pydantic import Field

from deepsharp.errors import ShapeError
from deepsharp.layers.base import LayerSpec, Lowering, Step, layer
from deepsharp.run import current_run
from deepsharp.shape import Shape
from deepsharp.tensors import Tensor, apply


@layer("spatial_dropout")
class SpatialDropout(LayerSpec):
    """Channel dropout; masks drawn from the run's stream under `spatial_dropout:{place}:{step}`."""

    training_only = True
    rate: float = Field(ge=0.0, lt=1.0)

    def build(self, shape: Shape, at: Lowering) -> "SpatialDropoutStep":
        if shape.rank < 2:
            raise ShapeError(f"needs places and channels, received an input of shape {shape}")
        return SpatialDropoutStep(self, at.place, shape, shape)


class SpatialDropoutStep(Step):
    def forward(self, x: Tensor) -> Tensor:
        rate = self.spec.rate
        if not self.training or rate == 0.0:
            return x
        mask_shape = (x.shape[0], *(1,) * (x.ndim - 2), x.shape[-1])
        keep = current_run().draw(f"spatial_dropout:{self.place}", mask_shape) >= rate
        return apply("dropout", x, Tensor(keep), rate=float(rate))
