"""Three MatMuls of one series into queries, keys and values, and the nodes of
`sequence_nodes.attention_nodes` after them -> attention (one head) or multi-head attention."""

from __future__ import annotations

import math

import numpy as np
import onnx

from deepsharp.layers.attention import Attention, MultiHeadAttention
from deepsharp_export_onnx.read.readers.base import Read, Reading, Unreadable, reads_fork
from deepsharp_export_onnx.read.readers.patterns import (
    attrs, axes_of, constant_list, consumer, consumer_among, float32_decimal, other_input,
    perm_of, producer, scalar,
)

_ALLOWED_OPS = {"Unsqueeze", "And", "Not", "Greater", "Range", "Gather", "Shape"}


def _projection(r: Reading, matmul: onnx.NodeProto) -> tuple[list, dict, str, str] | None:
    """A MatMul by a constant kernel and the Add of a bias: (nodes, slots, value, role) where the
    role is what the heads' Transpose says (or None when there is no head cut)."""
    kernel = r.view.constant(matmul.input[1])
    add = consumer(r, matmul.output[0], "Add")
    bias = r.view.constant(other_input(add, matmul.output[0])) if add is not None else None
    if kernel is None or kernel.ndim != 2 or bias is None or bias.shape != (kernel.shape[1],):
        return None
    return [matmul, add], {"weight": kernel, "bias": bias}, add.output[0], kernel.shape[1]


def _heads(r: Reading, value: str) -> tuple[list, str, str, int] | None:
    """Reshape (0, 0, heads, d) and Transpose: (nodes, value, role, heads)."""
    reshape = consumer(r, value, "Reshape")
    if reshape is not None:
        shape = constant_list(r, reshape.input[1])
        turn = consumer(r, reshape.output[0], "Transpose")
        if shape is None or len(shape) != 4 or shape[:2] != [0, 0] or turn is None:
            return None
        role = {(0, 2, 1, 3): "query_or_value", (0, 2, 3, 1): "key"}.get(tuple(perm_of(turn)))
        return (None if role is None else ([reshape, turn], turn.output[0], role, int(shape[2])))
    turn = consumer(r, value, "Transpose")
    if turn is not None and perm_of(turn) == [0, 2, 1]:
        return [turn], turn.output[0], "key", 1
    return [], value, "query_or_value", 1


def _allowed(r: Reading, where: onnx.NodeProto, scores: str) -> tuple[list, bool, bool]:
    """The nodes saying which keys count (from the mask and/or the causal order)."""
    nodes, pending, masked = [], [where.input[0]], False
    seen: set[int] = set()
    while pending:
        value = pending.pop()
        if value == scores or r.view.constant(value) is not None:
            continue
        if value == r.extra.get("mask"):
            masked = True
            continue
        node = producer(r, value)
        if node is None or node.op_type not in _ALLOWED_OPS:
            raise r.unreadable(where, f"the keys left out must come from the series' mask or the "
                                      f"causal order; {value!r} does not")
        if id(node) not in seen:
            seen.add(id(node))
            nodes.append(node)
            pending += [i for i in node.input if i]
    causal = any(n.op_type == "Range" for n in nodes)
    return nodes, masked, causal


@reads_fork
def read_attention(nodes: list[onnx.NodeProto], r: Reading) -> Read | None:
    if len(nodes) != 3 or any(n.op_type != "MatMul" or n.input[0] != r.value for n in nodes):
        return None
    projections = [_projection(r, n) for n in nodes]
    heads = [_heads(r, p[2]) for p in projections] if all(projections) else [None]
    if not all(heads):
        return None
    keys = [k for k, h in enumerate(heads) if h[2] == "key"]
    if len(keys) != 1:
        return None
    k = keys[0]
    scores = consumer(r, heads[k][1], "MatMul")
    if scores is None or scores.input[1] != heads[k][1]:
        return None
    q = next((i for i, h in enumerate(heads) if h[1] == scores.input[0] and i != k), None)
    v = next((i for i in range(3) if i not in (q, k)), None)
    if q is None:
        return None
    try:
        return _read_core(r, projections, heads, (q, k, v), scores)
    except Unreadable:
        raise
    except (KeyError, IndexError, TypeError, AttributeError):
        raise r.unreadable(scores, "the scores are not followed by the attention's nodes (Mul by "
                                   "the scale, the mask's Add, Softmax, MatMul by the values)") from None


