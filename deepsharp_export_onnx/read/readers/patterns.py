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


def reshaped_dims(r: Reading, node: onnx.NodeProto) -> tuple | None:
    """The dims a Reshape gives, from its constant shape and its input's dims (a 0 copies the
    axis, a -1 takes what is left: a number, or the one symbol left over), else as inferred."""
    shape = constant_list(r, node.input[1]) if len(node.input) > 1 else None
    dims = r.view.dims(node.input[0])
    if shape is None or dims is None:
        return r.view.dims(node.output[0])
    copy = not attrs(node).get("allowzero", 0)
    out = [dims[i] if s == 0 and copy and i < len(dims) else int(s) for i, s in enumerate(shape)]
    if -1 not in out:
        return tuple(out)
    if None in dims or None in out:  # an unknown size: no telling what -1 leaves
        return r.view.dims(node.output[0])
    left_number, left_symbols = _factors(dims)
    for d in out:
        if d == -1:
            continue
        number, symbols = _factors([d])
        if number == 0 or left_number % number or any(left_symbols.count(s) < symbols.count(s)
                                                      for s in symbols):
            return None  # no whole number of values left for the -1 (or not by these symbols)
        left_number //= number
        for s in symbols:
            left_symbols.remove(s)
    rest = left_number if not left_symbols else (left_symbols[0] if left_number == 1
                                                  and len(left_symbols) == 1 else None)
    return tuple(rest if d == -1 else d for d in out)


def _factors(dims) -> tuple[int, list]:
    number, symbols = 1, []
    for d in dims:
        if isinstance(d, int):
            number *= d
        else:
            symbols.append(d)
    return number, symbols
