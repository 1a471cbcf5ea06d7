"""Constants: `Constant` nodes in every attribute form become named constants; a node whose
inputs are all constants is evaluated (by onnx's reference evaluator, so each operator means
what its operator set says) and replaced by its outputs; `Shape` of a value whose dims are all
known is a constant too. Evaluations whose output would be large are left alone."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import AttributeProto, helper, numpy_helper

from deepsharp_export_onnx.read.normalise.graph import Graph, dims_product

# what is folded: computations over shapes, indices and small constants (never a layer's math
# on its weights: a Gemm of two constants is folded too, but no exporter writes one)
FOLDABLE = {
    "Identity", "Cast", "CastLike", "Gather", "GatherElements", "Unsqueeze", "Squeeze", "Concat",
    "Reshape", "Slice", "Transpose", "Flatten", "Add", "Sub", "Mul", "Div", "Mod", "Neg", "Abs",
    "Sqrt", "Pow", "Reciprocal", "Floor", "Ceil", "Equal", "Less", "Greater", "LessOrEqual",
    "GreaterOrEqual", "Not", "And", "Or", "Where", "Min", "Max", "Range", "ConstantOfShape",
    "Expand", "Tile", "Size", "ReduceProd", "ReduceSum", "ReduceMax", "ReduceMin", "Shape",
    "Split", "Trilu", "Erf", "Exp", "Log",
}
LARGEST = 1 << 16  # elements: a fold making more is left as nodes
# ops that move, pick or compare values (a causal mask's Trilu, Equal and Where over a constant
# square); the others compute, and are folded only over integers and scalars: a layer's
# parameters stay the constants they are (frequencies and 2 pi stay apart)
MOVING = {"Identity", "Gather", "Unsqueeze", "Squeeze", "Concat", "Reshape", "Slice", "Transpose",
          "Flatten", "Expand", "Tile", "Shape", "Size", "Split", "ConstantOfShape", "Cast",
          "CastLike", "GatherElements", "Trilu", "Where", "Equal", "Less", "Greater",
          "LessOrEqual", "GreaterOrEqual", "Not", "And", "Or"}


def constant_nodes(g: Graph) -> bool:
    """Every `Constant` node becomes a named constant (value, value_float(s), value_int(s),
    value_string(s), sparse_value)."""
    changed = False
    for node in list(g.nodes):
        if node.op_type != "Constant" or node.domain not in ("", "ai.onnx") or len(node.output) != 1:
            continue
        array = constant_value(node)
        if array is None:
            continue
        g.constants[node.output[0]] = array
        g.remove(node)
        changed = True
    return changed


def constant_value(node: onnx.NodeProto) -> np.ndarray | None:
    """The array a Constant node holds (None for a node with no or several value attributes)."""
    if len(node.attribute) != 1:
        return None
    attribute = node.attribute[0]
    if attribute.name == "sparse_value":
        return _dense(attribute.sparse_tensor)
    if attribute.type == AttributeProto.TENSOR:
        return numpy_helper.to_array(attribute.t)
    value = helper.get_attribute_value(attribute)
    if attribute.name == "value_float":
        return np.array(value, np.float32)
    if attribute.name == "value_floats":
        return np.array(list(value), np.float32)
    if attribute.name == "value_int":
        return np.array(value, np.int64)
    if attribute.name == "value_ints":
        return np.array(list(value), np.int64)
    if attribute.name == "value_string":
        return np.array(value.decode() if isinstance(value, bytes) else value, dtype=object)
    if attribute.name == "value_strings":
        return np.array([v.decode() if isinstance(v, bytes) else v for v in value], dtype=object)
    return None


def _dense(sparse: onnx.SparseTensorProto) -> np.ndarray | None:
    """A sparse constant as its dense array: `indices` are linear (1-d) or coordinates (2-d)."""
    values = numpy_helper.to_array(sparse.values)
    indices = numpy_helper.to_array(sparse.indices).astype(np.int64)
    shape = tuple(int(d) for d in sparse.dims)
    size = dims_product(shape)
    if size is None or size > LARGEST * 16:
        return None
    dense = np.zeros(size, dtype=values.dtype)
    if indices.ndim == 2:
        indices = np.ravel_multi_index(tuple(indices.T), shape) if indices.size else indices[:, 0]
    if indices.size != values.size or (indices.size and (indices.min() < 0 or indices.max() >= size)):
        return None
    dense[indices.reshape(-1)] = values.reshape(-1)
    return dense.reshape(shape)


def fold(g: Graph) -> bool:
    """Evaluate every node whose inputs are all constants; `Shape` of known dims."""
    changed = False
    for node in list(g.nodes):
        if node.domain not in ("", "ai.onnx") or node.op_type not in FOLDABLE:
            continue
        if node.op_type == "Shape":
            folded = _shape(g, node)
        elif all(g.constant(i) is not None for i in node.input if i) and _small(g, node):
            folded = _evaluate(g, node)
        else:
            continue
        if folded is None:
            continue
        for name, array in zip(node.output, folded):
            if name:
                g.constants[name] = array
        g.remove(node)
        changed = True
    return changed


def _shape(g: Graph, node: onnx.NodeProto) -> list[np.ndarray] | None:
    dims = g.known_dims(node.input[0]) if node.input else None
    if dims is None:
        return None
    attrs = {a.name: a.i for a in node.attribute}
    rank = len(dims)
    start = _clamp(attrs.get("start", 0), rank)
    end = _clamp(attrs.get("end", rank), rank)
    return [np.array(dims[start:end], np.int64)]


def _clamp(index: int, rank: int) -> int:
    index = index + rank if index < 0 else index
    return min(max(index, 0), rank)


def _small(g: Graph, node: onnx.NodeProto) -> bool:
    """Whether the fold's output stays small: only ops that make an array of a size given by a
    constant (ConstantOfShape, Expand, Tile, Range) can grow it."""
    inputs = [g.constant(i) for i in node.input if i]
    if any(a.dtype == object for a in inputs):
        return False
    if node.op_type not in MOVING and any(a.dtype.kind == "f" and a.size > 1 for a in inputs):
        return False
    if node.op_type in ("ConstantOfShape", "Expand"):
        shape = inputs[-1].reshape(-1)
        return bool(np.all(shape >= 0)) and int(np.prod(shape, dtype=np.float64)) <= LARGEST
    if node.op_type == "Tile":
        return inputs[0].size * float(np.prod(inputs[1].astype(np.float64))) <= LARGEST
    if node.op_type == "Range":
        start, limit, delta = (float(a.reshape(-1)[0]) if a.size else 0.0 for a in inputs[:3])
        return delta != 0 and abs((limit - start) / delta) <= LARGEST
    return all(a.size <= LARGEST for a in inputs)


def _evaluate(g: Graph, node: onnx.NodeProto) -> list[np.ndarray] | None:
    from onnx.reference import ReferenceEvaluator

    names = [i for i in node.input if i]
    graph = helper.make_graph(
        [node], "fold", [helper.make_empty_tensor_value_info(n) for n in dict.fromkeys(names)],
        [helper.make_empty_tensor_value_info(o) for o in node.output if o])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", g.opset)])
    try:
        results = ReferenceEvaluator(model).run(None, {n: g.constants[n] for n in names})
    except Exception:  # a node the evaluator cannot run stays a node (its reader may refuse it)
        return None
    arrays = [np.asarray(r) for r in results]
    if any(a.size > LARGEST for a in arrays):
        return None
    return arrays
