"""Gradient-check cases for primitives, registered by family (tests/cases/*.py).

    @case("mul")
    def _():
        return [normal(3, 4), normal(4)], {}     # input arrays, attributes

`tests/deepsharp/test_primitives.py` checks every case against finite differences in float64 and
asserts that every registered primitive has at least one case.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

Case = Callable[[], tuple[list[np.ndarray], dict[str, Any]]]
CASES: list[tuple[str, str, Case]] = []  # (primitive, case id, builder)


def case(primitive: str, label: str = "") -> Callable[[Case], Case]:
    def register(fn: Case) -> Case:
        CASES.append((primitive, f"{primitive}{'-' + label if label else ''}-{len(CASES)}", fn))
        return fn

    return register


_generator = np.random.default_rng(1234)


def normal(*shape: int) -> np.ndarray:
    return _generator.standard_normal(shape)


def positive(*shape: int) -> np.ndarray:
    return _generator.uniform(0.5, 2.0, shape)


def away_from_zero(*shape: int) -> np.ndarray:
    """Values at least 0.1 from 0 (for kinks such as relu's)."""
    x = _generator.standard_normal(shape)
    return np.where(np.abs(x) < 0.1, 0.1 * np.sign(x) + 0.1 * (x == 0), x) + np.sign(x) * 0.05
