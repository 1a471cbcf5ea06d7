"""Poolings: max_pool -> MaxPool, avg_pool -> AveragePool (channels-first); global pools ->
GlobalAveragePool/GlobalMaxPool or a ReduceMean/ReduceMax over the places (in either order);
adaptive pools -> a pool whose window is the bin where every bin is as wide, else the exact
composition: the places in one row, a product by the bins' averaging matrix (average) or a
gather of every bin's places and a ReduceMax (max), then the bins laid out again. Over a series'
free length, the bins are worked out in the graph (`compositions`). Over a masked series, the
global pools and attention pooling are written with the mask (`masked_nodes`); the windowed and
adaptive pools are refused by the exporter, by the step's own `mask_refusal`."""

from __future__ import annotations

from onnx import helper

from deepsharp.layers.attention_pool import AttentionPoolStep
from deepsharp.layers.pool import AdaptivePoolStep, GlobalPoolStep, PoolStep
from deepsharp_export_onnx.compositions import adaptive_pool_over_length
from deepsharp_export_onnx.write.masked_nodes import (
    attention_pool_nodes, masked_max_nodes, masked_mean_nodes,
)
from deepsharp_export_onnx.write.nodes import Emit
from deepsharp_export_onnx.write.spatial_nodes import adaptive_pool_nodes, pool_node_form
from deepsharp_export_onnx.write.vocabulary_nodes import counted_mean
from deepsharp_export_onnx.values import Value
from deepsharp_export_onnx.write.writers.base import Writing, writes
from deepsharp_export_onnx.write.writers.windows import window_dims
from layout import Order


@writes(PoolStep, order=Order.CHANNELS_FIRST)
def write_pool(step: PoolStep, x: Value, w: Writing) -> Value:
    spec = step.spec
    places = x.dims[2:]
    op, attrs = pool_node_form(spec.primitive, spec.attrs(), places)
    y = w.node(op, [x.name], attrs)
    return w.value(y, (x.dims[0], x.dims[1], *window_dims(w, places, attrs, spec.kernel_size,
                                                          spec.strides, spec.dilations)), x)


_GLOBAL = {"mean": ("GlobalAveragePool", "ReduceMean"), "max": ("GlobalMaxPool", "ReduceMax")}


@writes(GlobalPoolStep, order=None)
def write_global_pool(step: GlobalPoolStep, x: Value, w: Writing) -> Value:
    if x.mask is not None:
        return _write_masked_global_pool(step, x, w)
    whole, reduce = _GLOBAL[step.spec.primitive]
    first = x.order is Order.CHANNELS_FIRST
    channel = 1 if first else x.rank - 1
    keep = step.spec.keep_axes
    axes = [i for i in range(1, x.rank) if i != channel]
    free = reduce == "ReduceMean" and any(isinstance(x.dims[a], str) for a in axes)
    if keep:
        dims = tuple(d if i in (0, channel) else 1 for i, d in enumerate(x.dims))
        if first and not free:
            return w.value(w.node(whole, [x.name]), dims, x)
    else:
        dims = (x.dims[0], x.dims[channel])
    y = (_mean_over_free_places(w, x, axes, int(keep)) if free
         else w.node(reduce, [x.name], {"axes": axes, "keepdims": int(keep)}))
    return w.value(y, dims, x, order=x.order if keep else Order.CHANNELS_LAST)


def _mean_over_free_places(w: Writing, x: Value, axes: list[int], keep: int) -> str:
    """The mean over places that include a series' free length: the sum over their count read
    from the shape (the traced mean's form, `counted_mean`), so that a series of no steps gives
    NaN (0 / 0), as the network does (numpy's mean), where ONNX Runtime's ReduceMean and
    GlobalAveragePool give 0."""
    return counted_mean(w.emit(), x.name, axes, keep, x.rank,
                        helper.tensor_dtype_to_np_dtype(x.elem_type))


def _write_masked_global_pool(step: GlobalPoolStep, x: Value, w: Writing) -> Value:
    """Over the real steps of a masked series only (`masked_nodes`)."""
    x = w.turn(x, Order.CHANNELS_LAST)
    keep = int(step.spec.keep_axes)
    nodes = masked_mean_nodes if step.spec.primitive == "mean" else masked_max_nodes
    y = nodes(Emit(w.tape, w.base), x.name, x.mask, keep)
    dims = (x.dims[0], 1, x.dims[2]) if keep else (x.dims[0], x.dims[2])
    return w.value(y, dims, x, mask=None, order=Order.CHANNELS_LAST)


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
    y = adaptive_pool_nodes(Emit(w.tape, w.base), x.name, x.dims, sizes, average, x.elem_type)
    return w.value(y, dims, x)


@writes(AttentionPoolStep)
def write_attention_pool(step: AttentionPoolStep, x: Value, w: Writing) -> Value:
    y = attention_pool_nodes(Emit(w.tape, w.base), x.name, x.mask,
                             w.slot("weight", step.weight._data))
    return w.value(y, (x.dims[0], x.dims[2]), x, mask=None)
