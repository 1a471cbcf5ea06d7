"""Shapes computed in the graph: `x.view(x.size(0), -1)` is written as Shape, Gather, Unsqueeze,
Concat and Reshape; this pass follows such integer vectors symbolically (each entry a number, an
axis of some value, or a product of entries) and writes a Reshape's shape as the constant it
stands for: an axis of the reshaped value kept in place becomes 0 (copy it), one entry left
unknown becomes -1. The nodes that computed the shape are then dead and pruned.

It also gives one form to a turn of the last two axes written through three dimensions
(PyTorch's torch.export writes `k.transpose(-2, -1)` of a rank-4 value so): Reshape to
[-1, a, b] of a value whose last two axes are a and b, Transpose [0, 2, 1], Reshape back to the
leading axes then b, a. That is exactly the Transpose swapping the last two axes.

And a Shape is read as late as it can be: Shape(x) of the axes a projection keeps (MatMul by a
constant matrix, all but the last; an Add of a constant that grows no axis, all) reads the
projection's output instead when that is x's only reader but Shapes, so a pattern reader that
starts at the projection's output finds the shape computations inside what it reads.
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
        return _vector(g, found, name)

    for node in g.nodes:
        try:
            vector = _step(g, node, get)
        except (IndexError, ValueError, TypeError):
            vector = None
        if vector is not None:
            found[node.output[0]] = vector
    return found


def _vector(g: Graph, found: dict[str, Vector], name: str) -> Vector | None:
    """The vector `name` holds: one computed from shapes, or an integer constant."""
    if name in found:
        return found[name]
    array = g.constant(name)
    if array is not None and array.dtype.kind in "iu" and array.ndim <= 1:
        return Vector(tuple(int(v) for v in array.reshape(-1)), array.ndim == 0)
    return None


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
        if _attr(node, "allowzero", 0) and any(_entry_value(g, "", (), -1, e) == 0
                                                for e in vector.entries):
            continue  # a literal zero-size axis; copying an axis (0) needs allowzero=0
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


def transposes_through_reshapes(g: Graph) -> bool:
    """Reshape [-1, a, b] -> Transpose [0, 2, 1] -> Reshape [..., b, a] becomes one Transpose."""
    found = vectors(g)
    changed = False
    for first in list(g.nodes):
        swap = _swap_through_reshapes(g, found, first)
        if swap is not None:
            turn, last, rank = swap
            perm = [*range(rank - 2), rank - 1, rank - 2]
            g.replace([first, turn, last], g.make("Transpose", [first.input[0]], list(last.output),
                                                  last.name, perm=perm))
            changed = True
    return changed


def _swap_through_reshapes(g: Graph, found: dict, first: onnx.NodeProto):
    """(the Transpose, the last Reshape, the rank) when `first` starts such a turn, else None."""
    if first.op_type != "Reshape" or len(first.input) < 2:
        return None
    data, dims = first.input[0], g.dims.get(first.input[0])
    turn = g.only_reader(first.output[0], "Transpose")
    last = g.only_reader(turn.output[0], "Reshape") if turn is not None else None
    if dims is None or len(dims) < 3 or last is None or len(last.input) < 2 \
            or list(next((a.ints for a in turn.attribute if a.name == "perm"), [])) != [0, 2, 1]:
        return None
    rank, into, back = len(dims), _vector(g, found, first.input[1]), _vector(g, found, last.input[1])
    if into is None or back is None or into.scalar or back.scalar or len(into.entries) != 3 \
            or len(back.entries) != rank or into.entries[0] != -1:
        return None
    order = [*range(rank - 2), rank - 1, rank - 2]
    same = [_is_axis(g, data, dims, a, e) for a, e in zip([rank - 2, rank - 1], into.entries[1:])]
    kept = [_is_axis(g, data, dims, a, e) for a, e in zip(order, back.entries)]
    if not all(same) or kept.count(False) > 1 \
            or (False in kept and back.entries[kept.index(False)] != -1):
        return None  # one leading -1 is what the others leave: the same size
    return turn, last, rank


def _is_axis(g: Graph, data: str, dims: tuple, axis: int, entry: Entry) -> bool:
    """Whether `entry` is the size of axis `axis` of `data` (of dims `dims`)."""
    if entry == Axis(data, axis):
        return True
    if isinstance(entry, int):
        return isinstance(dims[axis], int) and dims[axis] == entry and entry > 0
    if isinstance(entry, Axis):
        sizes = g.dims.get(entry.value) or ()
        size = sizes[entry.axis] if 0 <= entry.axis < len(sizes) else None
        return size is not None and size == dims[axis]  # None: unknown
    return False


def late_shapes(g: Graph) -> bool:
    """Shape(x) -> Shape(y), y the one non-Shape reader's output, where y keeps the axes read."""
    changed = False
    for node in list(g.nodes):
        if node.op_type != "Shape" or not node.input:
            continue
        later = _keeping_reader(g, node)
        while later is not None:
            node.input[0] = later.output[0]
            changed = True
            later = _keeping_reader(g, node)
    if changed:
        g.sort()
    return changed


