"""pad and upsample: series, images and volumes moved to new places.

pad(widths, mode="constant", value=0.0): `widths` is one number for every side of every place
axis, one per place axis (both sides), or one (before, after) pair per place axis. "reflect"
mirrors the places next to the border (the edge itself not repeated, PyTorch's "reflect"),
"edge" repeats the edge (PyTorch's "replicate").

upsample(scale=None, size=None, mode="nearest", align_corners=False): the places multiplied by an
integer `scale` or made `size`, as PyTorch's `interpolate`: "nearest" copies place
floor(o n / out); "bilinear" interpolates linearly along every place axis from the half-pixel
centres (or the corners with `align_corners`).
"""

from __future__ import annotations

from typing import Any, Literal, Union

from pydantic import NonNegativeInt, PositiveInt, field_validator, model_validator

from deepsharp.errors import ShapeError
from deepsharp.layers.base import LayerSpec, Lowering, Step, layer
from deepsharp.shape import Shape
from deepsharp.tensors import Tensor, apply

Widths = Union[NonNegativeInt, tuple[NonNegativeInt, ...],
               tuple[tuple[NonNegativeInt, NonNegativeInt], ...]]


def _places_of(shape: Shape, what: str) -> int:
    if shape.rank < 2:
        raise ShapeError(f"{what} needs places and channels (a series, an image or a volume), "
                         f"received an input of shape {shape}")
    return shape.rank - 1


@layer("pad")
class Pad(LayerSpec):
    """Pad the places (not the channels) with a constant, a reflection or the edge."""

    widths: Widths
    mode: Literal["constant", "reflect", "edge"] = "constant"
    value: float = 0.0

    def place_pads(self, places: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """(begins, ends) of the place axes."""
        w = self.widths
        if isinstance(w, int):
            return (w,) * places, (w,) * places
        if len(w) != places:
            raise ShapeError(f"widths {w} give {len(w)} place axes, the input has {places}")
        if isinstance(w[0], tuple):
            return tuple(p[0] for p in w), tuple(p[1] for p in w)
        return tuple(w), tuple(w)

    def pads(self, rank: int) -> tuple[int, ...]:
        """The `pad` primitive's pads over every axis of a batch of `rank` axes."""
        begins, ends = self.place_pads(rank - 2)
        return (0, *begins, 0, 0, *ends, 0)

    def build(self, shape: Shape, at: Lowering) -> "PadStep":
        places = _places_of(shape, "pad")
        begins, ends = self.place_pads(places)
        lengths = tuple(shape)[:-1]
        if self.mode == "reflect":
            for n, b, e in zip(lengths, begins, ends):
                if max(b, e) >= n:
                    raise ShapeError(f"a reflection of {max(b, e)} places needs more than {n}")
        out = tuple(n + b + e for n, b, e in zip(lengths, begins, ends))
        return PadStep(self, at.place, shape, Shape(*out, shape[-1]))


class PadStep(Step):
    def mask_refusal(self) -> str | None:
        begins, ends = self.spec.place_pads(self.input_shape.rank - 1)
        if begins[0] == ends[0] == 0:
            return None  # the steps are left as they are
        return ("its border would go round the padded series, not next to each series' real "
                "steps; let the convolution pad (conv1d with padding 'same' or 'causal' is "
                "exact over each series' real steps), or give series without a mask")

    def forward(self, x: Tensor) -> Tensor:
        spec = self.spec
        return apply("pad", x, pads=spec.pads(x.ndim), mode=spec.mode, value=float(spec.value))


@layer("upsample")
class Upsample(LayerSpec):
    """Resize the places by an integer `scale` (one, or one per place axis) or to `size`."""

    scale: PositiveInt | tuple[PositiveInt, ...] | None = None
    size: PositiveInt | tuple[PositiveInt, ...] | None = None
    mode: Literal["nearest", "bilinear"] = "nearest"
    align_corners: bool = False

    @field_validator("align_corners")
    @classmethod
    def _corners(cls, value: bool, info) -> bool:
        if value and info.data.get("mode") == "nearest":
            raise ValueError("applies to mode 'bilinear' only")
        return value

    @model_validator(mode="after")
    def _one_of(self) -> "Upsample":
        if (self.scale is None) == (self.size is None):
            raise ValueError("give exactly one of scale and size")
        return self

    def sizes(self, lengths: tuple[int, ...]) -> tuple[int, ...]:
        """The output places for input places of `lengths`."""
        given = self.scale if self.scale is not None else self.size
        per = given if isinstance(given, tuple) else (given,) * len(lengths)
        if len(per) != len(lengths):
            raise ShapeError(f"{'scale' if self.scale is not None else 'size'} {given} gives "
                             f"{len(per)} place axes, the input has {len(lengths)}")
        if self.scale is not None:
            return tuple(n * s for n, s in zip(lengths, per))
        return tuple(per)

    def attrs(self) -> dict[str, Any]:
        return {"mode": "nearest" if self.mode == "nearest" else "linear",
                "align_corners": int(self.align_corners)}

    def build(self, shape: Shape, at: Lowering) -> "UpsampleStep":
        _places_of(shape, "upsample")
        out = self.sizes(tuple(shape)[:-1])
        return UpsampleStep(self, at.place, shape, Shape(*out, shape[-1]))


class UpsampleStep(Step):
    def mask_refusal(self) -> str | None:
        spec = self.spec
        if spec.scale is not None and spec.sizes((1,) * (self.input_shape.rank - 1))[0] == 1:
            return None  # the steps are left as they are
        return ("it resamples the padded series as a whole, so the real steps' new places "
                "would take padding in; upsample series without a mask")

    def forward(self, x: Tensor) -> Tensor:
        sizes = self.spec.sizes(x.shape[1:-1])
        return apply("resize", x, sizes=sizes, **self.spec.attrs())
