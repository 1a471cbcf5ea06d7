"""Runs of steps a network runs as one fused primitive, with the same numbers.

`run_steps(steps, flow)` calls each step in turn, except where three steps make a pattern a fused
primitive computes in less work:

- conv1d/2d/3d -> relu -> max_pool1d/2d/3d runs as `conv_relu_max_pool` when the convolution has
  stride 1, dilation 1 and one group, and the pool's windows lie side by side (stride = window)
  with no border and no dilation.
- dense (with a bias) -> relu runs as `matmul_add_relu`.

The steps, their places, their parameters and what a writer exports stay as they are: only the
eager run changes. A pass a tracer records is never fused (the graph holds the three nodes), and
neither is a series with a mask.
"""

from __future__ import annotations

from typing import Any, Sequence

from deepsharp.layers.base import Flow, Step
from deepsharp.tensors import apply, modes
from deepsharp.tensors.ops.windows import NOTSET, resolve_pads

CONVS = {"conv1d": 1, "conv2d": 2, "conv3d": 3}
POOLS = {"max_pool1d": 1, "max_pool2d": 2, "max_pool3d": 3}


def conv_relu_pool_attrs(steps: Sequence[Step], lengths: tuple[int, ...]) -> dict[str, Any] | None:
    """The fused primitive's attributes when `steps` are a conv, a relu and a max pool it can run
    for places of `lengths`; None otherwise."""
    conv, relu, pool = steps
    places = CONVS.get(conv.kind)
    if places is None or relu.kind != "relu" or POOLS.get(pool.kind) != places:
        return None
    c, p = conv.spec, pool.spec
    if len(lengths) != places:
        return None
    if set(c.strides) != {1} or set(c.dilations) != {1} or c.groups != 1:
        return None
    pool_attrs = p.attrs()
    window = tuple(pool_attrs["kernel"])
    if (tuple(pool_attrs["strides"]) != window or set(pool_attrs["dilations"]) != {1}
            or pool_attrs["auto_pad"] != NOTSET or any(pool_attrs["pads"])):
        return None
    attrs = c.attrs()
    pads = resolve_pads(lengths, c.kernel_size, c.strides, c.dilations, attrs["pads"],
                        attrs["auto_pad"])
    nd = len(lengths)
    spans = [n + pads[i] + pads[nd + i] - k + 1 for i, (n, k) in enumerate(zip(lengths, c.kernel_size))]
    if any(span < w for span, w in zip(spans, window)):
        return None  # the unfused steps say what does not fit
    return {"pads": pads, "pool": window}


def dense_relu(steps: Sequence[Step], x) -> bool:
    """Whether `steps` are a dense layer with a bias and a relu that `matmul_add_relu` can run on x
    (what the dense layer alone would run as `matmul_add`)."""
    dense, relu = steps
    return dense.kind == "dense" and dense.spec.bias and relu.kind == "relu" and x.ndim >= 2


def run_steps(steps: Sequence[Step], flow: Flow) -> Flow:
    """Each step's `call` in turn, a fusable run of two or three steps as one primitive."""
    fuse = modes.may_fuse()
    i = 0
    while i < len(steps):
        if (fuse and flow.mask is None and i + 1 < len(steps)
                and dense_relu(steps[i:i + 2], flow.value)):
            dense = steps[i]
            flow = Flow(apply("matmul_add_relu", flow.value, dense.weight, dense.bias))
            i += 2
            continue
        if fuse and flow.mask is None and i + 2 < len(steps) and steps[i].kind in CONVS:
            attrs = conv_relu_pool_attrs(steps[i:i + 3], flow.value.shape[1:-1])
            if attrs is not None:
                flow = Flow(apply("conv_relu_max_pool", *steps[i].inputs(flow.value), **attrs))
                i += 3
                continue
        flow = steps[i].call(flow)
        i += 1
    return flow
