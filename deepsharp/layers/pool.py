"""Poolings of series, images and volumes held channels-last.

max_pool1d/2d/3d(window, stride=None, padding="valid", dilation=1, ceil_mode=False)
avg_pool1d/2d/3d(window, stride=None, padding="valid", count_include_pad=False, ceil_mode=False)
global_avg_pool(keep_axes=False), global_max_pool(keep_axes=False)
adaptive_avg_pool(size), adaptive_max_pool(size)

A stride left out is the window (windows side by side). An explicit padding is at most half the
(dilated) window, PyTorch's rule, so every window holds a real value. Global pools take the mean
or the largest value of every channel over all places; adaptive pools cut the places into `size`
bins as PyTorch's AdaptiveAvgPool/AdaptiveMaxPool: bin i of n places covers
[floor(i n / size), ceil((i + 1) n / size)).
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import field_validator

from deepsharp.errors import ShapeError
from deepsharp.layers.base import Flow, LayerSpec, Lowering, Step, layer
from deepsharp.layers.masks import masked_max, masked_mean
from deepsharp.layers.windows import (
    Padding, Window, check_padding, check_per_axis, explicit_pads, pads_of, per_axis,
    require_places, window_output,
)
from deepsharp.shape import Shape
from deepsharp.tensors.ops.windows import CEIL_NEEDS_PADS
from deepsharp.tensors import Tensor, apply


class PoolSpec(LayerSpec):
    places: ClassVar[int] = 2
    primitive: ClassVar[str] = ""
    window: Window
    stride: Window | None = None
    padding: Padding = "valid"
    ceil_mode: bool = False

    @field_validator("window", "stride")
    @classmethod
    def _per_axis(cls, value: Any) -> Any:
        return check_per_axis(value, cls.places)

    @field_validator("padding")
    @classmethod
    def _padding(cls, value: Any) -> Any:
        return check_padding(value, cls.places, causal=False)

    @property
    def kernel_size(self) -> tuple[int, ...]:
        return per_axis(self.window, self.places)

    @property
    def strides(self) -> tuple[int, ...]:
        return self.kernel_size if self.stride is None else per_axis(self.stride, self.places)

    @property
    def dilations(self) -> tuple[int, ...]:
        return (1,) * self.places

    def attrs(self) -> dict[str, Any]:
        pads, auto_pad = pads_of(self.padding, self.kernel_size, self.dilations)
        return {"kernel": self.kernel_size, "strides": self.strides, "pads": pads,
                "auto_pad": auto_pad, **({"ceil_mode": 1} if self.ceil_mode else {})}

    def build(self, shape: Shape, at: Lowering) -> "PoolStep":
        require_places(shape, self.places)
        if self.ceil_mode and self.padding == "same":
            raise ShapeError(CEIL_NEEDS_PADS)
        if self.padding != "same":
            pads = explicit_pads(self.padding, tuple(shape)[:-1], self.kernel_size, self.strides,
                                 self.dilations)
            for i, (k, d) in enumerate(zip(self.kernel_size, self.dilations)):
                half = ((k - 1) * d + 1) // 2
                if max(pads[i], pads[self.places + i]) > half:
                    raise ShapeError(f"a padding of {max(pads[i], pads[self.places + i])} is more "
                                     f"than half the window of {(k - 1) * d + 1} places")
        out = window_output(shape, self.padding, self.kernel_size, self.strides, self.dilations,
                            ceil_mode=self.ceil_mode)
        return PoolStep(self, at.place, shape, Shape(*out, shape[-1]))


class PoolStep(Step):
    def mask_refusal(self) -> str:
        return ("a window of steps would take padded steps in; pool the whole series with "
                "global_max_pool or global_avg_pool (which leave the padding out), or give series "
                "without a mask")

    def forward(self, x: Tensor) -> Tensor:
        return apply(self.spec.primitive, x, **self.spec.attrs())


class MaxPoolSpec(PoolSpec):
    """The largest value of every window (the border holds -inf)."""

    primitive: ClassVar[str] = "max_pool"
    dilation: Window = 1

    @field_validator("dilation")
    @classmethod
    def _dilation(cls, value: Any) -> Any:
        return check_per_axis(value, cls.places)

    @property
    def dilations(self) -> tuple[int, ...]:
        return per_axis(self.dilation, self.places)

    def attrs(self) -> dict[str, Any]:
        return {**super().attrs(), "dilations": self.dilations}


class AvgPoolSpec(PoolSpec):
    """The mean of every window; the border's places count only with `count_include_pad`."""

    primitive: ClassVar[str] = "avg_pool"
    count_include_pad: bool = False

    def attrs(self) -> dict[str, Any]:
        return {**super().attrs(), "count_include_pad": int(self.count_include_pad)}


