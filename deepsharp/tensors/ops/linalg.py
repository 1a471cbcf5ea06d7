"""Matrix products."""

from __future__ import annotations

import numpy as np

from deepsharp.errors import OpError
from deepsharp.tensors.primitives import primitive, unbroadcast


@primitive("matmul")
class MatMul:
    """numpy's matmul on operands of rank >= 2, batch axes broadcast (ONNX MatMul)."""

    def forward(a, b):
        if a.ndim < 2 or b.ndim < 2:
            raise OpError(f"matmul: both operands need rank >= 2, received shapes {a.shape} "
                          f"and {b.shape}")
        return np.matmul(a, b), None

    def backward(grad, saved, a, b):
        if b.ndim == 2 and a.ndim > 2:
            # (..., n, k) @ (k, m): fold the batch axes into one product (a BLAS call, not a loop)
            ga = grad @ b.T
            gb = a.reshape(-1, a.shape[-1]).T @ grad.reshape(-1, grad.shape[-1])
            return ga, gb
        ga = np.matmul(grad, np.swapaxes(b, -1, -2))
        gb = np.matmul(np.swapaxes(a, -1, -2), grad)
        return unbroadcast(ga, a.shape), unbroadcast(gb, b.shape)
