"""Normalisations of channels-last values, each with a scale (`weight`) and most with a shift
(`bias`) per channel, as PyTorch's modules of the same names.

| verb                       | normalises, per example                 | slots                          |
|----------------------------|-----------------------------------------|--------------------------------|
| layer_norm(eps)            | the channels of every place             | weight, bias                   |
| rms_norm(eps)              | the channels of every place, by the RMS | weight                         |
| batch_norm(momentum, eps)  | each channel over the batch and places  | weight, bias, running_mean/var |
| group_norm(groups, eps)    | each group of channels over the places  | weight, bias                   |
| instance_norm(eps)         | each channel over the places            | weight, bias                   |

A batch normalisation in training normalises by the batch's statistics (biased variance) and
updates its running statistics as PyTorch's does: running = (1 - momentum) running + momentum
batch, with the unbiased variance; in evaluation it normalises by the running statistics.
"""

from __future__ import annotations

import numpy as np
from pydantic import Field, PositiveInt

from deepsharp.errors import OpError, ShapeError
from deepsharp.layers.base import Flow, LayerSpec, Lowering, Step, claim, layer
from deepsharp.layers.masks import masked_moments, real_steps
from deepsharp.module import Parameter
from deepsharp.shape import Shape
from deepsharp.tensors import Tensor, apply


def _channels(shape: Shape, places: bool = False) -> int:
    if shape.rank < (2 if places else 1):
        need = "places and channels" if places else "at least one axis (the channels)"
        raise ShapeError(f"needs {need}, received an input of shape {shape}")
    return shape[-1]


class NormStep(Step):
    def __init__(self, spec: LayerSpec, place: str, shape: Shape, channels: int,
                 bias: bool = True) -> None:
        super().__init__(spec, place, shape, shape)
        claim(2 * channels, f"{spec.kind} over {channels} channels")
        self.weight = Parameter(np.ones(channels, np.float32))
        if bias:
            self.bias = Parameter(np.zeros(channels, np.float32))


def _normalised(x: Tensor, mean: Tensor, var: Tensor, eps: float, weight: Tensor | None = None,
                bias: Tensor | None = None) -> Tensor:
    """(x - mean) / sqrt(var + eps) [* weight + bias], written with primitives."""
    y = apply("div", apply("sub", x, mean), apply("sqrt", apply("add", var, float(eps))))
    if weight is not None:
        y = apply("add", apply("mul", y, weight), bias)
    return y


@layer("layer_norm")
class LayerNorm(LayerSpec):
    """(x - mean) / sqrt(var + eps) * weight + bias over the channels of every place."""

    eps: float = Field(1e-5, gt=0)

    def build(self, shape: Shape, at: Lowering) -> "LayerNormStep":
        return LayerNormStep(self, at.place, shape, _channels(shape))


class LayerNormStep(NormStep):
    def forward(self, x: Tensor) -> Tensor:
        return apply("layer_norm", x, self.weight, self.bias, eps=float(self.spec.eps))


@layer("rms_norm")
class RmsNorm(LayerSpec):
    """x / sqrt(mean(x^2) + eps) * weight over the channels of every place."""

    eps: float = Field(1e-5, gt=0)

    def build(self, shape: Shape, at: Lowering) -> "RmsNormStep":
        return RmsNormStep(self, at.place, shape, _channels(shape), bias=False)


class RmsNormStep(NormStep):
    def forward(self, x: Tensor) -> Tensor:
        return apply("rms_norm", x, self.weight, eps=float(self.spec.eps))


@layer("batch_norm")
class BatchNorm(LayerSpec):
    """Each channel normalised over the batch and the places (see the module's docstring)."""

    training_fields = ("momentum",)
    momentum: float = Field(0.1, ge=0.0, le=1.0)
    eps: float = Field(1e-5, gt=0)

    def build(self, shape: Shape, at: Lowering) -> "BatchNormStep":
        return BatchNormStep(self, at.place, shape, _channels(shape))