@layer("max_pool1d")
class MaxPool1d(MaxPoolSpec):
    """The largest value of every window of steps of a series."""

    places: ClassVar[int] = 1


@layer("max_pool2d")
class MaxPool2d(MaxPoolSpec):
    """The largest value of every window of an image, as PyTorch's MaxPool2d."""

    places: ClassVar[int] = 2


@layer("max_pool3d")
class MaxPool3d(MaxPoolSpec):
    """The largest value of every window of a volume."""

    places: ClassVar[int] = 3


@layer("avg_pool1d")
class AvgPool1d(AvgPoolSpec):
    """The mean of every window of steps of a series."""

    places: ClassVar[int] = 1


@layer("avg_pool2d")
class AvgPool2d(AvgPoolSpec):
    """The mean of every window of an image, as PyTorch's AvgPool2d."""

    places: ClassVar[int] = 2


@layer("avg_pool3d")
class AvgPool3d(AvgPoolSpec):
    """The mean of every window of a volume."""

    places: ClassVar[int] = 3


# -- global and adaptive pools ------------------------------------------------------------------
def _places_of(shape: Shape) -> int:
    if shape.rank < 2:
        raise ShapeError(f"needs places and channels (a series, an image or a volume), received "
                         f"an input of shape {shape}")
    return shape.rank - 1


class GlobalPoolSpec(LayerSpec):
    primitive: ClassVar[str] = ""
    keep_axes: bool = False

    def build(self, shape: Shape, at: Lowering) -> "GlobalPoolStep":
        places = _places_of(shape)
        out = Shape(*(1,) * places, shape[-1]) if self.keep_axes else Shape(shape[-1])
        return GlobalPoolStep(self, at.place, shape, out)


class GlobalPoolStep(Step):
    """Over a masked series, the real steps only: what the unpadded series gives (see `masks`)."""

    def mask_refusal(self) -> None:
        return None  # reduces over the real steps

    def call(self, flow: Flow) -> Flow:
        if flow.mask is None:
            return super().call(flow)
        pool = masked_mean if self.spec.primitive == "mean" else masked_max
        return Flow(pool(flow.value, flow.mask, int(self.spec.keep_axes)), None)

    def forward(self, x: Tensor) -> Tensor:
        return apply(self.spec.primitive, x, axes=tuple(range(1, x.ndim - 1)),
                     keepdims=int(self.spec.keep_axes))


@layer("global_avg_pool")
class GlobalAvgPool(GlobalPoolSpec):
    """The mean of every channel over all places: (*places, C) -> (C,), or (1, ..., 1, C) with
    `keep_axes`."""

    primitive: ClassVar[str] = "mean"


@layer("global_max_pool")
class GlobalMaxPool(GlobalPoolSpec):
    """The largest value of every channel over all places: (*places, C) -> (C,), or
    (1, ..., 1, C) with `keep_axes`."""

    primitive: ClassVar[str] = "max"


class AdaptivePoolSpec(LayerSpec):
    primitive: ClassVar[str] = ""
    size: Window

    def sizes(self, places: int) -> tuple[int, ...]:
        sizes = per_axis(self.size, places)
        if len(sizes) != places:
            raise ShapeError(f"size {self.size} needs {len(sizes)} place axes, the input has "
                             f"{places}")
        return sizes

    def build(self, shape: Shape, at: Lowering) -> "AdaptivePoolStep":
        sizes = self.sizes(_places_of(shape))
        return AdaptivePoolStep(self, at.place, shape, Shape(*sizes, shape[-1]))


class AdaptivePoolStep(Step):
    def mask_refusal(self) -> str:
        return ("its bins are cut from the padded length, not each series' own; pool the whole "
                "series with global_max_pool or global_avg_pool, or give series without a mask")

    def forward(self, x: Tensor) -> Tensor:
        return apply(self.spec.primitive, x, sizes=tuple(self.output_shape)[:-1])


@layer("adaptive_avg_pool")
class AdaptiveAvgPool(AdaptivePoolSpec):
    """The mean of each of `size` bins of the places, as PyTorch's AdaptiveAvgPool."""

    primitive: ClassVar[str] = "adaptive_avg_pool"


@layer("adaptive_max_pool")
class AdaptiveMaxPool(AdaptivePoolSpec):
    """The largest value of each of `size` bins of the places, as PyTorch's AdaptiveMaxPool."""

    primitive: ClassVar[str] = "adaptive_max_pool"
