"""Functions over tensors for networks written as code: each is one primitive (or a short
composition), so autograd and the tracer see the same record a layer would leave."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from deepsharp.errors import SpecError
from deepsharp.run import current_run
from deepsharp.tensors import Tensor, apply


def relu(x: Tensor) -> Tensor:
    return apply("relu", x)


def sigmoid(x: Tensor) -> Tensor:
    return apply("sigmoid", x)


def tanh(x: Tensor) -> Tensor:
    return apply("tanh", x)


def gelu(x: Tensor, approximate: str = "none") -> Tensor:
    """x * Phi(x); `approximate="tanh"` uses PyTorch's tanh form."""
    if approximate not in ("none", "tanh"):
        raise SpecError(f"gelu: approximate must be 'none' or 'tanh', received {approximate!r}")
    return apply("gelu", x, approximate=int(approximate == "tanh"))


def silu(x: Tensor) -> Tensor:
    return apply("silu", x)


def elu(x: Tensor, alpha: float = 1.0) -> Tensor:
    return apply("elu", x, alpha=float(alpha))


def leaky_relu(x: Tensor, slope: float = 0.01) -> Tensor:
    return apply("leaky_relu", x, slope=float(slope))


def softplus(x: Tensor) -> Tensor:
    return apply("softplus", x)


def softmax(x: Tensor, axis: int = -1) -> Tensor:
    return apply("softmax", x, axis=int(axis) % x.ndim)


def log_softmax(x: Tensor, axis: int = -1) -> Tensor:
    return apply("log_softmax", x, axis=int(axis) % x.ndim)


def linear(x: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """x @ weight (+ bias), weight kept (in, out)."""
    y = apply("matmul", x, weight)
    return y if bias is None else apply("add", y, bias)


def concat(tensors: Sequence[Tensor], axis: int = -1) -> Tensor:
    rank = np.ndim(tensors[0]._data if isinstance(tensors[0], Tensor) else tensors[0])
    return apply("concat", *tensors, axis=int(axis) % rank)


def where(condition, a, b) -> Tensor:
    return apply("where", condition, a, b)


def maximum(a, b) -> Tensor:
    return apply("maximum", a, b)


def minimum(a, b) -> Tensor:
    return apply("minimum", a, b)


def dropout(x: Tensor, rate: float, training: bool, purpose: str = "dropout") -> Tensor:
    """Zero each value with probability `rate` and scale the rest by 1/(1-rate), in training only.

    The mask is drawn from the run's stream under `purpose` (a layer passes `dropout:{path}`), so
    the same step of the same run always draws the same mask.
    """
    if not training or rate == 0.0:
        return x
    keep = current_run().generator(purpose).random(x.shape) >= rate
    return apply("dropout", x, Tensor(keep), rate=float(rate))
