"""Reductions over the real steps of a masked series -> global pools and norms (the node groups
`write/masked_nodes.py` writes):

- Mul(x, Unsqueeze(Cast(mask, float))) -> ReduceSum over the steps, Div by Max(count, 1)
  -> global_avg_pool;
- Where(Unsqueeze(mask), x, -inf) -> ReduceMax over the steps, Where(count > 0, ., 0)
  -> global_max_pool;
- Reshape of the channels into groups, the groups' mean and variance over the real steps,
  normalised, joined, scaled and shifted -> group_norm (instance_norm when written as one);
- x read twice, by Mul with a vector (the steps' scores, their Softmax, Where the mask leaves a
  step out) and by Mul with those weights, summed over the steps -> attention_pool;

and, for the layers that count from a series' first step (recurrent.py, sequences.py), the order
putting the real steps first (`write/sequence_nodes.real_first_nodes`): `read_places`,
`read_order` and `read_along_steps`.

The mask must be the one the series carries (an embedding's padding or masking before it).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import onnx
from onnx import TensorProto

from deepsharp.layers.attention_pool import LEFT_OUT, AttentionPool
from deepsharp.layers.norm import GroupNorm, InstanceNorm
from deepsharp.layers.pool import GlobalAvgPool, GlobalMaxPool
from deepsharp_export_onnx.read.readers.base import Read, Reading, reads_fork, reads_pattern
from deepsharp_export_onnx.read.readers.patterns import (
    attrs, axes_of, constant_list, consumer, consumers, other_input, producer, scalar,
)
from deepsharp_export_onnx.read.readers.windows import decimal32, written_as
from layout import Order

MEAN_FORM = ("the mean over a series' real steps is ReduceSum(x * real) / Max(ReduceSum(real), 1) "
             "with real = Unsqueeze(Cast(mask, float)) over the steps")
MAX_FORM = ("the largest value over a series' real steps is ReduceMax(Where(mask, x, -inf)) over "
            "the steps, then Where(ReduceSum(real) > 0, ., 0)")


def read_real(r: Reading, name: str, axes: tuple[int, ...] = (2,)
              ) -> list[onnx.NodeProto] | None:
    """[Cast, Unsqueeze] when `name` is Unsqueeze(Cast(the series' mask, float), axes)."""
    unsqueeze = producer(r, name, "Unsqueeze")
    cast = producer(r, unsqueeze.input[0], "Cast") if unsqueeze is not None else None
    if cast is None or axes_of(r, unsqueeze) != list(axes) \
            or attrs(cast).get("to") != TensorProto.FLOAT or cast.input[0] != r.extra.get("mask"):
        return None
    return [cast, unsqueeze]


def _reduced(r: Reading, node: onnx.NodeProto, op_type: str) -> onnx.NodeProto | None:
    """The node reducing `node`'s output over the steps (axis 1) with op_type."""
    found = consumer(r, node.output[0], op_type)
    return found if found is not None and axes_of(r, found) == [1] else None


def _count(r: Reading, real: list[onnx.NodeProto], keep: int) -> onnx.NodeProto | None:
    """The ReduceSum of the real steps (the other reader of Unsqueeze's output)."""
    counts = [n for n in consumers(r, real[1].output[0]) if n.op_type == "ReduceSum"]
    if len(counts) != 1 or axes_of(r, counts[0]) != [1] \
            or attrs(counts[0]).get("keepdims", 1) != keep:
        return None
    return counts[0]


def _pooled(output: str, nodes: list[onnx.NodeProto], spec, keep: int) -> Read:
    if keep:
        return Read(output, nodes, [spec], [{}])
    return Read(output, nodes, [spec], [{}], order=Order.CHANNELS_LAST, rank=2)


@reads_pattern("Mul")
def read_masked_mean(node: onnx.NodeProto, r: Reading) -> Read | None:
    if r.rank != 3 or node.input[0] != r.value or r.extra.get("mask") is None:
        return None
    real = read_real(r, node.input[1])
    if real is None:
        return None
    total = _reduced(r, node, "ReduceSum")
    if total is None and consumer(r, node.output[0], "GatherND") is not None:
        return None  # the padding zeroed before a kernel (readers/conv.py)
    keep = int(attrs(total).get("keepdims", 1)) if total is not None else 1
    count = _count(r, real, keep)
    floor = consumer(r, count.output[0], "Max") if count is not None else None
    divide = consumer(r, total.output[0], "Div") if total is not None else None
    if floor is None or divide is None or scalar(r, floor.input[1]) != 1.0 \
            or list(divide.input) != [total.output[0], floor.output[0]]:
        raise r.unreadable(node, MEAN_FORM)
    return _pooled(divide.output[0], [*real, node, total, count, floor, divide],
                   GlobalAvgPool(keep_axes=bool(keep)), keep)


@reads_pattern("Where")
def read_masked_max(node: onnx.NodeProto, r: Reading) -> Read | None:
    mask = r.extra.get("mask")
    if r.rank != 3 or len(node.input) != 3 or node.input[1] != r.value or mask is None:
        return None
    condition = producer(r, node.input[0], "Unsqueeze")
    if condition is None or condition.input[0] != mask or axes_of(r, condition) != [2]:
        return None
    fill = scalar(r, node.input[2])
    largest = _reduced(r, node, "ReduceMax")
    keep = int(attrs(largest).get("keepdims", 1)) if largest is not None else 1
    real_nodes = _real_from_mask(r, mask)
    count = _count(r, real_nodes, keep) if real_nodes is not None else None
    has_real = consumer(r, count.output[0], "Cast") if count is not None else None
    choose = consumer(r, largest.output[0], "Where") if largest is not None else None
    if fill is None or not math.isinf(fill) or fill > 0 or has_real is None or choose is None \
            or attrs(has_real).get("to") != TensorProto.BOOL \
            or list(choose.input[:2]) != [has_real.output[0], largest.output[0]] \
            or scalar(r, choose.input[2]) != 0.0:
        raise r.unreadable(node, MAX_FORM)
    return _pooled(choose.output[0], [*real_nodes, condition, node, largest, count, has_real,
                                      choose], GlobalMaxPool(keep_axes=bool(keep)), keep)


def _real_from_mask(r: Reading, mask: str) -> list[onnx.NodeProto] | None:
    """[Cast, Unsqueeze]: the open Cast of the mask to float and its Unsqueeze over the steps."""
    for cast in consumers(r, mask):
        if cast.op_type == "Cast" and attrs(cast).get("to") == TensorProto.FLOAT:
            unsqueeze = consumer(r, cast.output[0], "Unsqueeze")
            if unsqueeze is not None and axes_of(r, unsqueeze) == [2]:
                return [cast, unsqueeze]
    return None


GROUP_FORM = ("a group norm over a series' real steps is Reshape(x, [0, 0, groups, width]), the "
              "groups' mean and variance over the real steps (ReduceSum over axes 1 and 3, Div by "
              "Max(count * width, 1)), (x - mean) / Sqrt(var + eps), Reshape back, * weight + bias")


def _follow(r: Reading, value: str, *ops: str) -> list[onnx.NodeProto] | None:
    """The chain of single consumers of `value` with these op types, or None."""
    chain = []
    for op in ops:
        found = consumers(r, value)  # once each: Mul(d, d) reads its operand twice
        node = found[0] if len(found) == 1 and found[0].op_type == op else None
        if node is None:
            return None
        chain.append(node)
        value = node.output[0]
    return chain


@reads_pattern("Reshape")
def read_masked_group_norm(node: onnx.NodeProto, r: Reading) -> Read | None:
    shape = constant_list(r, node.input[1]) if len(node.input) > 1 else None
    if r.rank != 3 or r.extra.get("mask") is None or node.input[0] != r.value \
            or shape is None or len(shape) != 4 or shape[:2] != [0, 0]:
        return None
    groups, width = int(shape[2]), int(shape[3])
    readers = {n.op_type: n for n in consumers(r, node.output[0])}
    masked, centred = readers.get("Mul"), readers.get("Sub")
    real = read_real(r, other_input(masked, node.output[0]), (2, 3)) if masked is not None else None
    if real is None or centred is None:
        raise r.unreadable(node, GROUP_FORM)
    nodes = _group_statistics(r, node, real, masked, centred, width)
    var, add_eps, joined, scaled, shifted = (nodes[i] for i in (-7, -6, -3, -2, -1))
    eps = scalar(r, other_input(add_eps, var.output[0]))
    weight = r.view.constant(other_input(scaled, joined.output[0]))
    bias = r.view.constant(other_input(shifted, scaled.output[0]))
    if eps is None or weight is None or bias is None:
        raise r.unreadable(node, GROUP_FORM)
    # one channel per group is an instance norm when the writer named the last node so
    instance = width == 1 and written_as(shifted, "instance_norm")
    kind = InstanceNorm(eps=decimal32(eps)) if instance else GroupNorm(groups=groups,
                                                                          eps=decimal32(eps))
    return Read(nodes[-1].output[0], [*real, node, *nodes], [kind],
                [{"weight": weight, "bias": bias}])


def _group_statistics(r: Reading, grouped: onnx.NodeProto, real: list[onnx.NodeProto],
                      masked: onnx.NodeProto, centred: onnx.NodeProto, width: int) -> list:
    """The nodes from the groups' sums to the shift, in the order the writer makes them; the last
    seven: Div (var), Add (eps), Sqrt, Div, Reshape, Mul (weight), Add (bias)."""
    counts = [n for n in consumers(r, real[1].output[0]) if n.op_type == "ReduceSum"]
    places = _follow(r, counts[0].output[0], "Mul", "Max") if len(counts) == 1 else None
    total = _follow(r, masked.output[0], "ReduceSum", "Div")
    kept = [n for n in consumers(r, centred.output[0]) if n.op_type == "Mul"]
    spread = _follow(r, kept[0].output[0], "Mul", "ReduceSum", "Div", "Add", "Sqrt") \
        if len(kept) == 1 else None
    normalised = consumer(r, spread[-1].output[0], "Div") if spread else None
    tail = _follow(r, normalised.output[0], "Reshape", "Mul", "Add") if normalised else None
    if None in (places, total, spread, normalised, tail) \
            or scalar(r, places[0].input[1]) != float(width) \
            or list(total[1].input) != [total[0].output[0], places[1].output[0]] \
            or list(centred.input) != [grouped.output[0], total[1].output[0]] \
            or spread[2].input[1] != places[1].output[0] or normalised.input[0] != centred.output[0] \
            or any(axes_of(r, n) != [1, 3] for n in (counts[0], total[0], spread[1])):
        raise r.unreadable(grouped, GROUP_FORM)
    return [counts[0], *places, masked, *total, centred, kept[0], *spread, normalised, *tail]


POOL_FORM = ("attention pooling scores the steps by ReduceSum(x * w) over the channels (w a "
             "vector), Where(mask, scores, -1e9) for a masked series, Softmax over the steps, "
             "* Cast(mask), and sums x * Unsqueeze(weights) over the steps")


@reads_fork
def read_attention_pool(nodes: list[onnx.NodeProto], r: Reading) -> Read | None:
    if r.rank != 3 or len(nodes) != 2 or any(n.op_type != "Mul" for n in nodes):
        return None
    vectors = [r.view.constant(other_input(n, r.value)) for n in nodes]
    if sum(v is not None and v.ndim == 1 for v in vectors) != 1:
        return None
    scored, weighted = nodes if vectors[0] is not None else nodes[::-1]
    weight = vectors[0] if vectors[0] is not None else vectors[1]
    chain = _pool_chain(r, scored)
    if chain is None or other_input(weighted, r.value) != chain[-1].output[0]:
        raise r.unreadable(scored, POOL_FORM)
    total = consumer(r, weighted.output[0], "ReduceSum")
    if total is None or axes_of(r, total) != [1] or attrs(total).get("keepdims", 1) != 0:
        raise r.unreadable(weighted, POOL_FORM)
    return Read(total.output[0], [scored, *chain, weighted, total], [AttentionPool()],
                [{"weight": weight}], order=Order.CHANNELS_LAST, rank=2)


def _pool_chain(r: Reading, scored: onnx.NodeProto) -> list[onnx.NodeProto] | None:
    """From the scores to the Unsqueeze of the weights; the mask's nodes where there is one."""
    mask = r.extra.get("mask")
    scores = consumer(r, scored.output[0], "ReduceSum")
    if scores is None or axes_of(r, scores) != [2] or attrs(scores).get("keepdims", 1) != 0:
        return None
    chain, value = [scores], scores.output[0]
    if mask is not None:
        where = consumer(r, value, "Where")
        if where is None or list(where.input[:2]) != [mask, value] \
                or scalar(r, where.input[2]) != float(np.float32(LEFT_OUT)):
            return None
        chain, value = chain + [where], where.output[0]
    softmax = consumer(r, value, "Softmax")
    if softmax is None or attrs(softmax).get("axis") != 1:
        return None
    chain, value = chain + [softmax], softmax.output[0]
    if mask is not None:
        times = consumer(r, value, "Mul")
        real = producer(r, other_input(times, value), "Cast") if times is not None else None
        if real is None or real.input[0] != mask or attrs(real).get("to") != TensorProto.FLOAT:
            return None
        chain, value = chain + [real, times], times.output[0]
    spread = consumer(r, value, "Unsqueeze")
    if spread is None or axes_of(r, spread) != [2]:
        return None
    return chain + [spread]


# -- the real steps first -----------------------------------------------------------------------------
PLACES_FORM = ("a masked series' places are Where(mask, CumSum(Cast(mask, int64), exclusive), "
               "CumSum(Cast(Not(mask), int64), exclusive) + ReduceSum(Cast(mask, int64)))")


@dataclass
class RealFirst:
    """The nodes putting a masked series' real steps first, read: `places` (where each step goes),
    `order` (which step goes to each place, when written) and the nodes making them."""

    places: str
    nodes: list[onnx.NodeProto]
    order: str | None = None


def _exclusive_sum(r: Reading, name: str) -> onnx.NodeProto | None:
    """CumSum(v, axis 1, exclusive=1) making `name`."""
    node = producer(r, name, "CumSum")
    if node is None or scalar(r, node.input[1]) != 1 or attrs(node).get("exclusive", 0) != 1 \
            or attrs(node).get("reverse", 0) != 0:
        return None
    return node


def _int64_of(r: Reading, name: str) -> onnx.NodeProto | None:
    cast = producer(r, name, "Cast")
    return cast if cast is not None and attrs(cast).get("to") == TensorProto.INT64 else None


def read_places(r: Reading, node: onnx.NodeProto, places: str) -> RealFirst:
    """The nodes making `places` from the series' mask (see PLACES_FORM); `node` is the node
    reading them, named if they are not."""
    mask = r.extra.get("mask")
    where = producer(r, places, "Where")
    after = producer(r, where.input[2], "Add") if where is not None else None
    real_before = _exclusive_sum(r, where.input[1]) if where is not None else None
    real = _int64_of(r, real_before.input[0]) if real_before is not None else None
    count = producer(r, after.input[1], "ReduceSum") if after is not None else None
    padded_before = _exclusive_sum(r, after.input[0]) if after is not None else None
    padded = _int64_of(r, padded_before.input[0]) if padded_before is not None else None
    padding = producer(r, padded.input[0], "Not") if padded is not None else None
    if mask is None or padding is None or count is None or real is None \
            or where.input[0] != mask or real.input[0] != mask or padding.input[0] != mask \
            or count.input[0] != real.output[0] or axes_of(r, count) != [1] \
            or attrs(count).get("keepdims", 1) != 1:
        raise r.unreadable(node, PLACES_FORM + ", the mask being the one the series carries")
    return RealFirst(places, [real, padding, padded, real_before, padded_before, count, after,
                              where])


def read_order(r: Reading, node: onnx.NodeProto, order: str) -> RealFirst:
    """The nodes making `order` = ScatterElements(places, places, real_before + padded_before)."""
    scatter = producer(r, order, "ScatterElements")
    if scatter is None or len(scatter.input) != 3 or attrs(scatter).get("axis") != 1 \
            or scatter.input[0] != scatter.input[1] or attrs(scatter).get("reduction", "none") \
            not in ("none", b"none"):
        raise r.unreadable(node, "a masked series' order is ScatterElements(places, places, "
                                 "position) on the steps axis")
    found = read_places(r, node, scatter.input[0])
    real_before, padded_before = found.nodes[3], found.nodes[4]
    position = producer(r, scatter.input[2], "Add")
    if position is None or list(position.input) != [real_before.output[0],
                                                     padded_before.output[0]]:
        raise r.unreadable(node, "a masked series' position is the sum of its exclusive counts "
                                 "of real and padded steps")
    return RealFirst(found.places, found.nodes + [position, scatter], order)


def read_along_steps(r: Reading, gather: onnx.NodeProto) -> tuple[str, list[onnx.NodeProto]]:
    """GatherND(x, Unsqueeze(index, [2]), batch_dims=1): (index, nodes)."""
    column = producer(r, gather.input[1], "Unsqueeze") if len(gather.input) == 2 else None
    if column is None or attrs(gather).get("batch_dims", 0) != 1 or axes_of(r, column) != [2]:
        raise r.unreadable(gather, "a series reordered along its steps is GatherND(x, "
                                   "Unsqueeze(index, [2]), batch_dims=1)")
    return column.input[0], [column, gather]
