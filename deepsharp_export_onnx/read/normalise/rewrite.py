"""Rewrites that give one form to what exporters write several ways; each is exact (the graph
computes the same numbers after it, for every input its annotations allow):

- no-ops dropped: Identity, Cast to the type the value already has, Dropout in inference form,
  a Reshape to the dims the value already has, a Transpose by the identity;
- a recurrent node's initial states that are all zeros (a constant, or ConstantOfShape / Expand
  of a zero, sliced or reshaped) become absent inputs, which ONNX defines as zeros;
- Gather of one index on an axis of size 1 becomes a Squeeze of that axis; Gather of a Concat
  along the concatenated axis picks the piece the index falls in;
- Unsqueeze, a reduction keeping its axes, then Squeeze of the axes added, becomes the reduction
  alone; a reduction keeping its axes then a Squeeze of exactly those becomes one that drops
  them; a global pool then a Squeeze of every place axis becomes a reduction dropping them;
- a channels-first series turned time-major at once for a recurrent node, Transpose [2, 0, 1],
  becomes the two turns it is, to channels-last and then to time-major.
"""

from __future__ import annotations

from typing import Callable

import numpy as np
import onnx

from deepsharp_export_onnx.read.normalise.graph import Graph

RECURRENT_STATES = {"LSTM": (5, 6), "GRU": (5,), "RNN": (5,)}
REDUCE_OPS = {"ReduceMean", "ReduceMax", "ReduceMin", "ReduceSum", "ReduceProd"}
GLOBAL_POOLS = {"GlobalAveragePool": "ReduceMean", "GlobalMaxPool": "ReduceMax"}


def _attrs(node: onnx.NodeProto) -> dict:
    return {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}


# -- no-ops -------------------------------------------------------------------------------------------
def _is_noop(g: Graph, node: onnx.NodeProto) -> bool:
    op, attrs = node.op_type, _attrs(node)
    if not node.input or not node.input[0]:
        return False
    source = node.input[0]
    if op == "Identity":
        return True
    if op == "Cast":
        return g.elem_type(source) is not None and g.elem_type(source) == attrs.get("to")
    if op == "Dropout":
        training = g.constant(node.input[2]) if len(node.input) > 2 and node.input[2] else None
        inference = len(node.input) <= 2 or not node.input[2] or (
            training is not None and not bool(training.reshape(-1)[0]))
        mask_unused = len(node.output) < 2 or not node.output[1] or not g.consumers(node.output[1])
        return inference and mask_unused and attrs.get("is_test", 1) != 0
    if op == "Transpose":
        perm = list(attrs.get("perm", []))
        return bool(perm) and perm == list(range(len(perm)))
    if op == "Reshape":
        dims = g.dims.get(source)
        shape = g.constant(node.input[1]) if len(node.input) > 1 else None
        return (dims is not None and shape is not None and len(shape.reshape(-1)) == len(dims)
                and _keeps_dims(dims, [int(s) for s in shape.reshape(-1)],
                                attrs.get("allowzero", 0)))
    return False


def _keeps_dims(dims: tuple, shape: list[int], allowzero: int) -> bool:
    """Whether Reshape(shape) of a value of `dims` gives the same dims."""
    unknown = 0
    for d, s in zip(dims, shape):
        if s == 0 and not allowzero:
            continue
        if s == -1:
            unknown += 1
            continue
        if not isinstance(d, int) or d != s:
            return False
    if unknown == 1:  # -1 takes what the other axes leave: the same axis size
        return True
    return unknown == 0


def drop_noops(g: Graph) -> bool:
    changed = False
    for node in list(g.nodes):
        if node.domain in ("", "ai.onnx") and _is_noop(g, node):
            changed |= g.bypass(node, node.input[0])
    return changed


