"""Learning-rate schedules: pure functions of the epoch (or of the optimisation step).

Each gives the rate for a count `t` from the optimizer's base rate, with PyTorch's formulas:

| schedule                          | rate at t                                               |
|-----------------------------------|---------------------------------------------------------|
| StepDecay(every, gamma)           | base * gamma ** (t // every)            (StepLR)        |
| ExponentialDecay(gamma)           | base * gamma ** t                       (ExponentialLR) |
| Cosine(period, minimum)           | min + (base - min) (1 + cos(pi t / period)) / 2 (CosineAnnealingLR; rises again after `period`) |
| LinearWarmup(length, start, then) | base * (start + (1 - start) t / length) for t < length, then `then` from t - length |

`unit="epoch"` (the default) counts epochs; `unit="step"` counts optimisation steps. Being pure,
a schedule needs no state in a checkpoint.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from deepsharp.arguments import instance, integer, number
from deepsharp.errors import SpecError

Unit = Literal["epoch", "step"]


class Schedule:
    unit: Unit = "epoch"

    def rate(self, base: float, t: int) -> float:
        raise TypeError(f"{type(self).__name__} does not define rate()")

    def _check_unit(self) -> None:
        if not isinstance(self.unit, str) or self.unit not in ("epoch", "step"):
            raise SpecError(f"{type(self).__name__}: unit must be 'epoch' or 'step', received "
                            f"{self.unit!r}")


@dataclass(frozen=True)
class StepDecay(Schedule):
    every: int
    gamma: float = 0.1
    unit: Unit = "epoch"

    def __post_init__(self) -> None:
        self._check_unit()
        object.__setattr__(self, "every", integer("StepDecay", "every", self.every, low=1))
        number("StepDecay", "gamma", self.gamma)

    def rate(self, base: float, t: int) -> float:
        return base * self.gamma ** (t // self.every)


@dataclass(frozen=True)
class ExponentialDecay(Schedule):
    gamma: float
    unit: Unit = "epoch"

    def __post_init__(self) -> None:
        self._check_unit()
        if not number("ExponentialDecay", "gamma", self.gamma) > 0:
            raise SpecError(f"ExponentialDecay: gamma must be positive, received {self.gamma}")

    def rate(self, base: float, t: int) -> float:
        return base * self.gamma ** t


@dataclass(frozen=True)
class Cosine(Schedule):
    period: int
    minimum: float = 0.0
    unit: Unit = "epoch"

    def __post_init__(self) -> None:
        self._check_unit()
        object.__setattr__(self, "period", integer("Cosine", "period", self.period, low=1))
        number("Cosine", "minimum", self.minimum)

    def rate(self, base: float, t: int) -> float:
        # PyTorch's CosineAnnealingLR: past the period the cosine rises again (no clamp)
        return self.minimum + (base - self.minimum) * (1 + math.cos(math.pi * t / self.period)) / 2


@dataclass(frozen=True)
class LinearWarmup(Schedule):
    length: int
    start: float = 0.0
    then: Schedule | None = None
    unit: Unit = "epoch"

    def __post_init__(self) -> None:
        self._check_unit()
        object.__setattr__(self, "length", integer("LinearWarmup", "length", self.length, low=1))
        instance("LinearWarmup", "then", self.then, Schedule)
        if not 0 <= number("LinearWarmup", "start", self.start) <= 1:
            raise SpecError(f"LinearWarmup: start must lie in [0, 1], received {self.start}")
        if self.then is not None and self.then.unit != self.unit:
            raise SpecError(f"LinearWarmup: then counts {self.then.unit}s but the warm-up counts "
                            f"{self.unit}s")

    def rate(self, base: float, t: int) -> float:
        if t < self.length:
            return base * (self.start + (1 - self.start) * t / self.length)
        return base if self.then is None else self.then.rate(base, t - self.length)