def _keeping_reader(g: Graph, shape: onnx.NodeProto) -> onnx.NodeProto | None:
    x = shape.input[0]
    dims, readers = g.dims.get(x), [n for n in g.consumers(x) if n.op_type != "Shape"]
    if dims is None or len(readers) != 1 or g.is_output(x) or readers[0].input[0] != x:
        return None
    reader, rank = readers[0], len(dims)
    end = _attr(shape, "end", rank)
    end = max(0, min(rank, end + rank if end < 0 else end))  # the axes read end before it
    other = g.constant(reader.input[1]) if len(reader.input) == 2 else None
    if other is None or g.dims.get(reader.output[0]) is None:
        return None
    if reader.op_type == "MatMul" and other.ndim == 2 and rank >= 2 and end <= rank - 1:
        return reader
    grows = other.ndim > rank or any(s != 1 and (not isinstance(d, int) or d != s)
                                     for s, d in zip(other.shape[::-1], dims[::-1]))
    return reader if reader.op_type == "Add" and not grows else None


ANCESTORS = 64  # values searched back from a reshaped value for the sizes its shape names


def near_shapes(g: Graph) -> bool:
    """A Reshape whose computed shape names sizes read off distant values (torch.export reads the
    batch and the steps once, at the input, for every layer's reshapes) reads each off the
    nearest value it is computed from that holds that size (the same symbol), so that the shape
    computation lies inside what a pattern reader starting anywhere before the Reshape reads."""
    found, made = vectors(g), {o: n for n in g.nodes for o in n.output if o}
    changed = False
    for node in list(g.nodes):
        if node.op_type != "Reshape" or len(node.input) < 2 or g.constant(node.input[1]) is not None:
            continue
        vector = found.get(node.input[1])
        if vector is None or vector.scalar:
            continue
        near = _near_entries(g, made, node.input[0], vector.entries)
        if near is not None and near != vector.entries:
            node.input[1] = _write_vector(g, node, near)
            changed = True
    if changed:
        g.sort()
    return changed


def _near_entries(g: Graph, made: dict, data: str, entries: tuple) -> tuple | None:
    """The entries with each Axis read off the nearest ancestor of `data` of the same size."""
    def near(entry: Entry) -> Entry | None:
        if isinstance(entry, int):
            return entry
        if isinstance(entry, Product):
            factors = tuple(near(f) for f in entry.factors)
            return None if None in factors else Product(factors)
        sizes = g.dims.get(entry.value) or ()
        symbol = sizes[entry.axis] if 0 <= entry.axis < len(sizes) else None
        return _nearest_axis(g, made, data, symbol) if isinstance(symbol, str) else None

    found = tuple(near(e) for e in entries)
    return None if None in found else found


def _nearest_axis(g: Graph, made: dict, data: str, symbol: str) -> Axis | None:
    seen, queue = {data}, [data]
    while queue and len(seen) <= ANCESTORS:
        value = queue.pop(0)
        dims = g.dims.get(value) or ()
        if symbol in dims:
            return Axis(value, list(dims).index(symbol))
        producer = made.get(value)
        for name in producer.input if producer is not None else ():
            if name and name not in seen and g.constant(name) is None:
                seen.add(name)
                queue.append(name)
    return None


def _write_vector(g: Graph, node: onnx.NodeProto, entries: tuple) -> str:
    """Nodes computing `entries` (Shape, Gather, Mul, Concat) before `node`; the vector's name."""
    base, made, shapes = node.name or node.output[0], [], {}

    def one(entry: Entry) -> str:
        if isinstance(entry, int):
            return g.add_constant(f"{base}/size", np.array([entry], np.int64))
        if isinstance(entry, Product):
            names = [one(f) for f in entry.factors]
            while len(names) > 1:
                out = g.fresh(base)
                made.append(g.make("Mul", names[:2], [out], out))
                names = [out, *names[2:]]
            return names[0]
        if entry.value not in shapes:
            shapes[entry.value] = g.fresh(base)
            made.append(g.make("Shape", [entry.value], [shapes[entry.value]], shapes[entry.value]))
        out = g.fresh(base)
        index = g.add_constant(f"{base}/axis", np.array([entry.axis], np.int64))
        made.append(g.make("Gather", [shapes[entry.value], index], [out], out, axis=0))
        return out

    parts = [one(e) for e in entries]
    out = g.fresh(base)
    made.append(g.make("Concat", parts, [out], out, axis=0))
    at = g.nodes.index(node)
    g.nodes[at:at] = made
    return out
