"""MaxPool/AveragePool -> max_pool/avg_pool (or the adaptive pool whose bins they are);
GlobalAveragePool/GlobalMaxPool and ReduceMean/ReduceMax over the places -> global pools; the
exporter's composition of an adaptive pool with unequal bins (Reshape, then MatMul by the bins'
matrix or Gather and ReduceMax, then Reshape) -> the adaptive pool."""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx

from deepsharp.tensors.ops.pool import adaptive_avg_flat_matrix, adaptive_max_flat_table
from deepsharp_export_onnx.read.readers.base import Read, Reading, reads
from deepsharp_export_onnx.read.readers.windows import (
    border_of, channels_first, compact, int_attr_list, place_dims, spec_of, written_as,
)
from layout import Order


@reads("MaxPool", "AveragePool")
def read_pool(node: onnx.NodeProto, r: Reading) -> Read:
    channels_first(node, r)
    attrs = r.view.attrs(node)
    kernel = int_attr_list(attrs, "kernel_shape", [])
    nd = len(kernel)
    strides = int_attr_list(attrs, "strides", [1] * nd)
    dilations = int_attr_list(attrs, "dilations", [1] * nd)
    average = node.op_type == "AveragePool"
    adaptive = _adaptive_window(node, r, attrs, kernel, strides, average)
    if adaptive is not None:
        return adaptive
    values: dict[str, Any] = {"window": compact(kernel), "stride": compact(strides),
                              "padding": border_of(node, r, attrs, nd)}
    if attrs.get("ceil_mode", 0):
        values["ceil_mode"] = True
    if average:
        if any(d != 1 for d in dilations):
            raise r.unreadable(node, "dilations: avg_pool windows are not dilated")
        values["count_include_pad"] = bool(attrs.get("count_include_pad", 0))
    else:
        values["dilation"] = compact(dilations)
    kind = f"{'avg' if average else 'max'}_pool{nd}d"
    return Read(node.output[0], [node], [spec_of(node, r, kind, **values)], [{}])


def _adaptive_window(node, r: Reading, attrs, kernel, strides, average) -> Read | None:
    """An adaptive pool whose bins were all as wide, written as a pool of that window."""
    kind = "adaptive_avg_pool" if average else "adaptive_max_pool"
    if not written_as(node, kind) or kernel != strides or any(attrs.get("pads", [])):
        return None
    places = place_dims(r)
    if not all(isinstance(n, int) and n % k == 0 for n, k in zip(places, kernel)):
        return None
    sizes = [n // k for n, k in zip(places, kernel)]
    return Read(node.output[0], [node], [spec_of(node, r, kind, size=compact(sizes))], [{}])


@reads("GlobalAveragePool", "GlobalMaxPool")
def read_global_pool(node: onnx.NodeProto, r: Reading) -> Read:
    channels_first(node, r)
    kind = "global_avg_pool" if node.op_type == "GlobalAveragePool" else "global_max_pool"
    return Read(node.output[0], [node], [spec_of(node, r, kind, keep_axes=True)], [{}])


@reads("ReduceMean", "ReduceMax")
def read_reduce(node: onnx.NodeProto, r: Reading) -> Read:
    attrs = r.view.attrs(node)
    axes = attrs.get("axes")
    if axes is None and len(node.input) > 1 and node.input[1]:
        axes = r.need_constant(node, 1, "axes").tolist()
    first = r.order is Order.CHANNELS_FIRST
    places = list(range(2, r.rank)) if first else list(range(1, r.rank - 1))
    if axes is None or sorted(int(a) % r.rank for a in axes) != places or not places:
        raise r.unreadable(node, f"axes {axes} of a rank-{r.rank} {r.order.value} value: a global "
                                 f"pool reduces the place axes {places}")
    keep = bool(attrs.get("keepdims", 1))
    kind = "global_avg_pool" if node.op_type == "ReduceMean" else "global_max_pool"
    spec = spec_of(node, r, kind, keep_axes=keep)
    if keep:
        return Read(node.output[0], [node], [spec], [{}])
    return Read(node.output[0], [node], [spec], [{}], order=Order.CHANNELS_LAST, rank=2)


def read_adaptive_composition(node: onnx.NodeProto, r: Reading) -> Read:
    """Reshape (N, C, places) -> MatMul by the bins' matrix, or Gather of the bins' places and
    ReduceMax -> Reshape (N, C, *sizes): an adaptive pool with unequal bins."""
    view = r.view
    places = place_dims(r)
    if not places or not all(isinstance(n, int) for n in places):
        raise r.unreadable(node, "a Reshape of a channels-first value of unknown places")
    row = node.output[0]
    step = view.only_consumer(row)
    if step is None or step.op_type not in ("MatMul", "Gather"):
        raise r.unreadable(node, "a Reshape of a channels-first value is read only as the row of "
                                 "places of an adaptive pool (then MatMul, or Gather)")
    nodes = [node, step]
    if step.op_type == "MatMul":
        if step.input[0] != row:
            raise r.unreadable(step, "the row of places must be the first operand")
        table, kind, pooled = r.need_constant(step, 1, "bins"), "adaptive_avg_pool", step.output[0]
    else:
        reduce = view.only_consumer(step.output[0], "ReduceMax")
        if reduce is None or int(view.attrs(step).get("axis", 0)) != 2:
            raise r.unreadable(step, "an adaptive max pool gathers axis 2, then a ReduceMax")
        table, kind, pooled = r.need_constant(step, 1, "bins"), "adaptive_max_pool", reduce.output[0]
        nodes.append(reduce)
    last = view.only_consumer(pooled, "Reshape")
    if last is None:
        raise r.unreadable(step, "the bins are laid out again by a Reshape")
    shape = r.need_constant(last, 1, "shape").tolist()
    sizes = [int(s) for s in shape[2:]]
    expected = (adaptive_avg_flat_matrix(places, sizes, np.float32) if kind == "adaptive_avg_pool"
                else adaptive_max_flat_table(places, sizes))
    if len(sizes) != len(places) or table.shape != expected.shape or not np.allclose(table, expected):
        raise r.unreadable(step, f"its constant is not the bins of an adaptive pool of {places} "
                                 f"places to {sizes}")
    nodes.append(last)
    return Read(last.output[0], nodes, [spec_of(node, r, kind, size=compact(sizes))], [{}])
