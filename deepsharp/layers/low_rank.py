"""Low-rank adapters (LoRA, Hu et al. 2021): a dense kernel held frozen, a trained low-rank pair
beside it.

    y = x @ W + b + (x @ A) @ B * (alpha / rank)       W (in, out) and b frozen,
                                                        A (in, rank), B (rank, out) trained

`network.with_low_rank(rank, on=["3", "5.branch.0"])` gives a new network whose dense layers at
those places are `low_rank_dense` layers holding the trained kernels (so it answers exactly as
before: B starts at zero) and, by default, every other parameter frozen too, so fine-tuning an
imported network trains only the pairs.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
from pydantic import PositiveFloat, PositiveInt

from deepsharp.errors import SpecError
from deepsharp.layers.base import LayerSpec, Lowering, Step, layer, require_rank
from deepsharp.layers.dense import Dense, fan_in_uniform, kaiming_uniform
from deepsharp.module import Parameter
from deepsharp.random import RandomStream
from deepsharp.shape import Shape
from deepsharp.tensors import Tensor, apply


@layer("low_rank_dense")
class LowRankDense(LayerSpec):
    """A dense layer whose kernel and bias are frozen, with a trained pair A (in, rank),
    B (rank, out) added as (x @ A) @ B * alpha / rank. A is Kaiming-uniform (a = sqrt 5) and B
    zero, as LoRA and PEFT start them; `alpha` defaults to `rank` (a scale of 1).

    >>> Sequential().low_rank_dense(16, rank=4)
    """

    units: PositiveInt
    rank: PositiveInt
    alpha: PositiveFloat | None = None
    bias: bool = True

    @property
    def scale(self) -> float:
        """alpha / rank as the float32 the step multiplies by (and the graph holds)."""
        alpha = float(self.rank) if self.alpha is None else self.alpha
        return float(np.float32(alpha / self.rank))

    def build(self, shape: Shape, at: Lowering) -> "LowRankDenseStep":
        require_rank(self, shape, (1, 2, 3, 4), "at least one axis")
        fan_in = shape[-1]
        generator = at.generator()
        slots = {"weight": kaiming_uniform(generator, fan_in, (fan_in, self.units))}
        if self.bias:
            slots["bias"] = fan_in_uniform(generator, fan_in, (self.units,))
        slots["lora_a"] = kaiming_uniform(generator, fan_in, (fan_in, self.rank))
        slots["lora_b"] = np.zeros((self.rank, self.units), np.float32)
        return LowRankDenseStep(self, at.place, shape, Shape(*shape[:-1], self.units), slots)


class LowRankDenseStep(Step):
    """Holds `weight` (in, out) and `bias` frozen, `lora_a` (in, rank) and `lora_b` (rank, out)."""

    def __init__(self, spec: LowRankDense, place: str, input_shape: Shape, output_shape: Shape,
                 slots: dict[str, np.ndarray]) -> None:
        super().__init__(spec, place, input_shape, output_shape)
        self.weight = Parameter(slots["weight"], frozen=True)
        if "bias" in slots:
            self.bias = Parameter(slots["bias"], frozen=True)
        self.lora_a = Parameter(slots["lora_a"])
        self.lora_b = Parameter(slots["lora_b"])

    def forward(self, x: Tensor) -> Tensor:
        y = apply("matmul", x, self.weight)
        if self.spec.bias:
            y = apply("add", y, self.bias)
        low = apply("matmul", apply("matmul", x, self.lora_a), self.lora_b)
        return apply("add", y, apply("mul", low, self.spec.scale))


def with_low_rank(network, rank: int, on: Sequence[str], *, alpha: float | None = None,
                  freeze_rest: bool = True, random: RandomStream | None = None):
    """A new network: `network` with the dense layers at places `on` made low-rank adapted.

    Args:
        rank: the rank of each pair; alpha: the pairs' scale is alpha / rank (default 1).
        on: places of dense layers (`"3"`, or `"2.branch.0"` inside a composite layer).
        freeze_rest: also freeze every parameter that is not an adapter pair (LoRA's practice).
            This is a property of the returned network object: a network saved or exported and
            read back has only the adapted kernels frozen (those are frozen by their layer).
        random: the stream the pairs' A are drawn from (default RandomStream(0)).

    The result answers exactly as `network` does until it is trained.
    """
    from deepsharp.layers.composite import replace_at, spec_at

    if isinstance(rank, bool) or not isinstance(rank, int) or rank < 1:
        raise SpecError(f"with_low_rank: rank must be a positive integer, received {rank!r}")
    places = [on] if isinstance(on, str) else list(on)
    if not places:
        raise SpecError("with_low_rank: on must name at least one place")
    spec = network.spec
    faults = []
    for place in places:
        found = spec_at(spec, place)
        if not isinstance(found, Dense):
            faults.append(f"place {place} holds {found.describe()}, not a dense layer")
            continue
        spec = replace_at(spec, place, LowRankDense(units=found.units, rank=rank, alpha=alpha,
                                                    bias=found.bias))
    if faults:
        raise SpecError("with_low_rank: " + "; ".join(faults))
    adapted = spec.lower(network.input_shape, random or RandomStream(0))
    state = adapted.state_dict()
    state.update(network.state_dict())
    adapted.load_state_dict(state, strict=True)
    if freeze_rest:
        for path, parameter in adapted.named_parameters():
            if not path.endswith((".lora_a", ".lora_b")):
                parameter.requires_grad = False
    return network.carried_to(adapted)

