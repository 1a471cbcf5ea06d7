"""PyTorch's linear: x @ weight.T (+ bias), the weight held (out, in)."""

from __future__ import annotations

import numpy as np

from deepsharp.tensors.primitives import needs_input_grad, primitive


@primitive("linear")
class Linear:
    """x (..., in), weight (out, in)[, bias (out,)] -> (..., out): one BLAS product over the
    leading axes folded together."""

    def forward(x, weight, *bias):
        y = x @ weight.T
        return (y + bias[0] if bias else y), None

    def backward(grad, saved, x, weight, *bias):
        flat = grad.reshape(-1, grad.shape[-1])
        gx = grad @ weight if needs_input_grad(0) else None
        gw = flat.T @ x.reshape(-1, x.shape[-1]) if needs_input_grad(1) else None
        return (gx, gw) + ((flat.sum(axis=0),) if bias else ())
