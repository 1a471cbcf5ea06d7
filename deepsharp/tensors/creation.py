"""Tensors made from sizes rather than from other tensors: `arange`."""

from __future__ import annotations

from typing import Any

import numpy as np

from deepsharp.errors import OpError
from deepsharp.tensors import modes
from deepsharp.tensors.tensor import Tensor, apply


def arange(start: Any, stop: Any = None, step: Any = 1, *, dtype: Any = None) -> Tensor:
    """[start, stop) by `step`, as PyTorch's `torch.arange` (and numpy's): `arange(n)` is
    0..n-1. int64 when every bound is an integer, else the default float type (float32).

    In a trace, a `stop` equal to a symbolic size (`arange(x.shape[1])`, `arange(1, x.shape[1])`)
    gives a result whose length follows that size: a `Range` fed by `Shape` in the graph (the
    size is recognised by its traced value, as reshapes recognise theirs; see docs/tracing.md).

    >>> arange(4).tolist(), arange(1, 7, 2).tolist()
    ([0, 1, 2, 3], [1, 3, 5])
    """
    if stop is None:
        start, stop = 0, start
    bounds = (start, stop, step)
    for name, value in zip(("start", "stop", "step"), bounds):
        if isinstance(value, Tensor) or not isinstance(value, (int, float, np.integer,
                                                                 np.floating)):
            raise OpError(f"arange: {name} must be a number (a size read from a shape is one), "
                          f"received {type(value).__name__}")
    if step == 0:
        raise OpError("arange: step must not be zero")
    if dtype is None:
        integral = all(isinstance(v, (int, np.integer)) for v in bounds)
        dtype = np.int64 if integral else modes.default_float()
    numbers = [int(v) if isinstance(v, (int, np.integer)) else float(v) for v in bounds]
    return apply("arange", start=numbers[0], stop=numbers[1], step=numbers[2],
                 dtype=np.dtype(dtype).str)
