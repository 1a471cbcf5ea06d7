"""pad -> Pad (in whichever order the value is: only the place axes are padded); upsample ->
Resize (channels-first, operator set 11) with PyTorch's coordinates: nearest as "asymmetric" with
"floor", bilinear as "half_pixel" (or "align_corners").

Resize is given scales: an integer factor, or for a size the float32 out / in nudged up to the
first float whose product with the length floors to the size (the runtime's rule for the output
length). A series' free length is resized to a size by sizes made from its Shape
(`compositions`).
"""

from __future__ import annotations

import numpy as np

from deepsharp.layers.resample import PadStep, UpsampleStep
from deepsharp_export_onnx.compositions import resize_over_length
from deepsharp_export_onnx.write.nodes import Emit
from deepsharp_export_onnx.write.spatial_nodes import coordinates, pad_node, resize_node, size_scale
from deepsharp_export_onnx.values import Value
from deepsharp_export_onnx.write.writers.base import Writing, writes
from deepsharp_export_onnx.write.writers.windows import fresh
from layout import Order


@writes(PadStep, order=None)
def write_pad(step: PadStep, x: Value, w: Writing) -> Value:
    spec = step.spec
    begins, ends = spec.place_pads(x.rank - 2)
    first = x.order is Order.CHANNELS_FIRST
    places = range(2, x.rank) if first else range(1, x.rank - 1)
    pads = [0] * (2 * x.rank)
    dims = list(x.dims)
    for axis, b, e in zip(places, begins, ends):
        pads[axis], pads[x.rank + axis] = b, e
        n = dims[axis]
        dims[axis] = n + b + e if isinstance(n, int) else (n if b + e == 0 else fresh(w, n))
    y = pad_node(Emit(w.tape, w.base), x.name, pads, spec.mode, spec.value)
    return w.value(y, tuple(dims), x)


@writes(UpsampleStep, order=Order.CHANNELS_FIRST)
def write_upsample(step: UpsampleStep, x: Value, w: Writing) -> Value:
    spec = step.spec
    places = x.dims[2:]
    if spec.scale is not None:
        scales = [np.float32(f) for f in spec.sizes((1,) * len(places))]
        out = [n * int(f) if isinstance(n, int) else (n if f == 1 else fresh(w, n))
               for n, f in zip(places, scales)]
    elif any(not isinstance(n, int) for n in places):
        out = list(spec.sizes(places))
        if len(places) != 1:
            raise w.refuse(f"an upsampling of places {places} to a size: only a series' length "
                           f"is left free")
        y = resize_over_length(Emit(w.tape, w.base), x.name, out[0], _coordinates(spec))
        return w.value(y, (x.dims[0], x.dims[1], *out), x)
    else:
        out = list(spec.sizes(places))
        scales = [size_scale(n, s) for n, s in zip(places, out)]
    y = resize_node(Emit(w.tape, w.base), x.name, scales, _coordinates(spec))
    return w.value(y, (x.dims[0], x.dims[1], *out), x)


def _coordinates(spec) -> dict:
    return coordinates(spec.mode == "nearest", spec.align_corners)