def _read_core(r: Reading, projections, heads, roles, scores) -> Read:
    q, k, v = roles
    head_count = heads[q][3]
    multi = len(heads[q][0]) == 2  # multi-head attention cuts heads (Reshape, Transpose)
    width = projections[q][3]
    taken = [n for p in projections for n in p[0]] + [n for h in heads for n in h[0]] + [scores]
    scaled = consumer(r, scores.output[0], "Mul")
    scale = scalar(r, other_input(scaled, scores.output[0]))
    expected = np.float32(1.0 / math.sqrt(width // head_count))
    if scale is None or np.float32(scale) != expected:
        raise r.unreadable(scaled, f"the scores are scaled by 1/sqrt(head width) = "
                                   f"{float32_decimal(expected)}, received "
                                   f"{scale if scale is None else float32_decimal(scale)}")
    taken.append(scaled)
    current, causal = _weighting(r, scaled, heads[v][1], 4 if multi else 3, taken)
    slots = {}
    for name, index in zip(("query", "key", "value"), roles):
        slots[f"{name}_weight"] = projections[index][1]["weight"]
        slots[f"{name}_bias"] = projections[index][1]["bias"]
    if not multi:
        return Read(current, taken, [Attention(causal=causal)], [slots])
    current = _output_projection(r, current, width, slots, taken)
    return Read(current, taken, [MultiHeadAttention(heads=head_count, width=width, causal=causal)],
                [slots])


def _weighting(r: Reading, scaled: onnx.NodeProto, values: str, rank: int,
               taken: list) -> tuple[str, bool]:
    """From the scaled scores to the weighted values: the mask's Add (if any), Softmax, MatMul by
    the values, the zeros for a query with no key left. Returns (value after, causal)."""
    current, masked, causal, allowed = scaled.output[0], False, False, None
    added = consumer_among(r, current, "Add")  # the causal order also reads the scores' Shape
    if added is not None:
        where = producer(r, other_input(added, current), "Where")
        allowed_nodes, masked, causal = _allowed(r, where, scaled.output[0])
        allowed = where.input[0]
        taken += [added, where, *allowed_nodes]
        current = added.output[0]
    softmax = consumer(r, current, "Softmax")
    if attrs(softmax).get("axis") not in (rank - 1, -1):
        raise r.unreadable(softmax, "the softmax of the scores is over the keys (the last axis)")
    weighted = consumer(r, softmax.output[0], "MatMul")
    if weighted.input[1] != values:
        raise r.unreadable(weighted, "the weights must multiply the values")
    taken += [softmax, weighted]
    current = weighted.output[0]
    if masked:  # Mul by ReduceMax(Cast(allowed)): zeros for a query with no key left
        answered = consumer(r, current, "Mul")
        any_key = producer(r, other_input(answered, current), "ReduceMax")
        seen = producer(r, any_key.input[0], "Cast")
        if seen.input[0] != allowed or axes_of(r, any_key) != [rank - 1]:
            raise r.unreadable(answered, "a query with no key left is zeroed by the keys it sees")
        taken += [seen, any_key, answered]
        current = answered.output[0]
    return current, causal


def _output_projection(r: Reading, current: str, width: int, slots: dict, taken: list) -> str:
    """The heads joined (Transpose, Reshape) and the output projection (MatMul, Add)."""
    turn = consumer(r, current, "Transpose")
    join = consumer(r, turn.output[0], "Reshape")
    out = consumer(r, join.output[0], "MatMul")
    bias_add = consumer(r, out.output[0], "Add")
    slots["output_weight"] = r.need_constant(out, 1, "output kernel")
    slots["output_bias"] = r.view.constant(other_input(bias_add, out.output[0]))
    if perm_of(turn) != [0, 2, 1, 3] or constant_list(r, join.input[1]) != [0, 0, width] \
            or slots["output_bias"] is None:
        raise r.unreadable(turn, "the heads are joined by Transpose [0, 2, 1, 3] and Reshape "
                                 "[0, 0, width], then the output projection")
    taken += [turn, join, out, bias_add]
    return bias_add.output[0]
