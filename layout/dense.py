"""How a dense layer's weights are laid out elsewhere.

Ours: the kernel is kept (in, out), so y = x @ kernel + bias.
ONNX MatMul takes it as we keep it: (in, out).
ONNX Gemm with transB=1, and PyTorch's nn.Linear.weight: (out, in).
"""

from __future__ import annotations

import numpy as np


def dense_kernel_to_matmul(kernel: np.ndarray) -> np.ndarray:
    """The B operand of ONNX `MatMul(x, B)`: our (in, out) kernel as it is."""
    return np.ascontiguousarray(kernel)


def matmul_to_dense_kernel(b: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(b)


def dense_kernel_to_gemm(kernel: np.ndarray) -> np.ndarray:
    """The B operand of ONNX `Gemm(x, B, C, transB=1)`: (out, in)."""
    return np.ascontiguousarray(kernel.T)


def gemm_to_dense_kernel(b: np.ndarray, trans_b: int) -> np.ndarray:
    """Our (in, out) kernel from a Gemm's B operand, turned round when transB=1."""
    return np.ascontiguousarray(b.T if trans_b else b)


def dense_kernel_to_torch(kernel: np.ndarray) -> np.ndarray:
    """PyTorch's `nn.Linear.weight`: (out, in)."""
    return np.ascontiguousarray(kernel.T)


def torch_to_dense_kernel(weight: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(weight.T)
