"""Poolings: max_pool -> MaxPool, avg_pool -> AveragePool (channels-first); global pools ->
GlobalAveragePool/GlobalMaxPool or a ReduceMean/ReduceMax over the places (in either order);
adaptive pools -> a pool whose window is the bin where every bin is as wide, else the exact
composition: the places in one row, a product by the bins' averaging matrix (average) or a
gather of every bin's places and a ReduceMax (max), then the bins laid out again. Over a series'
free length, the bins are worked out in the graph (`compositions`)."""

from __future__ import annotations

import numpy as np

from deepsharp.layers.pool import AdaptivePoolStep, GlobalPoolStep, PoolStep
from deepsharp.tensors.ops.pool import adaptive_avg_flat_matrix, adaptive_max_flat_table
from deepsharp_export_onnx.compositions import adaptive_pool_over_length
from deepsharp_export_onnx.nodes import Emit
from deepsharp_export_onnx.values import Value
from deepsharp_export_onnx.writers.base import Writing, writes
from deepsharp_export_onnx.writers.windows import border, ints, window_dims
from layout import Order


@writes(PoolStep, order=Order.CHANNELS_FIRST)
def write_pool(step: PoolStep, x: Value, w: Writing) -> Value:
    spec = step.spec
    kernel, strides, dilations = spec.kernel_size, spec.strides, spec.dilations
    primitive = spec.attrs()
    places = x.dims[2:]
    attrs = {"kernel_shape": ints(kernel), "strides": ints(strides),
             **border(primitive["pads"], primitive["auto_pad"], places, kernel, strides, dilations)}
    if spec.primitive == "max_pool":
        op = "MaxPool"
        if any(d != 1 for d in dilations):  # an attribute of MaxPool from set 10 only
            attrs["dilations"] = ints(dilations)
    else:
        op = "AveragePool"
        attrs["count_include_pad"] = int(spec.count_include_pad)
    y = w.node(op, [x.name], attrs)
    return w.value(y, (x.dims[0], x.dims[1], *window_dims(w, places, attrs, kernel, strides,
                                                          dilations)), x)


_GLOBAL = {"mean": ("GlobalAveragePool", "ReduceMean"), "max": ("GlobalMaxPool", "ReduceMax")}


@writes(GlobalPoolStep, order=None)
def write_global_pool(step: GlobalPoolStep, x: Value, w: Writing) -> Value:
    whole, reduce = _GLOBAL[step.spec.primitive]
    first = x.order is Order.CHANNELS_FIRST
    channel = 1 if first else x.rank - 1
    keep = step.spec.keep_axes
    if keep:
        dims = tuple(d if i in (0, channel) else 1 for i, d in enumerate(x.dims))
        if first:
            return w.value(w.node(whole, [x.name]), dims, x)
    else:
        dims = (x.dims[0], x.dims[channel])
    axes = [i for i in range(1, x.rank) if i != channel]
    y = w.node(reduce, [x.name], {"axes": axes, "keepdims": int(keep)})
    return w.value(y, dims, x, order=x.order if keep else Order.CHANNELS_LAST)


@writes(AdaptivePoolStep, order=Order.CHANNELS_FIRST)
def write_adaptive_pool(step: AdaptivePoolStep, x: Value, w: Writing) -> Value:
    places, sizes = x.dims[2:], tuple(step.output_shape)[:-1]
    dims = (x.dims[0], x.dims[1], *sizes)
    average = step.spec.primitive == "adaptive_avg_pool"
    if any(not isinstance(n, int) for n in places):
        if len(places) != 1:
            raise w.refuse(f"an adaptive pooling over places {places}: only a series' length is "
                           f"left free")
        y = adaptive_pool_over_length(Emit(w.tape, w.base), x.name, sizes[0], average)
        return w.value(y, dims, x)
    if all(n % s == 0 for n, s in zip(places, sizes)):
        window = [n // s for n, s in zip(places, sizes)]
        attrs = {"kernel_shape": window, "strides": window, "pads": [0] * (2 * len(window))}
        if average:
            attrs["count_include_pad"] = 0
        y = w.node("AveragePool" if average else "MaxPool", [x.name], attrs)
        return w.value(y, dims, x)
    channels = x.dims[1]
    row = w.node("Reshape", [x.name, w.constant("row_shape", [0, channels, -1])], suffix="row")
    w.value(row, (x.dims[0], channels, int(np.prod(places))), x)
    if average:
        matrix = adaptive_avg_flat_matrix(places, sizes, np.float32)
        pooled = w.node("MatMul", [row, w.constant("bins_matrix", matrix, np.float32)],
                        suffix="bins")
    else:
        table = adaptive_max_flat_table(places, sizes)
        gathered = w.node("Gather", [row, w.constant("bins_table", table)], {"axis": 2},
                          suffix="bins")
        w.value(gathered, (x.dims[0], channels, *table.shape), x)
        pooled = w.node("ReduceMax", [gathered], {"axes": [3], "keepdims": 0}, suffix="max")
    w.value(pooled, (x.dims[0], channels, int(np.prod(sizes))), x)
    y = w.node("Reshape", [pooled, w.constant("bins_shape", [0, channels, *sizes])])
    return w.value(y, dims, x)
