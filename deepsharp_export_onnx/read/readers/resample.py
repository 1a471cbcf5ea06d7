"""Pad -> pad (of the place axes, in whichever order the value is); Resize -> upsample, from
PyTorch's coordinates only (nearest: asymmetric, floor; bilinear: half_pixel or align_corners)."""

from __future__ import annotations

import numpy as np
import onnx

from deepsharp_export_onnx.read.readers.base import Read, Reading, reads
from deepsharp_export_onnx.read.readers.windows import (
    channels_first, compact, decimal32, padding_of, place_dims, spec_of,
)
from layout import Order


def _optional(node: onnx.NodeProto, r: Reading, index: int, what: str) -> np.ndarray | None:
    if index < len(node.input) and node.input[index]:
        return r.need_constant(node, index, what)
    return None


@reads("Pad")
def read_pad(node: onnx.NodeProto, r: Reading) -> Read:
    attrs = r.view.attrs(node)
    pads = attrs.get("pads")
    if pads is None:
        pads = r.need_constant(node, 1, "pads").tolist()
    value = attrs.get("value")
    if value is None:
        given = _optional(node, r, 2, "constant value")
        value = float(given.reshape(-1)[0]) if given is not None and given.size else 0.0
    if len(node.input) > 3 and node.input[3]:
        raise r.unreadable(node, "axes: the pad layer pads every place axis")
    rank = r.rank
    first = r.order is Order.CHANNELS_FIRST
    places = list(range(2, rank)) if first else list(range(1, rank - 1))
    if len(pads) != 2 * rank or any(pads[a] or pads[rank + a] for a in range(rank)
                                    if a not in places) or min(pads) < 0:
        raise r.unreadable(node, f"pads {list(pads)}: the pad layer pads the place axes {places} "
                                 f"of a rank-{rank} {r.order.value} value, by whole places")
    begins = [int(pads[a]) for a in places]
    ends = [int(pads[rank + a]) for a in places]
    mode = attrs.get("mode", "constant")
    widths = padding_of(begins + ends, len(places))
    values = {"widths": 0 if widths == "valid" else widths, "mode": mode}
    if mode == "constant":
        values["value"] = decimal32(value)
    return Read(node.output[0], [node], [spec_of(node, r, "pad", **values)], [{}])


_COORDINATES = {("nearest", "asymmetric"): ("nearest", False),
                ("linear", "half_pixel"): ("bilinear", False),
                ("linear", "align_corners"): ("bilinear", True)}


@reads("Resize")
def read_resize(node: onnx.NodeProto, r: Reading) -> Read:
    channels_first(node, r)
    attrs = r.view.attrs(node)
    coordinates = (attrs.get("mode", "nearest"),
                   attrs.get("coordinate_transformation_mode", "half_pixel"))
    found = _COORDINATES.get(coordinates)
    if found is None or (found[0] == "nearest" and attrs.get("nearest_mode") != "floor"):
        raise r.unreadable(node, f"mode {coordinates[0]!r} with {coordinates[1]!r} coordinates "
                                 f"(nearest_mode {attrs.get('nearest_mode')!r}); upsample reads "
                                 f"PyTorch's: nearest asymmetric floor, linear half_pixel or "
                                 f"align_corners")
    mode, corners = found
    scales = _optional(node, r, 2, "scales")
    values = {"mode": mode, "align_corners": corners}
    if scales is None or not scales.size:
        raise r.unreadable(node, "upsample reads Resize by scales")
    factors = scales.astype(np.float32).tolist()
    if factors[:2] != [1.0, 1.0] or min(factors[2:]) < 1:
        raise r.unreadable(node, f"scales {factors}: upsample scales the places only, up")
    if all(f == int(f) for f in factors[2:]):
        values["scale"] = compact([int(f) for f in factors[2:]])
    else:  # a size: the runtime's length floor(n scale) for the example's places
        places = place_dims(r)
        if not all(isinstance(n, int) for n in places):
            raise r.unreadable(node, f"scales {factors} of places of unknown length")
        values["size"] = compact([int(np.floor(np.float32(n) * np.float32(f)))
                                  for n, f in zip(places, factors[2:])])
    return Read(node.output[0], [node], [spec_of(node, r, "upsample", **values)], [{}])
