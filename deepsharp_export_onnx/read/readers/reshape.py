"""Flatten -> flatten (a channels-first image's row keeps its order for the dense layer after,
which `layout` puts back); Reshape -> reshape, or, on a channels-first value, the row of places
of an adaptive pool with unequal bins."""

from __future__ import annotations

import onnx

from deepsharp_export_onnx.read.readers.base import Read, Reading, reads
from deepsharp_export_onnx.read.readers.pool import read_adaptive_composition
from deepsharp_export_onnx.read.readers.windows import spec_of
from layout import Order


@reads("Flatten")
def read_flatten(node: onnx.NodeProto, r: Reading) -> Read:
    axis = int(r.view.attrs(node).get("axis", 1))
    if axis != 1:
        raise r.unreadable(node, f"axis {axis}: flatten keeps the batch axis (axis 1)")
    spec = spec_of(node, r, "flatten")
    if r.order is Order.CHANNELS_FIRST and r.rank >= 3:
        dims = r.view.dims(r.value) or ()
        if len(dims) != r.rank or not all(isinstance(d, int) for d in dims[1:]):
            raise r.unreadable(node, "a Flatten of a channels-first value of unknown places")
        other = _product_after(r, node.output[0])
        if other is not None:
            raise r.unreadable(node, f"its channel-by-channel row {other}; the network's flatten "
                                     f"holds the values place by place, so only a dense layer "
                                     f"(whose rows are put back in order) may read it")
        r.extra["image"] = (*dims[2:], dims[1])  # the image as the network holds it
        return Read(node.output[0], [node], [spec], [{}], order=Order.FLAT_CHANNELS_FIRST, rank=2)
    return Read(node.output[0], [node], [spec], [{}], rank=2)


# elementwise operators: any order of a row's values gives the same values in the same order
_ELEMENTWISE = {"Relu", "Sigmoid", "Tanh", "Softplus", "Elu", "LeakyRelu", "Gelu", "Softmax"}


def _product_after(r: Reading, value: str) -> str | None:
    """None when the row reaches a MatMul or Gemm through elementwise nodes; else what it meets."""
    while True:
        readers = r.view.open_consumers(value)
        kinds = sorted(n.op_type for n in readers)
        if kinds == ["Mul", "Sigmoid"]:  # x * Sigmoid(x): a SiLU
            value = next(n for n in readers if n.op_type == "Mul").output[0]
            continue
        if len(readers) != 1:
            return ("ends the graph" if not readers else
                    f"is read by {', '.join(r.view.label(n) for n in readers)}")
        node = readers[0]
        if node.op_type in ("MatMul", "Gemm") and node.input[0] == value:
            return None
        if node.op_type not in _ELEMENTWISE:
            return f"is read by {r.view.label(node)}"
        value = node.output[0]


@reads("Reshape")
def read_reshape(node: onnx.NodeProto, r: Reading) -> Read:
    if r.order is Order.CHANNELS_FIRST and r.rank >= 3:
        return read_adaptive_composition(node, r)
    shape = [int(s) for s in r.need_constant(node, 1, "shape").tolist()]
    if not shape or shape[0] != 0 or any(s < 1 for s in shape[1:]):
        raise r.unreadable(node, f"shape {shape}: a reshape layer keeps the batch (0) and gives "
                                 f"every other size")
    spec = spec_of(node, r, "reshape", shape=tuple(shape[1:]))
    return Read(node.output[0], [node], [spec], [{}], order=Order.CHANNELS_LAST, rank=len(shape))
