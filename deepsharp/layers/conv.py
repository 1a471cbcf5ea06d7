"""Convolutions over series, images and volumes held channels-last, and their transposes.

conv1d/conv2d/conv3d(filters, kernel, stride=1, padding="valid", dilation=1, groups=1, bias=True)
conv_transpose1d/2d/3d(filters, kernel, stride=1, padding="valid", output_padding=0, dilation=1,
                       bias=True)

Kernels are kept (*kernel, C_in / groups, C_out) for a convolution and (*kernel, C_in, C_out) for
a transposed one: the window's places, then input channels, then output channels. They start
Kaiming-uniform (a = sqrt 5) with fan-in uniform biases, as PyTorch's Conv and ConvTranspose.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
from pydantic import NonNegativeInt, PositiveInt, field_validator

from deepsharp.errors import ShapeError
from deepsharp.layers.base import Flow, LayerSpec, Lowering, Step, layer
from deepsharp.layers.dense import fan_in_uniform, kaiming_uniform
from deepsharp.layers.masks import over_real_steps, refuse_mask
from deepsharp.layers.windows import (
    SAME_UPPER, Padding, Window, check_padding, check_per_axis, pads_of, per_axis,
    require_places, window_output,
)
from deepsharp.module import Parameter
from deepsharp.shape import Shape
from deepsharp.tensors import Tensor, apply


class ConvSpec(LayerSpec):
    """A convolution over `places` place axes (see the module's docstring)."""

    places: ClassVar[int] = 2
    filters: PositiveInt
    kernel: Window
    stride: Window = 1
    padding: Padding = "valid"
    dilation: Window = 1
    groups: PositiveInt = 1
    bias: bool = True

    @field_validator("kernel", "stride", "dilation")
    @classmethod
    def _per_axis(cls, value: Any) -> Any:
        return check_per_axis(value, cls.places)

    @field_validator("padding")
    @classmethod
    def _padding(cls, value: Any) -> Any:
        return check_padding(value, cls.places)

    @field_validator("groups")
    @classmethod
    def _groups(cls, value: int, info) -> int:
        filters = info.data.get("filters")
        if filters is not None and filters % value:
            raise ValueError(f"must divide filters ({filters})")
        return value

    # -- the window ----------------------------------------------------------------------------
    @property
    def kernel_size(self) -> tuple[int, ...]:
        return per_axis(self.kernel, self.places)

    @property
    def strides(self) -> tuple[int, ...]:
        return per_axis(self.stride, self.places)

    @property
    def dilations(self) -> tuple[int, ...]:
        return per_axis(self.dilation, self.places)

    def keeps_length(self) -> bool:
        """Whether every series keeps its length: one place axis, stride 1 and borders adding up
        to the dilated window less one (with stride 1 the same at every length, "same" too)."""
        if self.places != 1 or self.strides != (1,):
            return False
        pads, auto_pad = pads_of(self.padding, self.kernel_size, self.dilations)
        return auto_pad == SAME_UPPER or sum(pads) == (self.kernel_size[0] - 1) * self.dilations[0]

    def attrs(self) -> dict[str, Any]:
        """The `conv` primitive's attributes."""
        pads, auto_pad = pads_of(self.padding, self.kernel_size, self.dilations)
        return {"strides": self.strides, "dilations": self.dilations, "pads": pads,
                "groups": self.groups, "auto_pad": auto_pad}

    def build(self, shape: Shape, at: Lowering) -> "ConvStep":
        require_places(shape, self.places)
        channels = shape[-1]
        if channels % self.groups:
            raise ShapeError(f"{self.groups} groups must divide the {channels} input channels")
        out = window_output(shape, self.padding, self.kernel_size, self.strides, self.dilations)
        fan_in = channels // self.groups * int(np.prod(self.kernel_size))
        generator = at.generator()
        weight = kaiming_uniform(generator, fan_in,
                                 (*self.kernel_size, channels // self.groups, self.filters))
        bias = fan_in_uniform(generator, fan_in, (self.filters,)) if self.bias else None
        return ConvStep(self, at.place, shape, Shape(*out, self.filters), weight, bias)


class KernelStep(Step):
    """A step holding a kernel (and a bias): a convolution or a transposed one.

    Over a masked series, a kernel that keeps each series' length (stride 1, padding "same",
    "causal" or as many places) runs on each series' real steps alone (`masks.over_real_steps`):
    every real step's answer is the one of the unpadded series, and the padding's answers are
    zeros; any other kernel is refused by name."""

    lengths_kept: ClassVar[str] = ""  # the paddings keeping a series' length, for the refusal

    def __init__(self, spec: LayerSpec, place: str, input_shape: Shape, output_shape: Shape,
                 weight: np.ndarray, bias: np.ndarray | None) -> None:
        super().__init__(spec, place, input_shape, output_shape)
        self.weight = Parameter(weight)
        if bias is not None:
            self.bias = Parameter(bias)

    def inputs(self, x: Tensor) -> tuple[Tensor, ...]:
        return (x, self.weight, self.bias) if self.spec.bias else (x, self.weight)

    def mask_refusal(self) -> str | None:
        spec = self.spec
        if spec.places != 1:
            return (f"it mixes neighbouring places of {'an image' if spec.places == 2 else 'a volume'}"
                    f", which a series' mask does not describe; give it values without a mask")
        if spec.keeps_length():
            return None
        return (f"with stride {spec.stride}, dilation {spec.dilation} and padding {spec.padding!r} "
                f"its output steps are not its input's, so the mask cannot ride on; use stride 1 "
                f"with padding {self.lengths_kept} (exact over each series' real steps), reduce "
                f"over the steps first, or give series without a mask")

    def call(self, flow: Flow) -> Flow:
        if flow.mask is None:
            return super().call(flow)
        refuse_mask(self, flow.mask)
        return Flow(over_real_steps(self.forward, flow.value, flow.mask), flow.mask)


class ConvStep(KernelStep):
    lengths_kept = "'same' or 'causal'"

    def forward(self, x: Tensor) -> Tensor:
        return apply("conv", *self.inputs(x), **self.spec.attrs())


@layer("conv1d")
class Conv1d(ConvSpec):
    """A convolution along the steps of a series (steps x channels): y[t] = sum_k x[t s + k d]
    @ W[k] + b. `padding="causal"` lets no step see a later one."""

    places: ClassVar[int] = 1


@layer("conv2d")
class Conv2d(ConvSpec):
    """A convolution over an image (height x width x channels), as PyTorch's Conv2d."""

    places: ClassVar[int] = 2


@layer("conv3d")
class Conv3d(ConvSpec):
    """A convolution over a volume (depth x height x width x channels), as PyTorch's Conv3d."""

    places: ClassVar[int] = 3


# -- transposed convolutions ---------------------------------------------------------------------
class ConvTransposeSpec(LayerSpec):
    """The adjoint of a convolution (see the module's docstring): out = (n - 1) stride
    + (kernel - 1) dilation + 1 + output_padding - pads. `padding="same"` makes out = n stride."""

    places: ClassVar[int] = 2
    filters: PositiveInt
    kernel: Window
    stride: Window = 1
    padding: Padding = "valid"
    output_padding: NonNegativeInt | tuple[NonNegativeInt, ...] = 0
    dilation: Window = 1
    bias: bool = True

    @field_validator("kernel", "stride", "dilation", "output_padding")
    @classmethod
    def _per_axis(cls, value: Any) -> Any:
        return check_per_axis(value, cls.places)

    @field_validator("padding")
    @classmethod
    def _padding(cls, value: Any) -> Any:
        return check_padding(value, cls.places, causal=False)

    @field_validator("dilation")
    @classmethod
    def _output_padding(cls, value: Any, info) -> Any:
        stride = per_axis(info.data.get("stride", 1), cls.places)
        extra = per_axis(info.data.get("output_padding", 0), cls.places)
        for p, s, d in zip(extra, stride, per_axis(value, cls.places)):
            if p >= max(s, d):
                raise ValueError(f"must leave output_padding {p} below the stride or the "
                                 f"dilation (PyTorch's rule)")
        return value

    @property
    def kernel_size(self) -> tuple[int, ...]:
        return per_axis(self.kernel, self.places)

    @property
    def strides(self) -> tuple[int, ...]:
        return per_axis(self.stride, self.places)

    @property
    def dilations(self) -> tuple[int, ...]:
        return per_axis(self.dilation, self.places)

    @property
    def output_paddings(self) -> tuple[int, ...]:
        return per_axis(self.output_padding, self.places)

    def pads(self) -> tuple[int, ...]:
        """The places cut from the full output (begins, ends); "same" cuts what makes
        out = n stride (the larger half at the end), whatever n is."""
        nd = self.places
        if self.padding == "same":
            totals = [(k - 1) * d + 1 - s + p for k, d, s, p in
                      zip(self.kernel_size, self.dilations, self.strides, self.output_paddings)]
            if min(totals) < 0:
                axis = totals.index(min(totals))
                raise ShapeError(f"padding 'same' needs (kernel - 1) dilation + 1 + output_padding "
                                 f">= stride on every axis; axis {axis} has kernel "
                                 f"{self.kernel_size[axis]}, dilation {self.dilations[axis]}, "
                                 f"output_padding {self.output_paddings[axis]}, stride "
                                 f"{self.strides[axis]}")
            return tuple(t // 2 for t in totals) + tuple(t - t // 2 for t in totals)
        if self.padding == "valid":
            return (0,) * (2 * nd)
        pads, _ = pads_of(self.padding, self.kernel_size, self.dilations)
        return pads

    def attrs(self) -> dict[str, Any]:
        return {"strides": self.strides, "dilations": self.dilations, "pads": self.pads(),
                "output_padding": self.output_paddings}

    def keeps_length(self) -> bool:
        """Whether every series keeps its length: one place axis, stride 1, and pads adding up to
        the dilated window less one plus the output padding (then at every length)."""
        return self.places == 1 and self.strides == (1,) and self.output_lengths((1,)) == (1,)

    def output_lengths(self, lengths) -> tuple[int, ...]:
        nd, pads = self.places, self.pads()
        return tuple((n - 1) * s + (k - 1) * d + 1 + p - pads[i] - pads[nd + i]
                     for i, (n, k, s, d, p) in enumerate(zip(
                         lengths, self.kernel_size, self.strides, self.dilations,
                         self.output_paddings)))

    def build(self, shape: Shape, at: Lowering) -> "ConvTransposeStep":
        require_places(shape, self.places)
        out = self.output_lengths(tuple(shape)[:-1])
        if min(out) < 1:
            raise ShapeError(f"the padding {self.padding!r} leaves no output places")
        channels = shape[-1]
        # PyTorch's fan-in for ConvTranspose: weight (C_in, C_out, *kernel) -> C_out * window
        fan_in = self.filters * int(np.prod(self.kernel_size))
        generator = at.generator()
        weight = kaiming_uniform(generator, fan_in, (*self.kernel_size, channels, self.filters))
        bias = fan_in_uniform(generator, fan_in, (self.filters,)) if self.bias else None
        return ConvTransposeStep(self, at.place, shape, Shape(*out, self.filters), weight, bias)


class ConvTransposeStep(KernelStep):
    lengths_kept = "'same'"

    def forward(self, x: Tensor) -> Tensor:
        return apply("conv_transpose", *self.inputs(x), **self.spec.attrs())


@layer("conv_transpose1d")
class ConvTranspose1d(ConvTransposeSpec):
    """A transposed convolution along the steps of a series, as PyTorch's ConvTranspose1d."""

    places: ClassVar[int] = 1


@layer("conv_transpose2d")
class ConvTranspose2d(ConvTransposeSpec):
    """A transposed convolution over an image, as PyTorch's ConvTranspose2d."""

    places: ClassVar[int] = 2


@layer("conv_transpose3d")
class ConvTranspose3d(ConvTransposeSpec):
    """A transposed convolution over a volume, as PyTorch's ConvTranspose3d."""

    places: ClassVar[int] = 3
