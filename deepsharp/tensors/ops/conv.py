"""Convolutions over channels-last arrays: x (N, *places, C_in), one BLAS product each way.

Kernels keep the library's axes: the window's places, then input channels, then output channels,
(*kernel, C_in / groups, C_out) for a convolution and (*kernel, C_in, C_out) for a transposed one.
`layout.conv` turns them into ONNX's (O, I, *kernel) and (I, O, *kernel).

Attributes (what a tracer writes the ONNX node from): `strides`, `dilations` (one per place axis),
`pads` (begins then ends, as ONNX), `auto_pad` ("NOTSET", or "SAME_UPPER" with `pads=()`: the
border is worked out from the length at hand), `groups`, and for the transposed convolution
`output_padding`. A bias is an optional third input.
"""

from __future__ import annotations

import numpy as np

from deepsharp import _cblas
from deepsharp.errors import OpError
from deepsharp.tensors.ops.windows import (
    NOTSET, col2im, crop_places, im2col, offset_slices, offsets, output_lengths, pad_places,
    resolve_pads,
)
from deepsharp.tensors.primitives import needs_input_grad, primitive


def _check(x: np.ndarray, w: np.ndarray, channels_in: int, what: str) -> int:
    nd = x.ndim - 2
    if nd < 1 or w.ndim != nd + 2:
        raise OpError(f"{what}: needs x (N, *places, C) and a kernel (*window, C_in, C_out) of "
                      f"the same number of place axes, received {x.shape} and {w.shape}")
    if channels_in != x.shape[-1]:
        raise OpError(f"{what}: the kernel {w.shape} takes {channels_in} input channels, x "
                      f"{x.shape} has {x.shape[-1]}")
    return nd


