"""Embeddings: `embedding` looks integer ids up in a table; `periodic_embedding` turns numeric
features round (Gorishniy et al. 2022, "On Embeddings for Numerical Features in Tabular Deep
Learning")."""

from __future__ import annotations

import math

import numpy as np
from pydantic import Field, NonNegativeInt, PositiveInt, ValidationInfo, field_validator

from deepsharp.errors import ShapeError
from deepsharp.layers.base import Flow, LayerSpec, Lowering, Step, claim, layer, require_rank
from deepsharp.layers.masks import end_padded, real_first
from deepsharp.module import Parameter
from deepsharp.shape import Shape
from deepsharp.tensors import Tensor, apply

TWO_PI = 2.0 * math.pi


@layer("embedding")
class Embedding(LayerSpec):
    """A table of `vocabulary` rows of `width`: id k gives row k (PyTorch's `nn.Embedding`).

    Input: int64 ids (steps,) -> (steps, width); the network's input (and the graph's) is then
    int64. With `padding_index`, that row starts at zero and is never trained, and the ids equal
    to it are the padding of a series: they make the mask that later layers honour (an LSTM stops
    before them, attention does not look at them). Rows are N(0, 1) as PyTorch draws them.

    >>> Sequential().embedding(1000, 64, padding_index=0).lstm(64)
    """

    input_dtype = "int64"
    vocabulary: PositiveInt
    width: PositiveInt
    padding_index: NonNegativeInt | None = None

    @field_validator("padding_index")
    @classmethod
    def _padding_in_vocabulary(cls, index: int | None, info: ValidationInfo) -> int | None:
        vocabulary = info.data.get("vocabulary")
        if index is not None and vocabulary is not None and index >= vocabulary:
            raise ValueError(f"must be below the vocabulary ({vocabulary})")
        return index

    def build(self, shape: Shape, at: Lowering) -> "EmbeddingStep":
        require_rank(self, shape, (1,), "a series of ids (steps)")
        weight = at.generator().standard_normal((self.vocabulary, self.width)).astype(np.float32)
        if self.padding_index is not None:
            weight[self.padding_index] = 0
        return EmbeddingStep(self, at.place, shape, Shape(shape[0], self.width), weight)


class EmbeddingStep(Step):
    def __init__(self, spec: Embedding, place: str, input_shape: Shape, output_shape: Shape,
                 weight: np.ndarray) -> None:
        super().__init__(spec, place, input_shape, output_shape)
        self.weight = Parameter(weight)

    def call(self, flow: Flow) -> Flow:
        ids = flow.value
        pad = self.spec.padding_index
        out = apply("embedding", self.weight, ids, padding_index=-1 if pad is None else pad)
        if pad is None:
            return Flow(out, None)
        # ids - pad is nonzero exactly where a step is real; a cast to bool says so
        return Flow(out, apply("cast", apply("sub", ids.detach(), pad), to=np.dtype(bool).str))

    def forward(self, x: Tensor) -> Tensor:
        return self.call(Flow(x)).value


@layer("periodic_embedding")
class PeriodicEmbedding(LayerSpec):
    """Each numeric feature x_j turned round at learned frequencies, then a dense per feature:

        v_j = concat(sin(2 pi c_j x_j), cos(2 pi c_j x_j)),  out_j = v_j @ W_j + b_j

    with c_j the feature's `frequencies` (N(0, sigma^2), truncated at 3 sigma, trained) and W_j
    (2 * frequencies, width) its own dense: the paper's "PL" embedding (its PLR adds `.relu()`);
    the dense is per feature, not shared (the later "lite" variant shares it). Weights and biases
    U(-1/sqrt(2 k), 1/sqrt(2 k)), as the authors' package draws them.

    Input (features,) -> (features, width).

    >>> Sequential().periodic_embedding(16, 8).relu().flatten().dense(1)
    """

    frequencies: PositiveInt
    width: PositiveInt
    sigma: float = Field(0.01, gt=0)

    def build(self, shape: Shape, at: Lowering) -> "PeriodicEmbeddingStep":
        require_rank(self, shape, (1,), "a row of numeric features")
        features, k = shape[0], self.frequencies
        generator = at.generator()
        c = generator.normal(0.0, self.sigma, size=(features, k))
        c = np.clip(c, -3 * self.sigma, 3 * self.sigma).astype(np.float32)
        bound = 1.0 / math.sqrt(2 * k)
        weight = generator.uniform(-bound, bound, (features, 2 * k, self.width)).astype(np.float32)
        bias = generator.uniform(-bound, bound, (features, self.width)).astype(np.float32)
        return PeriodicEmbeddingStep(self, at.place, shape, Shape(features, self.width),
                                     c, weight, bias)


