"""attention_pool(): a series pooled into one row by learned attention over its steps."""

from __future__ import annotations

import math

import numpy as np

from deepsharp.layers.base import Flow, LayerSpec, Lowering, Step, layer, require_rank
from deepsharp.module import Parameter
from deepsharp.shape import Shape
from deepsharp.tensors import Tensor, apply

LEFT_OUT = -1e9  # the score of a padded step: its softmax weight is exactly 0 in float32


@layer("attention_pool")
class AttentionPool(LayerSpec):
    """Attention pooling: each step scored by a learned vector w, the scores' softmax over the
    steps weighing them:

        s_t = x_t . w,   a = softmax(s) over the steps,   out = sum_t a_t x_t

    Input (steps, channels) -> (channels,). The mask riding with the series (an embedding's
    padding, `masking`) leaves padded steps out, wherever they are, so a padded series gives what
    it gives unpadded; a series with no real step gives zeros. w starts U(-1/sqrt(C), 1/sqrt(C)).

    >>> Sequential().embedding(1000, 32, padding_index=0).attention().attention_pool().dense(2)
    """

    def build(self, shape: Shape, at: Lowering) -> "AttentionPoolStep":
        require_rank(self, shape, (2,), "a series (steps x channels)")
        channels = shape[1]
        bound = 1.0 / math.sqrt(channels)
        weight = at.generator().uniform(-bound, bound, channels).astype(np.float32)
        return AttentionPoolStep(self, at.place, shape, Shape(channels), weight)


class AttentionPoolStep(Step):
    """Holds `weight` (channels,), the vector scoring each step."""

    def __init__(self, spec: AttentionPool, place: str, input_shape: Shape, output_shape: Shape,
                 weight: np.ndarray) -> None:
        super().__init__(spec, place, input_shape, output_shape)
        self.weight = Parameter(weight)

    def mask_refusal(self) -> None:
        return None  # weighs the real steps only

    def call(self, flow: Flow) -> Flow:
        x, mask = flow.value, flow.mask
        batch, steps = x.shape[:2]
        scores = apply("sum", apply("mul", x, self.weight), axes=(2,), keepdims=0)
        if mask is not None:
            scores = apply("where", mask, scores, LEFT_OUT)
        weights = apply("softmax", scores, axis=1)
        if mask is not None:  # a series with no real step: uniform weights, then all zero
            weights = apply("mul", weights, apply("cast", mask, to=x.dtype.str))
        spread = apply("reshape", weights, shape=(batch, steps, 1))
        return Flow(apply("sum", apply("mul", x, spread), axes=(1,), keepdims=0), None)

    def forward(self, x: Tensor) -> Tensor:
        return self.call(Flow(x)).value
