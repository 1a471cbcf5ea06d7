"""lstm(units, ...) and gru(units, ...): recurrent layers over a series, PyTorch's semantics.

Each layer of the stack (and each direction) is one fused primitive over the whole batch (see
`deepsharp.tensors.ops.recurrent`). A mask riding with the series (from an embedding's padding
index or `masking`) becomes each series' length, the number of real steps it has, as PyTorch's
packed series and ONNX's `sequence_lens` have it. Those count from a series' first step, so when
some series has padding before a real step (at the start, or holes) the layer runs on the series
with its real steps gathered to the front (`masks.real_first`) and puts the per-step outputs back
at their own steps: padding may be anywhere, and gives zeros; the last state is the last real
step's.
"""

from __future__ import annotations

import math
from typing import ClassVar

import numpy as np
from pydantic import PositiveInt

from deepsharp.layers.base import Flow, LayerSpec, Lowering, Step, layer, require_rank
from deepsharp.layers.masks import end_padded, real_first
from deepsharp.module import Parameter
from deepsharp.shape import Shape
from deepsharp.tensors import Tensor, apply

DIRECTIONS = ("", "_reverse")  # PyTorch's slot suffixes: forward, then reverse


def recurrent_uniform(generator: np.random.Generator, units: int, shape: tuple[int, ...]) -> np.ndarray:
    """PyTorch's initialisation of every LSTM/GRU weight and bias: U(-1/sqrt(H), 1/sqrt(H))."""
    bound = 1.0 / math.sqrt(units)
    return generator.uniform(-bound, bound, size=shape).astype(np.float32)


def lengths_of(mask: Tensor | None) -> Tensor | None:
    """How many real steps each series has (int64, (batch,)): the mask's count of True along the
    steps, computed by primitives so a tracer sees it."""
    if mask is None:
        return None
    return apply("sum", apply("cast", mask, to="<i8"), axes=(1,), keepdims=0)


class RecurrentSpec(LayerSpec):
    """A stack of `layers` recurrent layers of `units` each, one or both directions.

    Input (steps, in) -> (steps, units * directions) with `return_sequences`, else the last
    state (units * directions): for both directions, the forward direction's state after the last
    real step and the reverse direction's after the first step, side by side (PyTorch's h_n).
    """

    units: PositiveInt
    return_sequences: bool = False
    bidirectional: bool = False
    layers: PositiveInt = 1
    gate_count: ClassVar[int] = 4  # gate blocks per kernel: 4 for an LSTM, 3 for a GRU

    def build(self, shape: Shape, at: Lowering) -> "RecurrentStep":
        require_rank(self, shape, (2,), "a series (steps x channels)")
        generator = at.generator()
        directions = 2 if self.bidirectional else 1
        weights: dict[str, np.ndarray] = {}
        width = shape[1]
        for k in range(self.layers):
            for suffix in DIRECTIONS[:directions]:
                for name, size in (("weight_ih", (width, self.gate_count * self.units)),
                                   ("weight_hh", (self.units, self.gate_count * self.units)),
                                   ("bias_ih", (self.gate_count * self.units,)),
                                   ("bias_hh", (self.gate_count * self.units,))):
                    weights[f"{name}_l{k}{suffix}"] = recurrent_uniform(generator, self.units, size)
            width = self.units * directions
        out = Shape(shape[0], width) if self.return_sequences else Shape(width)
        return RecurrentStep(self, at.place, shape, out, weights)

    @property
    def directions(self) -> int:
        return 2 if self.bidirectional else 1


class RecurrentStep(Step):
    """Holds `weight_ih_l{k}{suffix}` (in, G*units), `weight_hh_l{k}{suffix}` (units, G*units),
    `bias_ih_l{k}{suffix}` and `bias_hh_l{k}{suffix}` (G*units,), PyTorch's names and gate order
    with the kernels kept inputs by outputs."""

    def __init__(self, spec: RecurrentSpec, place: str, input_shape: Shape, output_shape: Shape,
                 weights: dict[str, np.ndarray]) -> None:
        super().__init__(spec, place, input_shape, output_shape)
        for name, array in weights.items():
            setattr(self, name, Parameter(array))

    def slots_of(self, layer_index: int, suffix: str) -> tuple[Parameter, ...]:
        return tuple(getattr(self, f"{name}_l{layer_index}{suffix}")
                     for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"))

    def mask_refusal(self) -> None:
        return None  # reads each series' real steps only

    def call(self, flow: Flow) -> Flow:
        spec = self.spec
        lengths = lengths_of(flow.mask)
        extra = () if lengths is None else (lengths,)
        x = flow.value
        # padding before a real step: run on the real steps gathered to the front
        moved = None if flow.mask is None or end_padded(flow.mask) else real_first(flow.mask)
        if moved is not None:
            x = moved.gather(x)
        lasts: list[Tensor] = []
        for k in range(spec.layers):
            outputs, lasts = [], []
            for reverse, suffix in enumerate(DIRECTIONS[:spec.directions]):
                results = apply(spec.kind, x, *self.slots_of(k, suffix), *extra, reverse=reverse)
                outputs.append(results[0])
                lasts.append(results[1])
            x = outputs[0] if len(outputs) == 1 else apply("concat", *outputs, axis=2)
        if spec.return_sequences:
            return Flow(x if moved is None else moved.back(x), flow.mask)
        return Flow(lasts[0] if len(lasts) == 1 else apply("concat", *lasts, axis=1), None)

    def forward(self, x: Tensor) -> Tensor:
        return self.call(Flow(x)).value


@layer("lstm")
class Lstm(RecurrentSpec):
    """Long short-term memory, PyTorch's `nn.LSTM` (batch first): gates i, f, g, o;
    c' = f c + i g, h' = o tanh(c'). Weights and biases U(-1/sqrt(units), 1/sqrt(units)).

    >>> Sequential().lstm(64, return_sequences=True).lstm(32)
    """

    gate_count = 4


@layer("gru")
class Gru(RecurrentSpec):
    """Gated recurrent unit, PyTorch's `nn.GRU` (the reset gate applied after the state's product,
    ONNX's linear_before_reset=1): gates r, z, n; h' = (1 - z) n + z h.

    >>> Sequential().embedding(1000, 32, padding_index=0).gru(64, bidirectional=True)
    """

    gate_count = 3
