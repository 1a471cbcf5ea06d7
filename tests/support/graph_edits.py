"""Small edits of ONNX graphs for refusal tests: find a node, set an attribute."""

from __future__ import annotations

import onnx
from onnx import helper


def node_of(model: onnx.ModelProto, op_type: str, index: int = 0) -> onnx.NodeProto:
    """The `index`-th node of `op_type`, in graph order."""
    return [n for n in model.graph.node if n.op_type == op_type][index]


def set_attr(node: onnx.NodeProto, name: str, value) -> None:
    """Give `node` the attribute `name` (replacing the one it has)."""
    for a in list(node.attribute):
        if a.name == name:
            node.attribute.remove(a)
    node.attribute.append(helper.make_attribute(name, value))
