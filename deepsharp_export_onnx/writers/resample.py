"""pad -> Pad (in whichever order the value is: only the place axes are padded); upsample ->
Resize (channels-first) with PyTorch's coordinates: nearest as "asymmetric" with "floor",
bilinear as "half_pixel" (or "align_corners")."""

from __future__ import annotations

import numpy as np

from deepsharp.layers.resample import PadStep, UpsampleStep
from deepsharp_export_onnx.values import Value
from deepsharp_export_onnx.writers.base import Writing, writes
from deepsharp_export_onnx.writers.windows import fresh
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
    attrs = {"mode": spec.mode, "pads": pads}
    if spec.mode == "constant":
        attrs["value"] = float(spec.value)
    return w.value(w.node("Pad", [x.name], attrs), tuple(dims), x)


@writes(UpsampleStep, order=Order.CHANNELS_FIRST)
def write_upsample(step: UpsampleStep, x: Value, w: Writing) -> Value:
    spec = step.spec
    places = x.dims[2:]
    fixed = all(isinstance(n, int) for n in places)
    if spec.scale is not None:
        factors = [int(f) for f in spec.sizes((1,) * len(places))]
    elif fixed and all(s % n == 0 for s, n in zip(spec.sizes(places), places)):
        factors = [s // n for s, n in zip(spec.sizes(places), places)]
    else:
        factors = None
    attrs = _coordinates(spec)
    if factors is not None:
        scales = w.constant("scales", [1.0, 1.0, *factors], np.float32)
        y = w.node("Resize", [x.name, w.constant("roi", [], np.float32), scales], attrs)
        out = [n * f if isinstance(n, int) else (n if f == 1 else fresh(w, n))
               for n, f in zip(places, factors)]
    else:  # sizes of the place axes only (Resize's `axes`, operator set 18)
        sizes = w.constant("sizes", list(spec.sizes(places)))
        attrs["axes"] = list(range(2, x.rank))
        y = w.node("Resize", [x.name, "", "", sizes], attrs)
        out = list(spec.sizes(places))
    return w.value(y, (x.dims[0], x.dims[1], *out), x)


def _coordinates(spec) -> dict:
    if spec.mode == "nearest":
        return {"mode": "nearest", "coordinate_transformation_mode": "asymmetric",
                "nearest_mode": "floor"}
    return {"mode": "linear", "coordinate_transformation_mode":
            "align_corners" if spec.align_corners else "half_pixel"}
