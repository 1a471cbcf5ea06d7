"""Small helpers for readers that follow a pattern of several nodes."""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx

from deepsharp_export_onnx.read.readers.base import Reading


def attrs(node: onnx.NodeProto) -> dict[str, Any]:
    from deepsharp_export_onnx.read.readers.view import GraphView

    return GraphView.attrs(node)


def axes_of(r: Reading, node: onnx.NodeProto) -> list[int] | None:
    """A node's axes, an attribute in the older operator sets and an input in the newer ones."""
    found = attrs(node).get("axes")
    if found is None and len(node.input) > 1 and node.input[1]:
        value = r.view.constant(node.input[1])
        found = None if value is None else value.reshape(-1).tolist()
    return None if found is None else [int(a) for a in found]


def consumer(r: Reading, value: str, *op_types: str) -> onnx.NodeProto | None:
    """The single open node reading `value`, when it is of one of `op_types`."""
    node = r.view.only_consumer(value)
    return node if node is not None and (not op_types or node.op_type in op_types) else None


def consumer_among(r: Reading, value: str, op_type: str) -> onnx.NodeProto | None:
    """The one open node of `op_type` reading `value`, whatever else reads it."""
    found = [n for n in consumers(r, value) if n.op_type == op_type]
    return found[0] if len(found) == 1 else None


def consumers(r: Reading, value: str) -> list[onnx.NodeProto]:
    seen, found = set(), []
    for node in r.view.open_consumers(value):
        if id(node) not in seen:
            seen.add(id(node))
            found.append(node)
    return found


def producer(r: Reading, value: str, *op_types: str) -> onnx.NodeProto | None:
    node = r.view.producer.get(value)
    return node if node is not None and (not op_types or node.op_type in op_types) else None


def other_input(node: onnx.NodeProto, value: str) -> str:
    """The input of a two-input node that is not `value`."""
    return node.input[1] if node.input[0] == value else node.input[0]


def constant_list(r: Reading, name: str) -> list | None:
    value = r.view.constant(name) if name else None
    return None if value is None else value.reshape(-1).tolist()


def scalar(r: Reading, name: str) -> float | None:
    value = r.view.constant(name) if name else None
    return None if value is None or value.size != 1 else value.reshape(-1)[0].item()


def perm_of(node: onnx.NodeProto) -> list[int]:
    return [int(p) for p in attrs(node).get("perm", [])]


def float32_decimal(value: float) -> float:
    """A float32 read back as the shortest decimal naming the same float32 (0.3, not
    0.30000001192092896): re-exporting writes the same bits."""
    return float(str(np.float32(value)))
