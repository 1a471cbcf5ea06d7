"""from_channels_first() and to_channels_first(): a network that takes (or gives) series and images
channels-first, as PyTorch holds them, while its layers hold them channels-last.

    Sequential().from_channels_first().conv2d(8, 3).relu().global_avg_pool().dense(10)
    # takes (batch, 3, 32, 32) images: Shape(3, 32, 32), turned to (32, 32, 3) for the layers

from_channels_first: (C, *places) -> (*places, C); to_channels_first: (*places, C) -> (C, *places).
The turns are `layout`'s (`to_channels_last`, `to_channels_first`). A network read from a
channels-first graph starts with from_channels_first (and ends with to_channels_first when its
output has places), so it takes the graph's input as the graph does and exports to the graph's
signature: the exporter writes no node for either turn, only the order its neighbours see.
"""

from __future__ import annotations

from deepsharp.errors import ShapeError
from deepsharp.layers.base import LayerSpec, Lowering, Step, layer
from deepsharp.shape import Shape
from deepsharp.tensors import Tensor, apply
from layout import to_channels_first, to_channels_last

CHANNELS_FIRST = "channels_first"
CHANNELS_LAST = "channels_last"


def _spatial(shape: Shape) -> None:
    if shape.rank < 2:
        raise ShapeError(f"needs a series or an image (channels and at least one place axis), "
                         f"received an input of shape {shape}")


@layer("from_channels_first")
class FromChannelsFirst(LayerSpec):
    """Take examples channels-first, (C, *places), and hold them channels-last, (*places, C)."""

    def build(self, shape: Shape, at: Lowering) -> "TurnStep":
        _spatial(shape)
        return TurnStep(self, at.place, shape, Shape(*shape[1:], shape[0]))


@layer("to_channels_first")
class ToChannelsFirst(LayerSpec):
    """Give examples channels-first: (*places, C) -> (C, *places)."""

    def build(self, shape: Shape, at: Lowering) -> "TurnStep":
        _spatial(shape)
        return TurnStep(self, at.place, shape, Shape(shape[-1], *shape[:-1]))


class TurnStep(Step):
    def mask_refusal(self) -> str:
        return ("it moves the steps off the axis the mask marks; turn the values before the mask "
                "is made (at the network's input), or give series without a mask")

    def forward(self, x: Tensor) -> Tensor:
        rank = x.ndim
        perm = to_channels_last(rank) if isinstance(self.spec, FromChannelsFirst) \
            else to_channels_first(rank)
        return apply("transpose", x, perm=perm)


def data_format(specs) -> str:
    """`channels_first` for a stack that starts by taking its examples channels-first."""
    specs = list(specs)
    return CHANNELS_FIRST if specs and isinstance(specs[0], FromChannelsFirst) else CHANNELS_LAST