@primitive("conv")
class Conv:
    """y[n, o, :] = sum over window offsets k and input channels of
    x_padded[n, o * stride + k * dilation, :] @ w[k] (+ bias), per group of channels.

    x (N, *places, C_in), w (*kernel, C_in / groups, C_out), bias (C_out,) optional. One im2col
    copy and one product each way; the bias rides in the product as a column of ones.
    """

    def forward(x, w, *bias, strides, dilations, pads, groups=1, auto_pad=NOTSET):
        nd = _check(x, w, w.shape[-2] * groups, "conv")
        kernel = w.shape[:nd]
        pads = resolve_pads(x.shape[1:-1], kernel, strides, dilations, pads, auto_pad)
        out = output_lengths(x.shape[1:-1], kernel, strides, dilations, pads)
        xp = pad_places(x, pads)
        c_out = w.shape[-1]
        if groups == 1:
            cols = im2col(xp, out, kernel, strides, dilations, ones=bool(bias))
            w2 = w.reshape(-1, c_out)
            if bias:
                w2 = np.concatenate([w2, bias[0].reshape(1, c_out)])
            y = cols @ w2
        else:
            cols = _group_cols(im2col(xp, out, kernel, strides, dilations),
                               int(np.prod(kernel)), groups)
            y = np.matmul(cols, _group_kernel(w, groups))          # (G, M, C_out / G)
            y = y.transpose(1, 0, 2).reshape(-1, c_out)
            if bias:
                y += bias[0]
        return y.reshape(x.shape[0], *out, c_out), (cols, pads, out, xp.shape)

    def backward(grad, saved, x, w, *bias, strides, dilations, pads, groups=1, auto_pad=NOTSET):
        cols, pads, out, padded = saved
        nd = x.ndim - 2
        kernel = w.shape[:nd]
        c_out = w.shape[-1]
        g = grad.reshape(-1, c_out)
        gb = gx = None
        if groups == 1:
            gw = _cblas.matmul(cols.T, g)  # (numpy's product, without the GIL: _cblas)
            if bias:
                gw, gb = gw[:-1], gw[-1]
            gw = gw.reshape(w.shape)
            if needs_input_grad(0):
                gx = crop_places(_input_grad(g, w, padded, out, strides, dilations), pads)
            return (gx, gw) + ((gb,) if bias else ())
        gg = g.reshape(-1, groups, c_out // groups).transpose(1, 0, 2)      # (G, M, O/G)
        wg = _group_kernel(w, groups)                                        # (G, K*Cg, O/G)
        gw = _ungroup_kernel(np.matmul(cols.transpose(0, 2, 1), gg), w.shape, groups)
        if bias:
            gb = np.ones(g.shape[0], g.dtype) @ g
        if needs_input_grad(0):
            gcols = _ungroup_cols(np.matmul(gg, wg.transpose(0, 2, 1)), int(np.prod(kernel)))
            gx = crop_places(col2im(gcols, padded, out, kernel, strides, dilations), pads)
        return (gx, gw) + ((gb,) if bias else ())


def _input_grad(g: np.ndarray, w: np.ndarray, padded, out, strides, dilations) -> np.ndarray:
    """col2im(g @ w.T) without the (M, K * C) matrix: one product per kernel offset, each added
    where that offset read (measured faster: the sums stay in one pass over each product)."""
    nd = w.ndim - 2
    kernel = w.shape[:nd]
    c_in = w.shape[-2]
    rows = w.reshape(-1, c_in, w.shape[-1])            # (K, C_in, C_out)
    gx = np.zeros(padded, g.dtype)
    part = np.empty((g.shape[0], c_in), g.dtype)
    shaped = part.reshape(padded[0], *out, c_in)
    for index, offset in enumerate(offsets(kernel)):
        np.matmul(g, rows[index].T, out=part)
        gx[offset_slices(offset, out, strides, dilations)] += shaped
    return gx


def _group_cols(cols: np.ndarray, k: int, groups: int) -> np.ndarray:
    """(M, K * C) with C = G * Cg -> (G, M, K * Cg): each group's columns together."""
    m = cols.shape[0]
    return cols.reshape(m, k, groups, -1).transpose(2, 0, 1, 3).reshape(groups, m, -1)


def _group_kernel(w: np.ndarray, groups: int) -> np.ndarray:
    """(*K, Cg, C_out) -> (G, K * Cg, C_out / G): group g's outputs read group g's inputs."""
    nd = w.ndim - 2
    k = int(np.prod(w.shape[:nd], dtype=np.int64))
    cg, c_out = w.shape[-2], w.shape[-1]
    return w.reshape(k, cg, groups, c_out // groups).transpose(2, 0, 1, 3).reshape(
        groups, k * cg, c_out // groups)


def _ungroup_kernel(gw: np.ndarray, shape: tuple[int, ...], groups: int) -> np.ndarray:
    """The inverse of _group_kernel."""
    nd = len(shape) - 2
    k = int(np.prod(shape[:nd], dtype=np.int64))
    cg, c_out = shape[-2], shape[-1]
    return gw.reshape(groups, k, cg, c_out // groups).transpose(1, 2, 0, 3).reshape(shape)


def _ungroup_cols(gcols: np.ndarray, k: int) -> np.ndarray:
    """The inverse of _group_cols: (G, M, K * Cg) -> (M, K * C)."""
    g, m, _ = gcols.shape
    return gcols.reshape(g, m, k, -1).transpose(1, 2, 0, 3).reshape(m, -1)


@primitive("conv_transpose")
class ConvTranspose:
    """The adjoint of `conv` in its input: y_full[n, i * stride + k * dilation, :] +=
    x[n, i, :] @ w[k].T, for full = (n - 1) * stride + (k - 1) * dilation + 1 + output_padding;
    then `pads` (begins, ends) are cut from y_full (ONNX's ConvTranspose, PyTorch's padding).

    x (N, *places, C_in), w (*kernel, C_in, C_out), bias (C_out,) optional.
    """

    def forward(x, w, *bias, strides, dilations, pads, output_padding):
        nd = _check(x, w, w.shape[-2], "conv_transpose")
        kernel = w.shape[:nd]
        full = _full_lengths(x.shape[1:-1], kernel, strides, dilations, output_padding)
        for i in range(nd):
            if pads[i] + pads[nd + i] >= full[i]:
                raise OpError(f"conv_transpose: pads {tuple(pads)} leave nothing of the "
                              f"{full[i]} places of axis {i + 1}")
        c_in, c_out = w.shape[-2], w.shape[-1]
        wt = _transposed_kernel(w)
        cols = x.reshape(-1, c_in) @ wt                                    # (M, K * C_out)
        y = col2im(cols, (x.shape[0], *full, c_out), x.shape[1:-1], kernel, strides, dilations)
        y = crop_places(y, pads)
        if bias:
            y = y + bias[0]
        return np.ascontiguousarray(y), full

    def backward(grad, full, x, w, *bias, strides, dilations, pads, output_padding):
        nd = x.ndim - 2
        kernel = w.shape[:nd]
        c_in, c_out = w.shape[-2], w.shape[-1]
        gfull = pad_places(grad, pads)
        gcols = im2col(gfull, x.shape[1:-1], kernel, strides, dilations)  # (M, K * C_out)
        wt = _transposed_kernel(w)
        gx = (gcols @ wt.T).reshape(x.shape) if needs_input_grad(0) else None
        gwt = x.reshape(-1, c_in).T @ gcols                               # (C_in, K * C_out)
        gw = np.moveaxis(gwt.reshape(c_in, *kernel, c_out), 0, nd)
        grads = (gx, np.ascontiguousarray(gw))
        if bias:
            g = grad.reshape(-1, c_out)
            grads += (np.ones(g.shape[0], g.dtype) @ g,)
        return grads


def _full_lengths(lengths, kernel, strides, dilations, output_padding) -> tuple[int, ...]:
    return tuple((n - 1) * s + (k - 1) * d + 1 + p
                 for n, k, s, d, p in zip(lengths, kernel, strides, dilations, output_padding))


def _transposed_kernel(w: np.ndarray) -> np.ndarray:
    """(*K, C_in, C_out) -> (C_in, K * C_out), the rows im2col's columns are made of."""
    nd = w.ndim - 2
    return np.moveaxis(w, nd, 0).reshape(w.shape[-2], -1)
