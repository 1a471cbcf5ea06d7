"""layout.conv: kernels and flattened rows, each conversion against its inverse and against what
it means (the numbers a convolution or a dense layer computes with it)."""

from __future__ import annotations

import numpy as np
import pytest

from deepsharp.tensors import Tensor, apply
from layout import (
    channels_first_flat_order, channels_first_to_flat_rows, conv_kernel_to_onnx,
    conv_kernel_to_torch, conv_transpose_kernel_to_onnx, conv_transpose_kernel_to_torch,
    flat_rows_to_channels_first, onnx_to_conv_kernel, onnx_to_conv_transpose_kernel,
    torch_to_conv_kernel, torch_to_conv_transpose_kernel,
)

generator = np.random.default_rng(0)


@pytest.mark.parametrize("shape", [(3, 2, 5), (3, 2, 4, 5), (2, 3, 2, 1, 4)])
def test_kernels_round_trip(shape):
    kernel = generator.standard_normal(shape).astype(np.float32)
    nd = len(shape) - 2
    onnx_w = conv_kernel_to_onnx(kernel)
    assert onnx_w.shape == (shape[-1], shape[-2], *shape[:nd])
    np.testing.assert_array_equal(onnx_to_conv_kernel(onnx_w), kernel)
    onnx_t = conv_transpose_kernel_to_onnx(kernel)
    assert onnx_t.shape == (shape[-2], shape[-1], *shape[:nd])
    np.testing.assert_array_equal(onnx_to_conv_transpose_kernel(onnx_t), kernel)
    np.testing.assert_array_equal(torch_to_conv_kernel(conv_kernel_to_torch(kernel)), kernel)
    np.testing.assert_array_equal(
        torch_to_conv_transpose_kernel(conv_transpose_kernel_to_torch(kernel)), kernel)


def test_onnx_kernel_computes_what_ours_does():
    """y[n, o, i, j] = sum W[o, c, a, b] x[n, c, i + a, j + b] (ONNX Conv, channels-first) equals
    our convolution of the channels-last x."""
    x = generator.standard_normal((2, 5, 4, 3))
    kernel = generator.standard_normal((2, 3, 3, 4))
    ours = apply("conv", Tensor(x), Tensor(kernel), strides=(1, 1), dilations=(1, 1),
                 pads=(0, 0, 0, 0))._data
    w = conv_kernel_to_onnx(kernel)
    first = np.moveaxis(x, -1, 1)
    expected = np.zeros((2, 4, 4, 2))
    for i in range(4):
        for j in range(2):
            expected[:, :, i, j] = np.einsum("ocab,ncab->no", w, first[:, :, i:i + 2, j:j + 3])
    # ours is float32 (the input is cast), the reference float64: a float32 tolerance, since
    # the values drawn depend on which tests of this file ran first in the worker
    np.testing.assert_allclose(np.moveaxis(ours, -1, 1), expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("image", [(3, 4), (2, 3, 4), (2, 2, 3, 2)])
def test_flat_rows_round_trip_and_meaning(image):
    x = generator.standard_normal((5, *image))
    kernel = generator.standard_normal((int(np.prod(image)), 6))
    turned = flat_rows_to_channels_first(kernel, image)
    np.testing.assert_array_equal(channels_first_to_flat_rows(turned, image), kernel)
    ours = x.reshape(5, -1) @ kernel                                   # our flatten, our kernel
    onnx = np.moveaxis(x, -1, 1).reshape(5, -1) @ turned               # ONNX's Flatten of NC...
    np.testing.assert_allclose(onnx, ours, rtol=1e-10)
    order = channels_first_flat_order(image)
    np.testing.assert_array_equal(x.reshape(5, -1)[:, order], np.moveaxis(x, -1, 1).reshape(5, -1))
