"""Activation nodes -> activation layers; x * Sigmoid(x) -> silu."""

from __future__ import annotations

import numpy as np
import onnx

from deepsharp.layers.base import SPEC_KINDS
from deepsharp_export_onnx.read.readers.base import Read, Reading, reads, reads_fork
from layout import Order

_PLAIN = {"Relu": "relu", "Sigmoid": "sigmoid", "Tanh": "tanh", "Softplus": "softplus"}


@reads(*_PLAIN)
def read_plain(node: onnx.NodeProto, r: Reading) -> Read:
    return Read(node.output[0], [node], [SPEC_KINDS[_PLAIN[node.op_type]]()], [{}])


@reads("Gelu")
def read_gelu(node: onnx.NodeProto, r: Reading) -> Read:
    approximate = r.view.attrs(node).get("approximate", "none")
    return Read(node.output[0], [node], [SPEC_KINDS["gelu"](approximate=approximate)], [{}])


@reads("Elu")
def read_elu(node: onnx.NodeProto, r: Reading) -> Read:
    alpha = r.view.attrs(node).get("alpha", 1.0)
    return Read(node.output[0], [node], [SPEC_KINDS["elu"](alpha=_float32(alpha))], [{}])


@reads("LeakyRelu")
def read_leaky_relu(node: onnx.NodeProto, r: Reading) -> Read:
    slope = r.view.attrs(node).get("alpha", 0.01)
    return Read(node.output[0], [node], [SPEC_KINDS["leaky_relu"](slope=_float32(slope))], [{}])


@reads("Softmax")
def read_softmax(node: onnx.NodeProto, r: Reading) -> Read:
    axis = r.view.attrs(node).get("axis", -1 if r.view.opset >= 13 else 1)
    channel = 1 if r.order is Order.CHANNELS_FIRST and r.rank > 2 else r.rank - 1
    if axis % r.rank != channel:
        raise r.unreadable(node, f"softmax over axis {axis}; the layer's is the channel axis "
                                 f"({channel})")
    return Read(node.output[0], [node], [SPEC_KINDS["softmax"]()], [{}])


@reads_fork
def read_silu(nodes: list[onnx.NodeProto], r: Reading) -> Read | None:
    """Sigmoid(x) and Mul(x, Sigmoid(x)) reading the same x: a SiLU."""
    sigmoid = next((n for n in nodes if n.op_type == "Sigmoid"), None)
    mul = next((n for n in nodes if n.op_type == "Mul"), None)
    if len(nodes) != 2 or sigmoid is None or mul is None:
        return None
    if sorted(mul.input) != sorted([r.value, sigmoid.output[0]]):
        return None
    if r.view.open_consumers(sigmoid.output[0]) != [mul]:
        return None
    return Read(mul.output[0], [sigmoid, mul], [SPEC_KINDS["silu"]()], [{}])


def _float32(value: float) -> float:
    """An attribute float as the float32 ONNX stored, read back as the shortest decimal that
    names the same float32 (0.3, not 0.30000001192092896): re-exporting writes the same bits."""
    return float(str(np.float32(value)))
