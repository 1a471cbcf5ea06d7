"""Graph: a mutable copy of an ONNX graph that the normalising passes rewrite in place.

It holds the nodes in order, the constants by name (initializers and folded values), the element
type and dims of each value as inference found them, and answers who makes and who reads a
value. A pass that bypasses a node (`bypass`) sends its readers to the node's input; a pass that
replaces nodes keeps the last output's name, so the dims already found stay true.
"""

from __future__ import annotations

import heapq
from typing import Any, Callable, Iterable

import numpy as np
import onnx
from onnx import helper, numpy_helper

from deepsharp_export_onnx import opsets

Dims = tuple[int | str | None, ...]


class Graph:
    def __init__(self, model: onnx.ModelProto, outputs: list[onnx.ValueInfoProto]) -> None:
        self.model = model
        graph = model.graph
        self.opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 0)
        self.constants: dict[str, np.ndarray] = {
            t.name: numpy_helper.to_array(t) for t in graph.initializer}
        self.inputs = [i for i in graph.input if i.name not in self.constants]
        self.outputs = list(outputs)
        self.nodes: list[onnx.NodeProto] = []
        for node in graph.node:
            copy = onnx.NodeProto()
            copy.CopyFrom(node)
            self.nodes.append(copy)
        self.dims: dict[str, Dims] = {}
        self.types: dict[str, int] = {}
        for info in [*graph.input, *graph.output]:
            self.note(info)
        self._fresh = 0

    # -- values -----------------------------------------------------------------------------------
    def note(self, info: onnx.ValueInfoProto, invented: str | None = None) -> None:
        """Record a value's type and dims (symbols starting with `invented` as unknown)."""
        tensor = info.type.tensor_type
        if info.type.WhichOneof("value") != "tensor_type":
            return
        if tensor.elem_type:
            self.types[info.name] = tensor.elem_type
        if tensor.HasField("shape"):
            self.dims[info.name] = tuple(
                d.dim_value if d.HasField("dim_value") else (
                    None if not d.dim_param or (invented and d.dim_param.startswith(invented))
                    else d.dim_param)
                for d in tensor.shape.dim)

    def constant(self, name: str) -> np.ndarray | None:
        return self.constants.get(name) if name else None

    def elem_type(self, name: str) -> int | None:
        if name in self.constants:
            try:
                return helper.np_dtype_to_tensor_dtype(self.constants[name].dtype)
            except (KeyError, TypeError, ValueError):
                return None
        return self.types.get(name)

    def known_dims(self, name: str) -> tuple[int, ...] | None:
        """The value's dims when every one is a number."""
        if name in self.constants:
            return tuple(self.constants[name].shape)
        dims = self.dims.get(name)
        if dims is None or not all(isinstance(d, int) for d in dims):
            return None
        return dims  # type: ignore[return-value]

    def add_constant(self, base: str, array: np.ndarray) -> str:
        name = self._unused(base, lambda n: n in self.constants)
        self.constants[name] = np.asarray(array)
        return name

    def fresh(self, base: str) -> str:
        """A name for a new node's output that no constant and no node's output has."""
        return self._unused(base, lambda n: n in self.constants or self.producer(n) is not None)

    def _unused(self, base: str, taken: Callable[[str], bool]) -> str:
        self._fresh += 1
        while taken(name := f"{base}/normalised_{self._fresh}"):
            self._fresh += 1
        return name

    # -- nodes ------------------------------------------------------------------------------------
    def producer(self, value: str) -> onnx.NodeProto | None:
        for node in self.nodes:
            if value in node.output:
                return node
        return None

    def consumers(self, value: str) -> list[onnx.NodeProto]:
        return [n for n in self.nodes if value in n.input]

    def only_reader(self, value: str, *op_types: str) -> onnx.NodeProto | None:
        """The one node reading `value`, when it is of one of `op_types` and `value` is not a
        graph output."""
        found = self.consumers(value)
        if len(found) == 1 and found[0].op_type in op_types and not self.is_output(value):
            return found[0]
        return None

    def is_output(self, value: str) -> bool:
        return any(o.name == value for o in self.outputs)

    def remove(self, *nodes: onnx.NodeProto) -> None:
        ids = {id(n) for n in nodes}
        self.nodes = [n for n in self.nodes if id(n) not in ids]

    def replace(self, old: list[onnx.NodeProto], new: onnx.NodeProto) -> None:
        """Put `new` where the last of `old` was, and drop `old`."""
        ids = {id(n) for n in old}
        index = max(i for i, n in enumerate(self.nodes) if id(n) in ids)
        self.nodes = [new if i == index else n for i, n in enumerate(self.nodes)
                      if i == index or id(n) not in ids]

    def rename_uses(self, old: str, new: str) -> None:
        for node in self.nodes:
            for i, name in enumerate(node.input):
                if name == old:
                    node.input[i] = new

    def bypass(self, node: onnx.NodeProto, source: str) -> bool:
        """Drop a node whose first output equals `source`: its readers read `source` instead.
        A graph output keeps its name: the value's producer is renamed to it (not possible when
        `source` is a graph input or a constant: the node stays)."""
        out = node.output[0]
        if self.is_output(out):
            maker = self.producer(source)
            if maker is None or self.is_output(source):
                return False
            maker.output[list(maker.output).index(source)] = out
            self.rename_uses(source, out)
            if source in self.dims and out not in self.dims:
                self.dims[out] = self.dims[source]
            self.remove(node)
            return True
        self.rename_uses(out, source)
        self.remove(node)
        return True

    def make(self, op_type: str, inputs: list[str], outputs: list[str], name: str,
             **attrs: Any) -> onnx.NodeProto:
        """A node in the form this graph's operator set has it (axes as an attribute or input)."""
        def constant(label: str, array: np.ndarray) -> str:
            return self.add_constant(f"{name}/{label}", array)

        inputs, attrs = opsets.materialize(op_type, list(inputs), attrs, self.opset, constant)
        return helper.make_node(op_type, inputs, outputs, name=name, **attrs)

    def axes(self, node: onnx.NodeProto, index: int = 1) -> list[int] | None:
        """A node's axes: the attribute in older operator sets, the constant input in newer."""
        for a in node.attribute:
            if a.name == "axes":
                return [int(v) for v in a.ints]
        if len(node.input) > index and node.input[index]:
            value = self.constant(node.input[index])
            return None if value is None else [int(v) for v in value.reshape(-1)]
        return None

    def sort(self) -> None:
        """Put the nodes in an order where each comes after the producers of its inputs, keeping
        the present order wherever it already is one (Kahn's, the earliest ready node first)."""
        made = {o: i for i, n in enumerate(self.nodes) for o in n.output if o}
        waits = [{made[v] for v in n.input if v in made} for n in self.nodes]
        readers: dict[int, list[int]] = {}
        for i, needs in enumerate(waits):
            for j in needs:
                readers.setdefault(j, []).append(i)
        ready = [i for i, needs in enumerate(waits) if not needs]
        heapq.heapify(ready)
        order = []
        while ready:
            i = heapq.heappop(ready)
            order.append(self.nodes[i])
            for k in readers.get(i, []):
                waits[k].discard(i)
                if not waits[k]:
                    heapq.heappush(ready, k)
        if len(order) == len(self.nodes):  # a cycle keeps the order it came in (refused later)
            self.nodes = order

    def prune(self) -> None:
        """Keep only the nodes the outputs need."""
        needed = {o.name for o in self.outputs}
        kept: list[onnx.NodeProto] = []
        for node in reversed(self.nodes):
            if any(o in needed for o in node.output if o):
                kept.append(node)
                needed.update(i for i in node.input if i)
        self.nodes = kept[::-1]
        self.constants = {k: v for k, v in self.constants.items() if k in needed}

    # -- back to a model ----------------------------------------------------------------------------
    def to_model(self) -> onnx.ModelProto:
        graph = helper.make_graph(
            self.nodes, self.model.graph.name or "graph", list(self.inputs), list(self.outputs),
            initializer=[_tensor(name, array) for name, array in self.constants.items()],
            value_info=[helper.make_tensor_value_info(name, self.types.get(name, 0), list(dims))
                        for name, dims in self.dims.items() if not self._ends(name)])
        model = helper.make_model(graph, opset_imports=list(self.model.opset_import),
                                  # IR 4 and up: initializers need not be listed as inputs
                                  ir_version=max(self.model.ir_version, 4),
                                  producer_name=self.model.producer_name,
                                  producer_version=self.model.producer_version)
        for prop in self.model.metadata_props:
            model.metadata_props.add(key=prop.key, value=prop.value)
        return model

    def _ends(self, name: str) -> bool:
        return any(v.name == name for v in [*self.inputs, *self.outputs])


def _tensor(name: str, array: np.ndarray) -> onnx.TensorProto:
    return numpy_helper.from_array(np.asarray(array), name)


def dims_product(dims: Iterable[Any]) -> int | None:
    total = 1
    for d in dims:
        if not isinstance(d, int):
            return None
        total *= d
    return total