# -- zero initial states ------------------------------------------------------------------------------
def filled_with(g: Graph, name: str, depth: int = 0) -> float | None:
    """The one number every element of `name` holds, when the graph says so."""
    array = g.constant(name)
    if array is not None:
        if array.size and array.dtype.kind in "fiub":
            flat = array.reshape(-1)
            return float(flat[0]) if np.all(flat == flat[0]) else None
        return None
    node = g.producer(name)
    if node is None or depth > 16:
        return None
    if node.op_type == "ConstantOfShape":
        value = next((a.t for a in node.attribute if a.name == "value"), None)
        return 0.0 if value is None else filled_with_tensor(value)
    if node.op_type in ("Expand", "Slice", "Gather", "Reshape", "Squeeze", "Unsqueeze",
                        "Transpose", "Identity", "Cast", "Tile", "Flatten") and node.input:
        return filled_with(g, node.input[0], depth + 1)
    if node.op_type == "Concat":
        values = {filled_with(g, i, depth + 1) for i in node.input}
        return values.pop() if len(values) == 1 else None
    return None


def filled_with_tensor(tensor: onnx.TensorProto) -> float | None:
    array = onnx.numpy_helper.to_array(tensor).reshape(-1)
    return float(array[0]) if array.size and np.all(array == array[0]) else None


def zero_states(g: Graph) -> bool:
    changed = False
    for node in g.nodes:
        for index in RECURRENT_STATES.get(node.op_type, ()):
            if index < len(node.input) and node.input[index] and filled_with(g, node.input[index]) == 0.0:
                node.input[index] = ""
                changed = True
        while node.op_type in RECURRENT_STATES and node.input and not node.input[-1]:
            node.input.pop()
    return changed


# -- Gather ---------------------------------------------------------------------------------------------
def gathers(g: Graph) -> bool:
    changed = False
    for node in list(g.nodes):
        if node.op_type != "Gather" or len(node.input) != 2:
            continue
        index = g.constant(node.input[1])
        if index is None or index.ndim != 0 or index.dtype.kind not in "iu":
            continue
        axis = int(_attrs(node).get("axis", 0))
        changed |= _gather_of_concat(g, node, int(index), axis) or _gather_unit(g, node, axis)
    return changed


def _gather_unit(g: Graph, node: onnx.NodeProto, axis: int) -> bool:
    dims = g.dims.get(node.input[0])
    if dims is None or not -len(dims) <= axis < len(dims) or dims[axis] != 1:
        return False
    squeeze = g.make("Squeeze", [node.input[0]], list(node.output), node.name,
                     axes=[axis % len(dims)])
    g.replace([node], squeeze)
    return True


def _gather_of_concat(g: Graph, node: onnx.NodeProto, index: int, axis: int) -> bool:
    concat = g.producer(node.input[0])
    if concat is None or concat.op_type != "Concat":
        return False
    rank = len(g.dims.get(node.input[0]) or ())
    if not rank or int(_attrs(concat).get("axis", 0)) % rank != axis % rank:
        return False
    sizes = [(g.dims.get(p) or (None,) * rank)[axis % rank] for p in concat.input]
    if not all(isinstance(s, int) for s in sizes):
        return False
    total = sum(sizes)
    index = index + total if index < 0 else index
    start = 0
    for piece, size in zip(concat.input, sizes):
        if start <= index < start + size:
            node.input[0] = piece
            node.input[1] = g.add_constant(node.name or node.output[0], np.array(index - start))
            return True
        start += size
    return False


# -- squeezes around reductions -----------------------------------------------------------------------
def _norm(axes: list[int] | None, rank: int) -> list[int] | None:
    return None if axes is None else sorted(a % rank for a in axes)


def reductions(g: Graph) -> bool:
    changed = False
    for node in list(g.nodes):
        for rule in (_unsqueezed_reduce, _reduce_then_squeeze, _pool_then_squeeze):
            if node in g.nodes and rule(g, node):
                changed = True
                break
    return changed