class PeriodicEmbeddingStep(Step):
    """Holds `frequencies` (features, k), `weight` (features, 2k, width), `bias` (features, width)."""

    def __init__(self, spec: PeriodicEmbedding, place: str, input_shape: Shape,
                 output_shape: Shape, frequencies: np.ndarray, weight: np.ndarray,
                 bias: np.ndarray) -> None:
        super().__init__(spec, place, input_shape, output_shape)
        self.frequencies = Parameter(frequencies)
        self.weight = Parameter(weight)
        self.bias = Parameter(bias)

    def forward(self, x: Tensor) -> Tensor:
        features = self.input_shape[0]
        turns = apply("mul", self.frequencies, TWO_PI)                 # 2 pi c   (F, k)
        v = apply("mul", apply("reshape", x, shape=(-1, features, 1)), turns)   # (B, F, k)
        v = apply("concat", apply("sin", v), apply("cos", v), axis=2)  # (B, F, 2k)
        per_feature = apply("matmul", apply("transpose", v, perm=(1, 0, 2)), self.weight)
        return apply("add", apply("transpose", per_feature, perm=(1, 0, 2)), self.bias)


def sine_table(length: int, width: int) -> np.ndarray:
    """The sinusoidal positions of "Attention is all you need": row p, column 2i holds
    sin(p / 10000^(2i/width)) and column 2i+1 cos(p / 10000^(2i/width)); float64 math, float32
    values."""
    positions = np.arange(length, dtype=np.float64)[:, None]
    rates = np.exp(-math.log(10000.0) * np.arange(0, width, 2, dtype=np.float64) / width)
    table = np.zeros((length, width), np.float64)
    table[:, 0::2] = np.sin(positions * rates)
    table[:, 1::2] = np.cos(positions * rates[: width // 2])
    return table.astype(np.float32)


@layer("sine_positions")
class SinePositions(LayerSpec):
    """x + the sinusoidal position table (see `sine_table`), row p added to step p.

    With a mask, p counts the real steps only: a real step takes the row of its rank among the
    series' real steps, and the padding the rows after them, in order (what padding at the end
    takes), so padding at the start or between real steps moves no real step's position.

    Input (steps, width) -> the same. The table is worked out for `max_length` steps: a longer
    series is refused (the exported graph holds the same table and slices it to the series'
    length, so it has the same limit).
    """

    max_length: PositiveInt = 2048

    def build(self, shape: Shape, at: Lowering) -> "SinePositionsStep":
        require_rank(self, shape, (2,), "a series (steps x channels)")
        if shape[0] > self.max_length:
            raise ShapeError(f"a series of {shape[0]} steps is longer than max_length "
                             f"{self.max_length}")
        return SinePositionsStep(self, at.place, shape, shape)


class SinePositionsStep(Step):
    def __init__(self, spec: SinePositions, place: str, input_shape: Shape,
                 output_shape: Shape) -> None:
        super().__init__(spec, place, input_shape, output_shape)
        claim(spec.max_length * input_shape[1], f"a sine table of {spec.max_length} steps")
        object.__setattr__(self, "table", sine_table(spec.max_length, input_shape[1]))

    def call(self, flow: Flow) -> Flow:
        # positions count from a series' first step: with padding before a real step, each step
        # takes the row of its place among the real steps (padding after them, as at the end)
        if flow.mask is None or end_padded(flow.mask):
            return super().call(flow)
        self._check_length(flow.value)
        places = real_first(flow.mask).places
        return Flow(apply("add", flow.value, apply("gather", Tensor(self.table), places, axis=0)),
                    flow.mask)

    def _check_length(self, x: Tensor) -> None:
        steps = x.shape[1]
        if steps > self.spec.max_length:
            raise ShapeError(f"sine_positions at place {self.place}: a series of {steps} steps is "
                             f"longer than max_length {self.spec.max_length}")

    def forward(self, x: Tensor) -> Tensor:
        self._check_length(x)
        return apply("add", x, Tensor(self.table[:x.shape[1]]))