class BatchNormStep(NormStep):
    def __init__(self, spec: LayerSpec, place: str, shape: Shape, channels: int) -> None:
        super().__init__(spec, place, shape, channels)
        self.register_buffer("running_mean", np.zeros(channels, np.float32))
        self.register_buffer("running_var", np.ones(channels, np.float32))

    def forward(self, x: Tensor) -> Tensor:
        eps = float(self.spec.eps)
        if not self.training:
            return apply("batch_norm_eval", x, self.weight, self.bias, self.running_mean,
                         self.running_var, eps=eps)
        try:
            y, mean, var = apply("batch_norm", x, self.weight, self.bias, eps=eps)
        except OpError as error:  # the primitive's refusal, named with the layer's place
            reason = str(error).removeprefix("batch_norm: ")
            raise OpError(f"batch_norm at place {self.place}: {reason}") from None
        self._update(mean._data, var._data, x.size // x.shape[-1])
        return y

    def call(self, flow: Flow) -> Flow:
        """Over a masked series in training, the batch's statistics come from the real steps
        only (and so does the running update); in evaluation the running statistics act on every
        step alike, so the mask only rides on."""
        if flow.mask is None or not self.training:
            return super().call(flow)
        x = flow.value
        real = real_steps(flow.mask, x)
        axes = tuple(range(x.ndim - 1))
        mean, var = masked_moments(x, real, axes)
        y = _normalised(x, mean, var, self.spec.eps, self.weight, self.bias)
        count = int(real._data.sum())
        if count > 1:
            self._update(mean._data.reshape(-1), var._data.reshape(-1), count)
        return Flow(y, flow.mask)

    def _update(self, mean: np.ndarray, var: np.ndarray, count: int) -> None:
        """PyTorch's running update, the variance unbiased (count / (count - 1))."""
        m = self.spec.momentum
        running_mean, running_var = self.running_mean._data, self.running_var._data
        unbiased = var * (count / (count - 1))
        running_mean *= 1.0 - m
        running_mean += (m * mean).astype(running_mean.dtype)
        running_var *= 1.0 - m
        running_var += (m * unbiased).astype(running_var.dtype)


@layer("group_norm")
class GroupNorm(LayerSpec):
    """Each group of channels / groups channels normalised over the places, per example."""

    groups: PositiveInt
    eps: float = Field(1e-5, gt=0)

    def build(self, shape: Shape, at: Lowering) -> "GroupNormStep":
        channels = _channels(shape)
        if channels % self.groups:
            raise ShapeError(f"{self.groups} groups must divide the {channels} channels")
        return GroupNormStep(self, at.place, shape, channels)


class GroupNormStep(NormStep):
    def groups(self) -> int:
        return self.spec.groups

    def call(self, flow: Flow) -> Flow:
        """Over a masked series, each example's statistics come from its real steps only."""
        if flow.mask is None:
            return super().call(flow)
        x = flow.value
        batch, steps, channels = x.shape
        groups = self.groups()
        grouped = apply("reshape", x, shape=(batch, steps, groups, channels // groups))
        mean, var = masked_moments(grouped, real_steps(flow.mask, grouped), (1, 3))
        y = _normalised(grouped, mean, var, self.spec.eps)
        y = apply("reshape", y, shape=(batch, steps, channels))
        return Flow(apply("add", apply("mul", y, self.weight), self.bias), flow.mask)

    def forward(self, x: Tensor) -> Tensor:
        return apply("group_norm", x, self.weight, self.bias, groups=self.groups(),
                     eps=float(self.spec.eps))


@layer("instance_norm")
class InstanceNorm(LayerSpec):
    """Each channel normalised over the places, per example (a group norm of one channel per
    group), with a scale and a shift per channel."""

    eps: float = Field(1e-5, gt=0)

    def build(self, shape: Shape, at: Lowering) -> "InstanceNormStep":
        return InstanceNormStep(self, at.place, shape, _channels(shape, places=True))


class InstanceNormStep(GroupNormStep):
    def groups(self) -> int:
        return self.input_shape[-1]
