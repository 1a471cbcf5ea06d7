"""PyTorch's linear: x @ weight.T (+ bias), the weight held (out, in)."""

from __future__ import annotations

import numpy as np

from deepsharp.tensors.primitives import needs_input_grad, primitive


def _rows(a: np.ndarray) -> np.ndarray:
    """(..., n) as one matrix of rows (a view where it can be): one BLAS product over every row,
    not numpy's loop of products per leading index."""
    return a.reshape(-1, a.shape[-1]) if a.ndim > 2 else a


@primitive("linear")
class Linear:
    """x (..., in), weight (out, in)[, bias (out,)] -> (..., out): one BLAS product over the
    leading axes folded together, the bias added in place into it."""

    def forward(x, weight, *bias):
        y = _rows(x) @ weight.T
        if bias:  # (in place only where the sum keeps y's type: numpy's promotion otherwise)
            y = np.add(y, bias[0], out=y if np.result_type(y, bias[0]) == y.dtype else None)
        return (y.reshape(*x.shape[:-1], weight.shape[0]) if x.ndim > 2 else y), None

    def backward(grad, saved, x, weight, *bias):
        flat = grad.reshape(-1, grad.shape[-1])
        gx = (_rows(grad) @ weight).reshape(x.shape) if needs_input_grad(0) else None
        gw = flat.T @ x.reshape(-1, x.shape[-1]) if needs_input_grad(1) else None
        return (gx, gw) + ((flat.sum(axis=0),) if bias else ())
