"""Small edits of ONNX graphs for refusal tests: find a node, set an attribute; a masked graph as
written before its series were reordered (`without_reordering`), and one as written before
convolutions honoured masks (`without_masked_kernels`)."""

from __future__ import annotations

import numpy as np
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


def without_reordering(model: onnx.ModelProto) -> onnx.ModelProto:
    """The graph as the exporter wrote masked series before it reordered their real steps to the
    front: every GatherND of a recurrent stack bypassed (an Identity where it makes a graph
    output), the sine positions' rows sliced from the table by the series' length, and the
    nodes left unused dropped. For padding at the end both forms give the same numbers."""
    edited = onnx.ModelProto()
    edited.CopyFrom(model)
    graph = edited.graph
    outputs = {o.name for o in graph.output}
    for node in list(graph.node):
        if node.op_type == "GatherND" and node.name.endswith(("real_first", "own_places")):
            _bypass(graph, node, outputs)
        elif node.op_type == "Gather" and node.name.endswith("sine_positions/rows"):
            _slice_rows(graph, node)
    _drop_unused(graph, outputs)
    return edited


def without_masked_kernels(model: onnx.ModelProto) -> onnx.ModelProto:
    """The graph as the exporter wrote a kernel over a masked series before it ran kernels on
    each series' real steps alone: the padding's Where(mask, x, 0) and the GatherNDs around
    every Conv and ConvTranspose bypassed, the kernel reading the padded series as it is."""
    edited = onnx.ModelProto()
    edited.CopyFrom(model)
    graph = edited.graph
    outputs = {o.name for o in graph.output}
    ends = ("/padding_zeroed", "/padding_out", "/real_first", "/own_places")
    for node in list(graph.node):
        kernel = node.name.split("/")[0].rsplit(".", 1)[-1].startswith("conv")
        if kernel and node.name.endswith(ends) and node.op_type in ("Mul", "GatherND"):
            _bypass(graph, node, outputs)
    _drop_unused(graph, outputs)
    return edited


def _bypass(graph, node: onnx.NodeProto, outputs: set[str]) -> None:
    source, result = node.input[0], node.output[0]
    if result in outputs:
        node.op_type = "Identity"
        node.input[:] = [source]
        del node.attribute[:]
        return
    for other in graph.node:
        other.input[:] = [source if i == result else i for i in other.input]
    graph.node.remove(node)


def _slice_rows(graph, node: onnx.NodeProto) -> None:
    """Gather(table, places) -> Slice(table, 0, Shape(x)[1:2], axis 0), x the Add's other input."""
    add = next(n for n in graph.node if node.output[0] in n.input)
    x = next(i for i in add.input if i != node.output[0])
    base = node.name.removesuffix("/rows")
    ints = {f"{base}/old_{k}": v for k, v in (("one", [1]), ("two", [2]), ("zero", [0]))}
    graph.initializer.extend(onnx.numpy_helper.from_array(np.asarray(v, np.int64), k)
                             for k, v in ints.items())
    names = list(ints)
    shape = helper.make_node("Shape", [x], [f"{base}/old_shape"], name=f"{base}/old_shape")
    length = helper.make_node("Slice", [shape.output[0], names[0], names[1], names[2]],
                              [f"{base}/old_length"], name=f"{base}/old_length")
    at = list(graph.node).index(node)
    node.op_type = "Slice"
    node.input[:] = [node.input[0], names[2], length.output[0], names[2]]
    del node.attribute[:]
    graph.node.insert(at, length)
    graph.node.insert(at, shape)


def _drop_unused(graph, outputs: set[str]) -> None:
    while True:
        read = {i for n in graph.node for i in n.input} | outputs
        unused = [n for n in graph.node if not any(o in read for o in n.output)]
        if not unused:
            return
        for n in unused:
            graph.node.remove(n)
