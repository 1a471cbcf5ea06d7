"""The activations with PyTorch's arguments (torch.nn.functional's names), each one primitive
(softplus at other betas a short composition); `inplace=True` writes the result into the tensor,
recorded as the function (inplace.rewrite)."""

from __future__ import annotations

from typing import Any

import numpy as np

from deepsharp.errors import OpError, SpecError
from deepsharp.tensors import keywords as kw
from deepsharp.tensors.api.reduce import cast_first as _cast_first
from deepsharp.tensors.api.select import where
from deepsharp.tensors.tensor import Tensor, apply, as_tensor


def _in_place(x: Any, inplace: Any, name: str, fn: Any, floating: bool = False) -> Tensor:
    """fn(x), or (inplace=True, PyTorch's `F.relu(x, inplace=True)`) fn(x) written into x;
    `floating`: an integer tensor refused, as PyTorch refuses it."""
    if floating:
        kw.floating(name, as_tensor(x))
    if not isinstance(inplace, (bool, np.bool_)):
        raise OpError(f"{name}: inplace must be True or False, received {inplace!r}")
    if not inplace:
        return fn(x)
    from deepsharp.tensors.inplace import rewrite  # (F made x a tensor: an array's, shared)

    return rewrite(x, f"{name}(inplace=True)", fn)


def relu(x: Tensor, inplace: bool = False) -> Tensor:
    return _in_place(x, inplace, "relu", lambda t: apply("relu", t))


def relu6(x: Tensor, inplace: bool = False) -> Tensor:
    """min(max(x, 0), 6): PyTorch's relu6, hardtanh(x, 0, 6) (its gradient 0 at 0 and 6)."""
    return hardtanh(x, 0.0, 6.0, inplace)


def hardtanh(x: Tensor, min_val: Any = -1.0, max_val: Any = 1.0, inplace: bool = False) -> Tensor:
    """x clipped to [min_val, max_val], as PyTorch's: the gradient is 1 strictly between the
    bounds and 0 at them (clamp's is 1 at them)."""
    low = kw.number("hardtanh", "min_val", min_val)
    high = kw.number("hardtanh", "max_val", max_val)
    if not low < high:  # PyTorch refuses min_val > max_val; equal bounds too: nothing passes
        raise OpError(f"hardtanh: min_val must be below max_val, received min_val={low}, "
                      f"max_val={high}")
    return _in_place(x, inplace, "hardtanh",
                     lambda t: apply("hardtanh", t, low=float(low), high=float(high)), True)


def mish(x: Tensor, inplace: bool = False) -> Tensor:
    """x * tanh(softplus(x)), as PyTorch's mish."""
    return _in_place(x, inplace, "mish", lambda t: apply("mish", t), True)


def hardsigmoid(x: Tensor, inplace: bool = False) -> Tensor:
    """min(max(x + 3, 0), 6) / 6, as PyTorch's hardsigmoid."""
    return _in_place(x, inplace, "hardsigmoid", lambda t: apply("hard_sigmoid", t), True)


def hardswish(x: Tensor, inplace: bool = False) -> Tensor:
    """x * min(max(x + 3, 0), 6) / 6, as PyTorch's hardswish."""
    return _in_place(x, inplace, "hardswish", lambda t: apply("hard_swish", t), True)


def sigmoid(x: Tensor) -> Tensor:
    return apply("sigmoid", x)


def tanh(x: Tensor) -> Tensor:
    return apply("tanh", x)


def gelu(x: Tensor, approximate: str = "none") -> Tensor:
    """x * Phi(x); `approximate="tanh"` uses PyTorch's tanh form."""
    if approximate not in ("none", "tanh"):
        raise SpecError(f"gelu: approximate must be 'none' or 'tanh', received {approximate!r}")
    return apply("gelu", x, approximate=int(approximate == "tanh"))


def silu(x: Tensor, inplace: bool = False) -> Tensor:
    return _in_place(x, inplace, "silu", lambda t: apply("silu", t))


def elu(x: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    alpha = kw.number("elu", "alpha", alpha)
    return _in_place(x, inplace, "elu", lambda t: apply("elu", t, alpha=float(alpha)))


def leaky_relu(x: Tensor, negative_slope: float = 0.01, inplace: bool = False, *,
               slope: float | None = None) -> Tensor:
    """x where x > 0, else negative_slope * x (PyTorch's keyword; `slope`, the layer's, too)."""
    if slope is not None:
        if negative_slope != 0.01:
            raise OpError("leaky_relu: give negative_slope (PyTorch's name) or slope, not both")
        negative_slope = slope
    slope = kw.number("leaky_relu", "negative_slope", negative_slope)
    return _in_place(x, inplace, "leaky_relu", lambda t: apply("leaky_relu", t, slope=float(slope)))


def softplus(x: Tensor, beta: Any = 1.0, threshold: Any = 20.0) -> Tensor:
    """PyTorch's softplus: log(1 + e^(beta x)) / beta, and x itself where beta x > threshold.
    At beta 1 and a threshold of 20 or more it is the softplus primitive alone (log(1 + e^x)
    above 20 is x in float32, its gradient 1)."""
    beta = kw.number("softplus", "beta", beta)
    threshold = kw.number("softplus", "threshold", threshold)
    return scaled_softplus(x, beta, threshold)


def plain_softplus(beta: float, threshold: float | None) -> bool:
    """Whether softplus at `beta` and `threshold` is the softplus primitive alone."""
    return beta == 1 and threshold is not None and threshold >= 20


def scaled_softplus(x: Tensor, beta: float, threshold: float | None) -> Tensor:
    """softplus(x * beta) / beta, and x where x * beta > threshold (None: no threshold, as
    PyTorch's TorchScript exporter writes it); the one formula F.softplus and the layer share."""
    if plain_softplus(beta, threshold):
        return apply("softplus", x)
    scaled = x * beta
    soft = apply("softplus", scaled) / beta
    return soft if threshold is None else where(scaled > threshold, x, soft)


def softmax(x: Tensor, dim: int | None = None, *, axis: int | None = None,
            dtype: Any = None) -> Tensor:
    """exp(x) / sum(exp(x)) along `dim` (the last axis when not given: PyTorch's implicit
    choice, deprecated there, is not followed); x cast to `dtype` first when given."""
    x = _cast_first(x, dtype)
    kw.floating("softmax", x)
    return apply("softmax", x, axis=kw.one_dim("softmax", dim, axis, x.ndim, default=-1))


def log_softmax(x: Tensor, dim: int | None = None, *, axis: int | None = None,
                dtype: Any = None) -> Tensor:
    x = _cast_first(x, dtype)
    kw.floating("log_softmax", x)
    return apply("log_softmax", x, axis=kw.one_dim("log_softmax", dim, axis, x.ndim, default=-1))


def prelu(x: Tensor, weight: Tensor) -> Tensor:
    """x where x > 0, else weight * x, as PyTorch's F.prelu: weight holds one value, or one per
    channel of axis 1 (x's second axis, PyTorch's channel axis, whatever layout the tensor has)."""
    x, weight = as_tensor(x), as_tensor(weight)
    kw.floating("prelu", x)
    if weight.ndim > 1 or (weight.size != 1 and (x.ndim < 2 or weight.size != x.shape[1])):
        channels = x.shape[1] if x.ndim >= 2 else None
        raise OpError(f"prelu: weight must hold one value or one per channel of axis 1 "
                      f"({channels}), received shape {tuple(weight.shape)}")
    return apply("prelu", x, weight, axis=1 if x.ndim >= 2 else 0)
