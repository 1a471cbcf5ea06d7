"""Shapes computed in the graph: `x.view(x.size(0), -1)` is written as Shape, Gather, Unsqueeze,
Concat and Reshape; this pass follows such integer vectors symbolically (each entry a number, an
axis of some value, or a product of entries) and writes a Reshape's shape as the constant it
stands for: an axis of the reshaped value kept in place becomes 0 (copy it), one entry left
unknown becomes -1. The nodes that computed the shape are then dead and pruned.
"""

from __future__ import annotations

from typing import NamedTuple, Union

import numpy as np
import onnx

from deepsharp_export_onnx.read.normalise.graph import Graph


class Axis(NamedTuple):
    """The size of axis `axis` of value `value`."""

    value: str
    axis: int


class Product(NamedTuple):
    factors: tuple


Entry = Union[int, Axis, Product]


class Vector(NamedTuple):
    entries: tuple[Entry, ...]
    scalar: bool = False


def _attr(node: onnx.NodeProto, name: str, default: int) -> int:
    return next((a.i for a in node.attribute if a.name == name), default)


def vectors(g: Graph) -> dict[str, Vector]:
    """Every integer vector the graph computes from shapes, symbolically."""
    found: dict[str, Vector] = {}

    def get(name: str) -> Vector | None:
        if name in found:
            return found[name]
        array = g.constant(name)
        if array is not None and array.dtype.kind in "iu" and array.ndim <= 1:
            return Vector(tuple(int(v) for v in array.reshape(-1)), array.ndim == 0)
        return None

    for node in g.nodes:
        try:
            vector = _step(g, node, get)
        except (IndexError, ValueError, TypeError):
            vector = None
        if vector is not None:
            found[node.output[0]] = vector
    return found


def _step(g: Graph, node: onnx.NodeProto, get) -> Vector | None:
    op = node.op_type
    if op == "Shape":
        dims = g.dims.get(node.input[0])
        if dims is None:
            return None
        rank = len(dims)
        start, end = _attr(node, "start", 0), _attr(node, "end", rank)
        start, end = (max(0, min(rank, i + rank if i < 0 else i)) for i in (start, end))
        return Vector(tuple(d if isinstance(d, int) else Axis(node.input[0], a)
                            for a, d in enumerate(dims) if start <= a < end))
    inputs = [get(i) if i else None for i in node.input]
    if not inputs or inputs[0] is None:
        return None
    first = inputs[0]
    if op in ("Cast", "Identity"):
        return first
    if op == "Gather" and _attr(node, "axis", 0) == 0 and inputs[1] is not None:
        picked = tuple(first.entries[i] for i in inputs[1].entries)
        return Vector(picked, inputs[1].scalar)
    if op == "Unsqueeze" and first.scalar:
        return Vector(first.entries)
    if op == "Squeeze" and len(first.entries) == 1:
        return Vector(first.entries, True)
    if op == "Reshape" and inputs[1] is not None and len(inputs[1].entries) <= 1:
        return Vector(first.entries, not inputs[1].entries)
    if op == "Concat" and all(v is not None for v in inputs):
        return Vector(tuple(e for v in inputs for e in v.entries))
    if op == "Slice" and all(v is not None for v in inputs[1:3]) and not first.scalar:
        steps = inputs[4].entries if len(inputs) > 4 and inputs[4] is not None else (1,)
        if steps != (1,) or any(not isinstance(e, int) for e in (*inputs[1].entries, *inputs[2].entries)):
            return None
        return Vector(first.entries[slice(inputs[1].entries[0], inputs[2].entries[0])])
    if op == "Mul" and inputs[1] is not None and len(first.entries) == len(inputs[1].entries) == 1:
        return Vector((_product(first.entries[0], inputs[1].entries[0]),), first.scalar)
    return None


def _product(a: Entry, b: Entry) -> Entry:
    if isinstance(a, int) and isinstance(b, int):
        return a * b
    parts = []
    for e in (a, b):
        parts += list(e.factors) if isinstance(e, Product) else [e]
    return Product(tuple(parts))


def resolve_reshapes(g: Graph) -> bool:
    """Give every Reshape whose shape is a computed vector the constant it stands for."""
    found = vectors(g)
    changed = False
    for node in g.nodes:
        if node.op_type != "Reshape" or len(node.input) < 2 or g.constant(node.input[1]) is not None:
            continue
        vector = found.get(node.input[1])
        if vector is None or vector.scalar:
            continue
        shape = _constant_shape(g, node.input[0], vector.entries)
        if shape is None:
            continue
        allowzero = _attr(node, "allowzero", 0)
        if allowzero and any(s == 0 for s in shape):
            continue  # a literal zero-size axis; copying an axis needs allowzero=0
        node.input[1] = g.add_constant(node.name or node.output[0], np.array(shape, np.int64))
        for a in list(node.attribute):
            if a.name == "allowzero":
                node.attribute.remove(a)
        changed = True
    return changed


def _constant_shape(g: Graph, data: str, entries: tuple[Entry, ...]) -> list[int] | None:
    dims = g.dims.get(data, ())
    shape: list[int | None] = []
    for i, entry in enumerate(entries):
        shape.append(_entry_value(g, data, dims, i, entry))
    unknown = [i for i, s in enumerate(shape) if s is None]
    if len(unknown) > 1 or (unknown and -1 in shape):
        return None
    for i in unknown:
        shape[i] = -1
    return shape  # type: ignore[return-value]


def _entry_value(g: Graph, data: str, dims: tuple, i: int, entry: Entry) -> int | None:
    if isinstance(entry, int):
        return entry
    if isinstance(entry, Axis):
        sizes = g.dims.get(entry.value) or ()
        size = sizes[entry.axis] if 0 <= entry.axis < len(sizes) else None
        if isinstance(size, int):
            return size
        same_axis = entry.value == data and entry.axis == i
        same_symbol = 0 <= i < len(dims) and isinstance(size, str) and dims[i] == size
        return 0 if same_axis or same_symbol else None
    sizes = [_entry_value(g, data, (), -1, f) for f in entry.factors]
    if all(isinstance(s, int) and s > 0 for s in sizes):
        return int(np.prod(sizes))
    return None
