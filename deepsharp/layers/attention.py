"""Self-attention over a series: `attention()` (one head) and `multi_head_attention(heads, width)`
(PyTorch's `nn.MultiheadAttention` with query = key = value = the series).

    q = x Wq + bq, k = x Wk + bk, v = x Wv + bv        (each (steps, width), cut into heads)
    a = softmax(q k^T / sqrt(width / heads) + mask) v  (per head; see the `attention` primitive)
    out = join(a) Wo + bo                               (multi-head attention only)

The mask riding with the series (an embedding's padding, `masking`) leaves padded keys out; with
`causal=True` step i looks at steps j <= i only. A query with no key left to look at gives zeros.
"""

from __future__ import annotations

import math

import numpy as np
from pydantic import PositiveInt, ValidationInfo, field_validator

from deepsharp.layers.base import Flow, LayerSpec, Lowering, Step, layer, require_rank
from deepsharp.layers.dense import kaiming_uniform
from deepsharp.module import Parameter
from deepsharp.shape import Shape
from deepsharp.tensors import Tensor, apply, modes

PROJECTIONS = ("query", "key", "value")


def xavier_uniform(generator: np.random.Generator, fan_in: int, fan_out: int,
                   shape: tuple[int, ...]) -> np.ndarray:
    bound = math.sqrt(6.0 / (fan_in + fan_out))
    return generator.uniform(-bound, bound, size=shape).astype(np.float32)


class SelfAttentionSpec(LayerSpec):
    """What the two attention layers share: projections, heads, the causal flag (a field of each,
    declared last so the verbs read `multi_head_attention(heads, width, causal=False)`)."""

    def head_count(self) -> int:
        return 1

    def model_width(self, channels: int) -> int:
        return channels

    def multi_head(self) -> bool:
        """Multi-head attention cuts the heads out (even one) and has an output projection."""
        return False

    def build(self, shape: Shape, at: Lowering) -> "SelfAttentionStep":
        require_rank(self, shape, (2,), "a series (steps x channels)")
        channels, width = shape[1], self.model_width(shape[1])
        generator = at.generator()
        # PyTorch draws in_proj_weight (3 width, in) Xavier-uniform as one matrix, biases zero
        stacked = xavier_uniform(generator, channels, 3 * width, (3, channels, width))
        weights = {}
        for name, kernel in zip(PROJECTIONS, stacked):
            weights[f"{name}_weight"] = kernel
            weights[f"{name}_bias"] = np.zeros(width, np.float32)
        if self.multi_head():  # out_proj: Linear's Kaiming-uniform weight, its bias zeroed
            weights["output_weight"] = kaiming_uniform(generator, width, (width, width))
            weights["output_bias"] = np.zeros(width, np.float32)
        return SelfAttentionStep(self, at.place, shape, Shape(shape[0], width), weights)


class SelfAttentionStep(Step):
    """Holds `query_weight`, `key_weight`, `value_weight` (in, width) with their biases, and for
    multi-head attention `output_weight` (width, width) and `output_bias`."""

    def __init__(self, spec: SelfAttentionSpec, place: str, input_shape: Shape,
                 output_shape: Shape, weights: dict[str, np.ndarray]) -> None:
        super().__init__(spec, place, input_shape, output_shape)
        for name, array in weights.items():
            setattr(self, name, Parameter(array))

    @property
    def heads(self) -> int:
        return self.spec.head_count()

    @property
    def width(self) -> int:
        return self.output_shape[1]

    @property
    def scale(self) -> float:
        return 1.0 / math.sqrt(self.width // self.heads)

    def _project(self, x: Tensor, name: str) -> Tensor:
        y = apply("add", apply("matmul", x, getattr(self, f"{name}_weight")),
                  getattr(self, f"{name}_bias"))
        if not self.spec.multi_head():  # one-head attention() cuts no heads
            return y
        batch, steps = x.shape[:2]
        y = apply("reshape", y, shape=(batch, steps, self.heads, self.width // self.heads))
        return apply("transpose", y, perm=(0, 2, 1, 3))

    def call(self, flow: Flow) -> Flow:
        x = flow.value
        extra = () if flow.mask is None else (flow.mask,)
        if modes.may_fuse():  # the same numbers from one fused primitive
            a = apply("self_attention", x,
                      *(getattr(self, f"{name}_weight") for name in PROJECTIONS),
                      *(getattr(self, f"{name}_bias") for name in PROJECTIONS), *extra,
                      heads=self.heads, scale=self.scale, causal=int(self.spec.causal))
            if self.spec.multi_head():
                a = apply("matmul_add", a, self.output_weight, self.output_bias)
            return Flow(a, flow.mask)
        q, k, v = (self._project(x, name) for name in PROJECTIONS)
        a = apply("attention", q, k, v, *extra, scale=self.scale, causal=int(self.spec.causal))
        if self.spec.multi_head():
            a = apply("transpose", a, perm=(0, 2, 1, 3))
            a = apply("reshape", a, shape=(x.shape[0], x.shape[1], self.width))
        if self.spec.multi_head():
            a = apply("add", apply("matmul", a, self.output_weight), self.output_bias)
        return Flow(a, flow.mask)

    def forward(self, x: Tensor) -> Tensor:
        return self.call(Flow(x)).value


@layer("attention")
class Attention(SelfAttentionSpec):
    """Single-head scaled dot-product self-attention with query, key and value projections of the
    input's width and no output projection: softmax(q k^T / sqrt(channels) + mask) v.

    Input (steps, channels) -> (steps, channels).

    >>> Sequential().embedding(1000, 32, padding_index=0).attention().lstm(16)
    """

    causal: bool = False


@layer("multi_head_attention")
class MultiHeadAttention(SelfAttentionSpec):
    """Multi-head self-attention, PyTorch's `nn.MultiheadAttention(width, heads)` on
    (x, x, x): `heads` heads of width / heads each, then the output projection. Initialised as
    PyTorch does (Xavier-uniform projections with zero biases, Kaiming-uniform output weight with
    a zero bias).

    Input (steps, channels) -> (steps, width).

    >>> Sequential().multi_head_attention(4, 128, causal=True)
    """

    heads: PositiveInt
    width: PositiveInt
    causal: bool = False

    @field_validator("width")
    @classmethod
    def _heads_divide_width(cls, width: int, info: ValidationInfo) -> int:
        heads = info.data.get("heads")
        if heads and width % heads:
            raise ValueError(f"must be a multiple of heads ({heads})")
        return width

    def head_count(self) -> int:
        return self.heads

    def model_width(self, channels: int) -> int:
        return self.width

    def multi_head(self) -> bool:
        return True
