"""flatten() and reshape(shape): the values of one example laid out anew, in the same order.

flatten: (*places, C) -> (places x C,), place by place with the channels of each place together
(the network's own order, channels-last). reshape: the example's values as `shape` (a Shape or a
tuple of positive sizes holding as many values).
"""

from __future__ import annotations

from typing import Any

from pydantic import PositiveInt, field_validator

from deepsharp.errors import ShapeError
from deepsharp.layers.base import LayerSpec, Lowering, Step, layer
from deepsharp.shape import Shape
from deepsharp.tensors import Tensor, apply


@layer("flatten")
class Flatten(LayerSpec):
    """Every value of an example in one row: (*places, C) -> (places x C,)."""

    def build(self, shape: Shape, at: Lowering) -> "FlattenStep":
        if shape.rank < 1:
            raise ShapeError(f"needs at least one axis, received an input of shape {shape}")
        return FlattenStep(self, at.place, shape, Shape(shape.size))


class FlattenStep(Step):
    def forward(self, x: Tensor) -> Tensor:
        return apply("reshape", x, shape=(x.shape[0], -1))


@layer("reshape")
class Reshape(LayerSpec):
    """The example's values as `shape`, in the same order (a row of 12 -> Shape(3, 4))."""

    shape: tuple[PositiveInt, ...]

    @field_validator("shape", mode="before")
    @classmethod
    def _from_shape(cls, value: Any) -> Any:
        return tuple(value) if isinstance(value, (Shape, list)) else value

    def build(self, shape: Shape, at: Lowering) -> "ReshapeStep":
        target = Shape(*self.shape)
        if target.size != shape.size:
            raise ShapeError(f"cannot lay {shape.size} values out as {target} ({target.size} "
                             f"values)")
        return ReshapeStep(self, at.place, shape, target)


class ReshapeStep(Step):
    def forward(self, x: Tensor) -> Tensor:
        return apply("reshape", x, shape=(x.shape[0], *self.spec.shape))
