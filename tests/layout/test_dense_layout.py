"""Each dense layout conversion round-trips and means what it says."""

import numpy as np

from layout import (
    dense_kernel_to_gemm, dense_kernel_to_matmul, dense_kernel_to_torch, gemm_to_dense_kernel,
    matmul_to_dense_kernel, torch_to_dense_kernel,
)

K = np.arange(12, dtype=np.float32).reshape(3, 4)  # (in=3, out=4)
X = np.arange(6, dtype=np.float32).reshape(2, 3)


def test_round_trips():
    np.testing.assert_array_equal(matmul_to_dense_kernel(dense_kernel_to_matmul(K)), K)
    np.testing.assert_array_equal(gemm_to_dense_kernel(dense_kernel_to_gemm(K), 1), K)
    np.testing.assert_array_equal(torch_to_dense_kernel(dense_kernel_to_torch(K)), K)


def test_meanings():
    np.testing.assert_array_equal(X @ dense_kernel_to_matmul(K), X @ K)
    np.testing.assert_array_equal(X @ dense_kernel_to_gemm(K).T, X @ K)  # Gemm transB=1
    assert dense_kernel_to_torch(K).shape == (4, 3)  # nn.Linear.weight is (out, in)
    np.testing.assert_array_equal(gemm_to_dense_kernel(K, 0), K)
