"""GraphView: an ONNX graph indexed for reading: producers, consumers in node order, constants,
annotations, and which nodes the readers have consumed."""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
from onnx import helper, numpy_helper


class GraphView:
    def __init__(self, model: onnx.ModelProto) -> None:
        self.model = model
        graph = model.graph
        self.graph = graph
        self.nodes = list(graph.node)
        self.initializers = {t.name: numpy_helper.to_array(t) for t in graph.initializer}
        self.producer: dict[str, onnx.NodeProto] = {}
        self.consumers: dict[str, list[onnx.NodeProto]] = {}
        for node in self.nodes:
            for out in node.output:
                self.producer[out] = node
            for name in node.input:
                if name:
                    self.consumers.setdefault(name, []).append(node)
        for node in self.nodes:  # Constant nodes are constants like initializers
            if node.op_type == "Constant":
                self.initializers[node.output[0]] = numpy_helper.to_array(
                    helper.get_attribute_value(node.attribute[0]))
        self.consumed: set[int] = {id(n) for n in self.nodes if n.op_type == "Constant"}
        self.annotations = {v.name: v for v in [*graph.input, *graph.output, *graph.value_info]}
        self.metadata = {p.key: p.value for p in model.metadata_props}
        self.opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 0)

    @property
    def inputs(self) -> list[onnx.ValueInfoProto]:
        """The graph inputs that are not initializers (IR < 4 lists those as inputs too)."""
        return [i for i in self.graph.input if i.name not in self.initializers]

    def constant(self, name: str) -> np.ndarray | None:
        return self.initializers.get(name)

    def open_consumers(self, value: str) -> list[onnx.NodeProto]:
        return [n for n in self.consumers.get(value, []) if id(n) not in self.consumed]

    def only_consumer(self, value: str, op_type: str | None = None) -> onnx.NodeProto | None:
        """The single unconsumed node reading `value` (of `op_type`, if given), else None."""
        nodes = self.open_consumers(value)
        if len(nodes) == 1 and (op_type is None or nodes[0].op_type == op_type):
            return nodes[0]
        return None

    def consume(self, *nodes: onnx.NodeProto) -> None:
        self.consumed.update(id(n) for n in nodes)

    def between(self, value: str, node: onnx.NodeProto) -> list[onnx.NodeProto]:
        """The open nodes on the ways from `value` to `node` (not `node` itself)."""
        found, pending, seen = [], [i for i in node.input if i], set()
        while pending:
            name = pending.pop()
            maker = self.producer.get(name)
            if name == value or maker is None or id(maker) in seen or id(maker) in self.consumed:
                continue
            seen.add(id(maker))
            if self.reaches(value, maker):
                found.append(maker)
                pending += [i for i in maker.input if i]
        return found

    def reaches(self, value: str, node: onnx.NodeProto) -> bool:
        """Whether `node` is computed from `value`."""
        pending, seen = [i for i in node.input if i], set()
        while pending:
            name = pending.pop()
            if name == value:
                return True
            maker = self.producer.get(name)
            if maker is not None and id(maker) not in seen:
                seen.add(id(maker))
                pending += [i for i in maker.input if i]
        return False

    def after(self, node: onnx.NodeProto) -> list[onnx.NodeProto]:
        """Every open node computed from `node`'s outputs."""
        reached = {o for o in node.output if o}
        found = []
        for other in self.nodes:
            if id(other) not in self.consumed and any(i in reached for i in other.input):
                found.append(other)
                reached.update(o for o in other.output if o)
        return found

    def unconsumed(self) -> list[onnx.NodeProto]:
        return [n for n in self.nodes if id(n) not in self.consumed]

    @staticmethod
    def attrs(node: onnx.NodeProto) -> dict[str, Any]:
        values = {}
        for a in node.attribute:
            value = helper.get_attribute_value(a)
            values[a.name] = value.decode() if isinstance(value, bytes) else value
        return values

    @staticmethod
    def label(node: onnx.NodeProto) -> str:
        return f"node {node.name!r} ({node.op_type})"

    def dims(self, value: str) -> tuple[int | str | None, ...] | None:
        info = self.annotations.get(value)
        if info is None or not info.type.tensor_type.HasField("shape"):
            return None
        return tuple(d.dim_value if d.HasField("dim_value") else (d.dim_param or None)
                     for d in info.type.tensor_type.shape.dim)
