"""Small data and networks the fit tests share."""

from __future__ import annotations

import numpy as np

from deepsharp import RandomStream, Sequential, Shape


def rows(n: int = 120, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """n rows of 6 normal features, answered 1 where the first exceeds the second."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, 6)).astype(np.float32)
    return x, (x[:, 0] - x[:, 1] > 0).astype(np.float32)


def small_network(hidden: int = 16, seed: int = 1):
    return Sequential().dense(hidden).relu().dense(1).lower(Shape(6), RandomStream(seed))
