"""How a convolution's numbers, and a row flattened from an image, are laid out elsewhere.

Kernels. Ours keep the window's places, then input channels, then output channels:
- a convolution (*window, C_in / groups, C_out);
- a transposed convolution (*window, C_in, C_out).
ONNX's Conv W and PyTorch's Conv weight are (C_out, C_in / groups, *window); ONNX's ConvTranspose
W and PyTorch's ConvTranspose weight are (C_in, C_out, *window).

Flattened rows. Our flatten lays an image (*places, C) out place by place, the channels of each
place together: index ((h W + w) C + c). ONNX's Flatten of the channels-first image lays it out
channel by channel: index ((c H + h) W + w). A dense layer after the flatten reads the first
order; written after ONNX's Flatten, its kernel's rows are put in the second.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np


def conv_kernel_onnx_perm(nd: int) -> tuple[int, ...]:
    """The Transpose perm taking our convolution kernel of `nd` window axes to ONNX Conv's W (a
    graph may turn a kernel with a Transpose node, which ONNX Runtime folds into a constant)."""
    return (nd + 1, nd, *range(nd))


def conv_kernel_to_onnx(kernel: np.ndarray) -> np.ndarray:
    """ONNX Conv's W (C_out, C_in / groups, *window) from our (*window, C_in / groups, C_out)."""
    return np.ascontiguousarray(kernel.transpose(conv_kernel_onnx_perm(kernel.ndim - 2)))


def onnx_to_conv_kernel(w: np.ndarray) -> np.ndarray:
    nd = w.ndim - 2
    return np.ascontiguousarray(w.transpose(*range(2, nd + 2), 1, 0))


def conv_transpose_kernel_onnx_perm(nd: int) -> tuple[int, ...]:
    """The Transpose perm taking our transposed convolution kernel to ONNX ConvTranspose's W."""
    return (nd, nd + 1, *range(nd))


def conv_transpose_kernel_to_onnx(kernel: np.ndarray) -> np.ndarray:
    """ONNX ConvTranspose's W (C_in, C_out, *window) from our (*window, C_in, C_out)."""
    return np.ascontiguousarray(kernel.transpose(conv_transpose_kernel_onnx_perm(kernel.ndim - 2)))


def onnx_to_conv_transpose_kernel(w: np.ndarray) -> np.ndarray:
    nd = w.ndim - 2
    return np.ascontiguousarray(w.transpose(*range(2, nd + 2), 0, 1))


# PyTorch's weights are laid out as ONNX's.
conv_kernel_to_torch = conv_kernel_to_onnx
torch_to_conv_kernel = onnx_to_conv_kernel
conv_transpose_kernel_to_torch = conv_transpose_kernel_to_onnx
torch_to_conv_transpose_kernel = onnx_to_conv_transpose_kernel


def flat_rows_to_channels_first(kernel: np.ndarray, image: Sequence[int]) -> np.ndarray:
    """A dense kernel (places x C, out) reading our flatten of `image` (*places, C), its rows
    put in the order of ONNX's Flatten of the channels-first image."""
    nd = len(image) - 1
    rows = kernel.reshape(*image, kernel.shape[-1])
    return np.ascontiguousarray(np.moveaxis(rows, nd, 0).reshape(kernel.shape))


def channels_first_to_flat_rows(kernel: np.ndarray, image: Sequence[int]) -> np.ndarray:
    """The inverse of flat_rows_to_channels_first."""
    nd = len(image) - 1
    rows = kernel.reshape(image[-1], *image[:-1], kernel.shape[-1])
    return np.ascontiguousarray(np.moveaxis(rows, 0, nd).reshape(kernel.shape))


def channels_first_flat_order(image: Sequence[int]) -> np.ndarray:
    """For each place of ONNX's channels-first flatten, the index of the same value in ours."""
    nd = len(image) - 1
    ours = np.arange(int(np.prod(image))).reshape(image)
    return np.moveaxis(ours, nd, 0).reshape(-1)
