"""The compositions over a series' free length (`deepsharp_export_onnx.compositions`) read back:
the value is read by the composition's Shape and by its first computing node, so a fork reader
finds it, rebuilds the composition the writer would write for the layer its constants name, and
takes it only when every node and constant is the same."""

from __future__ import annotations

from typing import Callable

import onnx
from onnx import numpy_helper

from deepsharp.layers.base import LayerSpec
from deepsharp_export_onnx.compositions import adaptive_pool_over_length, resize_over_length
from deepsharp_export_onnx.graph import Tape
from deepsharp_export_onnx.write.nodes import Emit
from deepsharp_export_onnx.read.readers.base import Read, Reading, reads_fork
from deepsharp_export_onnx.read.readers.windows import spec_of

# layer kind -> (the composition for the value read, the layer), from the graph's own constants
Rebuild = Callable[[Emit, Reading, onnx.NodeProto], tuple[str, LayerSpec] | None]

_COORDINATES = {("nearest", "asymmetric"): ("nearest", False),
                ("linear", "half_pixel"): ("bilinear", False),
                ("linear", "align_corners"): ("bilinear", True)}


def _size(r: Reading, base: str) -> int | None:
    size = r.view.constant(f"{base}/size")
    return None if size is None or size.size != 1 else int(size.reshape(-1)[0])


def _adaptive(average: bool) -> Rebuild:
    kind = "adaptive_avg_pool" if average else "adaptive_max_pool"

    def rebuild(emit: Emit, r: Reading, shape: onnx.NodeProto):
        size = _size(r, emit.name)
        if size is None or size < 1:
            return None
        y = adaptive_pool_over_length(emit, r.value, size, average)
        return y, spec_of(shape, r, kind, size=size)

    return rebuild


def _upsample(emit: Emit, r: Reading, shape: onnx.NodeProto):
    size = _size(r, emit.name)
    resize = next((n for n in r.view.nodes if n.name == emit.name and n.op_type == "Resize"), None)
    if size is None or resize is None:
        return None
    attrs = r.view.attrs(resize)
    found = _COORDINATES.get((attrs.get("mode"), attrs.get("coordinate_transformation_mode")))
    if found is None:
        return None
    coordinates = {k: attrs[k] for k in ("mode", "coordinate_transformation_mode", "nearest_mode")
                   if k in attrs}
    y = resize_over_length(emit, r.value, size, coordinates)
    return y, spec_of(resize, r, "upsample", size=size, mode=found[0], align_corners=found[1])


_REBUILDS: dict[str, Rebuild] = {"adaptive_avg_pool": _adaptive(True),
                                 "adaptive_max_pool": _adaptive(False), "upsample": _upsample}


@reads_fork
def read_length_composition(nodes: list[onnx.NodeProto], r: Reading) -> Read | None:
    shape = next((n for n in nodes if n.op_type == "Shape" and n.name.endswith("/shape")), None)
    if shape is None or len(nodes) != 2:
        return None
    base = shape.name[:-len("/shape")]
    rebuild = _REBUILDS.get(base.rsplit(".", 1)[-1])
    if rebuild is None:
        return None
    tape = Tape()
    built = rebuild(Emit(tape, base), r, shape)
    found = _same_nodes(r, tape, built[0]) if built is not None else None
    if found is None:
        raise r.unreadable(shape, f"the nodes named {base!r} are not the composition the exporter "
                                  f"writes for {base.rsplit('.', 1)[-1]} over a series' length")
    return Read(built[0], found, [built[1]], [{}])


def _same_nodes(r: Reading, tape: Tape, y: str) -> list[onnx.NodeProto] | None:
    """The graph's nodes, when they are exactly the composition on `tape` (for its opset)."""
    tape.annotate(r.value, ())
    tape.annotate(y, ())
    expected = tape.to_model([r.value], [y], opset=r.view.opset)
    by_name = {n.name: n for n in r.view.nodes}
    found = []
    for node in expected.graph.node:
        actual = by_name.get(node.name)
        if actual is None or actual.SerializeToString() != node.SerializeToString():
            return None
        found.append(actual)
    for tensor in expected.graph.initializer:
        actual = r.view.constant(tensor.name)
        want = numpy_helper.to_array(tensor)
        if actual is None or actual.shape != want.shape or actual.dtype != want.dtype or (
                actual.tobytes() != want.tobytes()):
            return None
    return found
