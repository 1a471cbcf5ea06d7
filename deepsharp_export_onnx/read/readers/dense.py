"""MatMul (+ Add of a bias) and Gemm -> dense. Kernels are turned by `layout` only; after a
Flatten of a channels-first image the kernel's rows are put back in the network's order."""

from __future__ import annotations

import onnx

from deepsharp.layers.dense import Dense
from deepsharp_export_onnx.read.readers.base import Read, Reading, reads
from layout import (
    Order, channels_first_to_flat_rows, gemm_to_dense_kernel, matmul_to_dense_kernel,
)


@reads("MatMul")
def read_matmul(node: onnx.NodeProto, r: Reading) -> Read:
    if node.input[0] != r.value:
        raise r.unreadable(node, "the value must be the first operand, the kernel the second")
    kernel = matmul_to_dense_kernel(r.need_constant(node, 1, "kernel"))
    if kernel.ndim != 2:
        raise r.unreadable(node, f"the kernel must be a matrix, received shape {kernel.shape}")
    if r.order is Order.FLAT_CHANNELS_FIRST:
        kernel = channels_first_to_flat_rows(kernel, r.extra["image"])
    nodes, out, slots = [node], node.output[0], {"weight": kernel}
    add = r.view.only_consumer(out, "Add")
    if add is not None:
        other = add.input[1] if add.input[0] == out else add.input[0]
        bias = r.view.constant(other)
        if bias is not None and bias.shape in ((kernel.shape[1],), (1, kernel.shape[1])):
            nodes.append(add)
            out = add.output[0]
            slots["bias"] = bias.reshape(-1)
    spec = Dense(units=kernel.shape[1], bias="bias" in slots)
    return Read(out, nodes, [spec], [slots], order=_row_order(r))


@reads("Gemm")
def read_gemm(node: onnx.NodeProto, r: Reading) -> Read:
    attrs = r.view.attrs(node)
    if attrs.get("transA", 0) or attrs.get("alpha", 1.0) != 1.0 or attrs.get("beta", 1.0) != 1.0:
        raise r.unreadable(node, f"only transA=0, alpha=1, beta=1 read as dense, received {attrs}")
    kernel = gemm_to_dense_kernel(r.need_constant(node, 1, "kernel"), attrs.get("transB", 0))
    slots = {"weight": kernel}
    if len(node.input) > 2 and node.input[2]:
        slots["bias"] = r.need_constant(node, 2, "bias").reshape(-1) * 1
        if slots["bias"].size == 1 and kernel.shape[1] != 1:
            slots["bias"] = slots["bias"].repeat(kernel.shape[1])
    if r.order is Order.FLAT_CHANNELS_FIRST:
        kernel = slots["weight"] = channels_first_to_flat_rows(kernel, r.extra["image"])
    return Read(node.output[0], [node], [Dense(units=kernel.shape[1], bias="bias" in slots)], [slots],
                order=_row_order(r))


def _row_order(r: Reading) -> Order | None:
    """A dense layer's output is in the network's order, whatever order its rows came in."""
    return Order.CHANNELS_LAST if r.order is Order.FLAT_CHANNELS_FIRST else None
