"""The tape: writers record nodes, initializers and shape annotations; the tape writes the
ModelProto for the operator set the nodes need.

    tape = Tape()
    w = tape.initializer("0.weight", kernel)
    y = tape.op("MatMul", ["input", w], name="0.dense")
    tape.annotate(y, ("batch", 16))
    model = tape.to_model(inputs=[...], outputs=[...])

Writers never touch protobuf: only this module and `opsets` do.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from deepsharp_export_onnx import opsets
from deepsharp_export_onnx.inference import infer_shapes

Dims = tuple[int | str | None, ...]

ELEM_TYPES = {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.int64): TensorProto.INT64,
              np.dtype(np.bool_): TensorProto.BOOL, np.dtype(np.float64): TensorProto.DOUBLE,
              np.dtype(np.int32): TensorProto.INT32, np.dtype(np.float16): TensorProto.FLOAT16}


@dataclass
class Node:
    op_type: str
    inputs: list[str]
    outputs: list[str]
    attrs: dict[str, Any]
    name: str
    owner: str = ""  # the step (place and kind) that wrote it, for messages
    domain: str = ""  # "" is ONNX's own; "ai.onnx.ml" for LabelEncoder (see opsets.DOMAINS)


@dataclass
class Tape:
    nodes: list[Node] = field(default_factory=list)
    initializers: dict[str, np.ndarray] = field(default_factory=dict)
    annotations: dict[str, tuple[int, Dims]] = field(default_factory=dict)
    owner: str = ""
    weights: set[str] = field(default_factory=set)  # the initializers that hold trained values

    def _fresh(self, name: str) -> str:
        taken = {o for n in self.nodes for o in n.outputs} | set(self.initializers)
        if name not in taken:
            return name
        suffix = 1
        while f"{name}_{suffix}" in taken:
            suffix += 1
        return f"{name}_{suffix}"

    def op(self, op_type: str, inputs: Sequence[str], attrs: dict[str, Any] | None = None, *,
           name: str, outputs: int = 1, domain: str = "") -> Any:
        """Record a node; its output(s) are named after the node (`name`, or `name:1`...).
        An empty string in `inputs` is an omitted optional input."""
        name = self._fresh(name)
        names = [name] if outputs == 1 else [f"{name}:{i}" for i in range(outputs)]
        self.nodes.append(Node(op_type, list(inputs), names, dict(attrs or {}), name, self.owner,
                               domain))
        return names[0] if outputs == 1 else names

    def initializer(self, name: str, array: np.ndarray, *, weight: bool = False) -> str:
        """A named constant (a slot's values, a table); the same name twice must hold the same
        values. `weight`: it holds trained values (a slot), which a smaller form may store
        otherwise (float16)."""
        array = np.asarray(array, order="C")  # (ascontiguousarray would make a scalar 1-D)
        if weight:
            self.weights.add(name)
        if name in self.initializers:
            if not np.array_equal(self.initializers[name], array):
                raise ValueError(f"initializer {name!r} written twice with different values")
            return name
        self.initializers[name] = array
        return name

    def constant(self, name: str, values: Any, dtype: Any = np.int64) -> str:
        return self.initializer(name, np.asarray(values, dtype=dtype))

    def annotate(self, value: str, dims: Dims, elem_type: int = TensorProto.FLOAT) -> None:
        self.annotations[value] = (elem_type, tuple(dims))

    def rename(self, old: str, new: str) -> None:
        """Give a node output a new name everywhere it is used."""
        for node in self.nodes:
            node.outputs = [new if o == old else o for o in node.outputs]
            node.inputs = [new if i == old else i for i in node.inputs]
        if old in self.annotations:
            self.annotations[new] = self.annotations.pop(old)

    # -- writing the model ---------------------------------------------------------------------------
    def value_types(self) -> dict[str, int | None]:
        """The element type of every value: as annotated, an initializer's, else what its node
        makes of its inputs' (`opsets.result_types`)."""
        types: dict[str, int | None] = {n: t for n, (t, _) in self.annotations.items()}
        for name, array in self.initializers.items():
            types[name] = helper.np_dtype_to_tensor_dtype(array.dtype)
        for node in self.nodes:
            ins = [types.get(i) for i in node.inputs]
            for name, t in zip(node.outputs, opsets.result_types(node.op_type, node.attrs, ins,
                                                                 len(node.outputs))):
                types.setdefault(name, t)
        return types

    def node_needs(self, node: Node, types: dict[str, int | None] | None = None) -> int:
        """The oldest set holding `node` for its inputs' element types."""
        types = self.value_types() if types is None else types
        try:
            return opsets.needs(node.op_type, node.attrs, [types.get(i) for i in node.inputs])
        except opsets.NoKernel as error:
            from deepsharp_export_onnx.errors import ExportRefused

            raise ExportRefused([f"{node.owner or 'the graph'}: node {node.name!r}: {error}"]) \
                from None

    def needed_opset(self) -> int:
        types = self.value_types()
        return max([opsets.FLOOR] + [self.node_needs(n, types) for n in self.nodes
                                     if not n.domain])

    def nodes_needing_more_than(self, opset: int) -> list[Node]:
        types = self.value_types()
        return [n for n in self.nodes if not n.domain and self.node_needs(n, types) > opset]

    def _value_info(self, name: str) -> onnx.ValueInfoProto:
        elem_type, dims = self.annotations[name]
        return helper.make_tensor_value_info(name, elem_type, list(dims))

    def to_model(self, inputs: Sequence[str], outputs: Sequence[str], *, opset: int | None = None,
                 metadata: dict[str, str] | None = None, producer: tuple[str, str] = ("", ""),
                 graph_name: str = "graph", tensor: Any = None) -> onnx.ModelProto:
        """The ModelProto, for `opset` or the oldest set holding every node. `tensor(array, name)`
        makes each initializer's TensorProto (numpy_helper.from_array unless given: external
        data gives one that points into a file)."""
        opset = self.needed_opset() if opset is None else opset
        tensor = tensor or numpy_helper.from_array
        initializers = dict(self.initializers)
        node_protos = []
        for node in self.nodes:
            def constant(label: str, array: np.ndarray, _node: Node = node) -> str:
                name = f"{_node.name}/{label}"
                initializers[name] = array
                return name

            node_inputs, attrs = opsets.materialize(node.op_type, node.inputs, node.attrs, opset,
                                                    constant)
            node_protos.append(helper.make_node(node.op_type, node_inputs, node.outputs,
                                                name=node.name, domain=node.domain or None,
                                                **attrs))
        imports = [helper.make_opsetid("", opset)] + [
            helper.make_opsetid(domain, version)
            for domain, version in opsets.domains_needed([(n.domain, n.op_type) for n in self.nodes])]
        ir = opsets.ir_version(opset, imports)
        graph_inputs = [self._value_info(i) for i in inputs]
        if ir < 4:  # before IR 4 every initializer must also be a graph input
            graph_inputs += [helper.make_tensor_value_info(n, ELEM_TYPES[a.dtype], list(a.shape))
                             for n, a in initializers.items()]
        special = set(inputs) | set(outputs)
        graph = helper.make_graph(
            node_protos, graph_name, graph_inputs, [self._value_info(o) for o in outputs],
            initializer=[tensor(a, n) for n, a in initializers.items()],
            value_info=[self._value_info(v) for v in self.annotations if v not in special],
        )
        model = helper.make_model(graph, opset_imports=imports, ir_version=ir, producer_name=producer[0],
                                  producer_version=producer[1])
        for key, value in (metadata or {}).items():
            model.metadata_props.add(key=key, value=value)
        _annotate_the_rest(model)
        return model


def _annotate_the_rest(model: onnx.ModelProto) -> None:
    """Annotate every node output the writers left bare, from ONNX's shape inference run at two
    concrete probe sizes of every input symbol. An axis is written as a number when it has the
    same size in both probes, as a symbol when it follows that symbol's probe sizes, and is left
    anonymous otherwise (an extent derived from a symbol: no bare name states it). Symbolic
    inference itself is not used: it can copy a symbol onto an axis that no longer has its size
    (Slice at opset 10 does)."""
    graph = model.graph
    written = {v.name for v in [*graph.input, *graph.output, *graph.value_info]}
    bare = [o for node in graph.node for o in node.output if o and o not in written]
    if not bare:
        return
    symbols = sorted({d.dim_param for v in graph.input for d in v.type.tensor_type.shape.dim
                      if d.dim_param})
    # the symbols are spaced differently in the two probes, so that an extent derived from one
    # (steps - 2 after a valid window) cannot follow another (batch) in both
    probes = [{s: base + step * i for i, s in enumerate(symbols)}
              for base, step in ((997, 2), (1999, 3))]
    inferred = [_infer_at(model, probe) for probe in probes]
    if any(found is None for found in inferred):
        return
    for name in bare:
        found = [probe.get(name) for probe in inferred]
        if any(f is None for f in found) or len(found[0][1]) != len(found[1][1]):
            continue
        dims: list[int | str | None] = []
        for a, b in zip(found[0][1], found[1][1]):
            symbol = next((s for s in symbols if probes[0][s] == a and probes[1][s] == b), None)
            dims.append(symbol if symbol else (a if a == b and a is not None else None))
        graph.value_info.append(helper.make_tensor_value_info(name, found[0][0], dims))


# the importer's normalising pass annotates a graph from elsewhere the same way
annotate_bare_values = _annotate_the_rest


def _infer_at(model: onnx.ModelProto, sizes: dict[str, int]) -> dict[str, tuple[int, tuple]] | None:
    """(element type, concrete shape) of every value when each input symbol has the given size
    (None when inference fails). The annotations written are kept at those sizes (another
    symbol's axis left unknown): inference goes on past a node it cannot see through, such as a
    Reshape whose shape operand is computed from Shape nodes in a set without data propagation
    for Gather."""
    probe = onnx.ModelProto()
    probe.CopyFrom(model)
    for value in [*probe.graph.input, *probe.graph.value_info, *probe.graph.output]:
        for dim in value.type.tensor_type.shape.dim:
            if dim.dim_param in sizes:
                dim.dim_value = sizes[dim.dim_param]
            elif dim.dim_param:
                dim.Clear()
    try:
        inferred = infer_shapes(probe, strict_mode=True, data_prop=True)
    except Exception:  # inference refusing a graph must not stop an export the checker passes
        return None
    found = {}
    for info in [*inferred.graph.value_info, *inferred.graph.output]:
        tensor = info.type.tensor_type
        if tensor.HasField("shape"):
            found[info.name] = (tensor.elem_type, tuple(
                d.dim_value if d.HasField("dim_value") else None for d in tensor.shape.dim))
    return found