def _unsqueezed_reduce(g: Graph, node: onnx.NodeProto) -> bool:
    """Unsqueeze(x, U) -> Reduce(R, keepdims=1) -> Squeeze(U)  ==  Reduce(x, R minus U)."""
    if node.op_type != "Unsqueeze":
        return False
    x_dims = g.dims.get(node.input[0])
    readers = g.consumers(node.output[0])
    if x_dims is None or len(readers) != 1 or readers[0].op_type not in REDUCE_OPS:
        return False
    reduce = readers[0]
    rank = len(x_dims) + len(g.axes(node) or [])
    added, reduced = _norm(g.axes(node), rank), _norm(g.axes(reduce), rank)
    squeeze = g.only_reader(reduce.output[0], "Squeeze")
    if added is None or reduced is None or squeeze is None or _attrs(reduce).get("keepdims", 1) != 1 \
            or _norm(g.axes(squeeze), rank) != added:
        return False
    kept = [a - sum(u < a for u in added) for a in reduced if a not in added]
    if not kept:
        return False
    new = g.make(reduce.op_type, [node.input[0]], list(squeeze.output), reduce.name, axes=kept,
                 keepdims=1)
    g.replace([node, reduce, squeeze], new)
    return True


def _reduce_then_squeeze(g: Graph, node: onnx.NodeProto) -> bool:
    """Reduce(R, keepdims=1) -> Squeeze(R)  ==  Reduce(R, keepdims=0)."""
    if node.op_type not in REDUCE_OPS or _attrs(node).get("keepdims", 1) != 1:
        return False
    dims = g.dims.get(node.input[0])
    squeeze = g.only_reader(node.output[0], "Squeeze")
    if dims is None or squeeze is None:
        return False
    axes = _norm(g.axes(node), len(dims))
    if axes is None or _norm(g.axes(squeeze), len(dims)) != axes:
        return False
    new = g.make(node.op_type, [node.input[0]], list(squeeze.output), node.name, axes=axes,
                 keepdims=0)
    g.replace([node, squeeze], new)
    return True


def _pool_then_squeeze(g: Graph, node: onnx.NodeProto) -> bool:
    """GlobalAveragePool/GlobalMaxPool -> Squeeze(every place axis)  ==  Reduce(places, 0)."""
    if node.op_type not in GLOBAL_POOLS:
        return False
    dims = g.dims.get(node.input[0])
    squeeze = g.only_reader(node.output[0], "Squeeze")
    if dims is None or squeeze is None or len(dims) < 3:
        return False
    places = list(range(2, len(dims)))
    if _norm(g.axes(squeeze), len(dims)) != places:
        return False
    new = g.make(GLOBAL_POOLS[node.op_type], [node.input[0]], list(squeeze.output), node.name,
                 axes=places, keepdims=0)
    g.replace([node, squeeze], new)
    return True


# -- a channels-first series turned time-major at once ----------------------------------------------------
def recurrent_turns(g: Graph) -> bool:
    """Transpose [2, 0, 1] of a (batch, channels, steps) value into an LSTM/GRU (PyTorch folds a
    Conv1d's `y.transpose(1, 2)` into the recurrent node's time-major turn) becomes Transpose
    [0, 2, 1] (to channels-last) then [1, 0, 2] (to time-major): the same perm, in the two turns
    the readers know."""
    changed = False
    for node in list(g.nodes):
        if node.op_type != "Transpose" or _attrs(node).get("perm") != [2, 0, 1]:
            continue
        rnn = g.only_reader(node.output[0], *RECURRENT_STATES)
        dims = g.dims.get(node.input[0])
        if rnn is None or rnn.input[0] != node.output[0] or dims is None or len(dims) != 3:
            continue
        last = g.fresh(node.name or node.output[0])
        g.dims[last] = (dims[0], dims[2], dims[1])
        if node.input[0] in g.types:
            g.types[last] = g.types[node.input[0]]
        at = g.nodes.index(node)
        g.nodes[at:at + 1] = [g.make("Transpose", [node.input[0]], [last], last, perm=[0, 2, 1]),
                              g.make("Transpose", [last], list(node.output), node.name,
                                     perm=[1, 0, 2])]
        changed = True
    return changed


REWRITES: list[Callable[[Graph], bool]] = [drop_noops, zero_states, gathers, reductions,
                                           recurrent_turns]
