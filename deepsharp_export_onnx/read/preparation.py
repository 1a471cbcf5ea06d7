"""Reading the preparation in front of a network back as the same preparation objects.

    model, prepare = split_preparation(model)   # prepare None when the graph has none

The graph's metadata (`deepsharp.preparation`) names the columns (the graph's inputs), their
form, and the kinds of their steps; the numbers come from the nodes, read by one reader per kind
(in a table) from each input, as `deepsharp_export_onnx.write.preparation` writes them. The
preparation's nodes are cut away: what is left is the network's graph, taking the prepared rows
as its one input, for the layer readers.
"""

from __future__ import annotations

import json
from typing import Callable

import numpy as np
import onnx
from onnx import TensorProto, helper

from deepsharp.errors import PreparationError
from deepsharp.preparation import (
    Chain, Column, Columns, FillMissing, IndexEncoder, MinMaxScaler, OneHot, Preparation,
    SelectColumns, Standardizer,
)
from deepsharp_export_onnx.errors import ImportRefused
from deepsharp_export_onnx.read.readers.view import GraphView
from deepsharp_export_onnx.write.preparation import META_PREPARATION


class _Unread(Exception):
    """The nodes after a value are not the step the metadata names."""


class Cursor:
    """Where a column's reading is: the graph, the current value and its width."""

    def __init__(self, view: GraphView, value: str, width: int) -> None:
        self.view, self.value, self.width = view, value, width

    def next(self, op_type: str, value: str | None = None, position: int = 0) -> onnx.NodeProto:
        """The one unread node reading `value` (the current one by default) at input `position`,
        of `op_type`; consumed."""
        value = self.value if value is None else value
        nodes = [n for n in self.view.open_consumers(value)
                 if len(n.input) > position and n.input[position] == value]
        if len(nodes) != 1 or nodes[0].op_type != op_type:
            found = ", ".join(GraphView.label(n) for n in nodes) or "no node"
            raise _Unread(f"value {value!r}: expected one {op_type} node reading it, found {found}")
        self.view.consume(nodes[0])
        return nodes[0]

    def constant(self, node: onnx.NodeProto, index: int) -> np.ndarray:
        array = self.view.constant(node.input[index]) if len(node.input) > index else None
        if array is None:
            raise _Unread(f"{GraphView.label(node)}: input {index} must be a constant")
        return array

    def cast_to_float(self, value: str) -> onnx.NodeProto:
        cast = self.next("Cast", value)
        if GraphView.attrs(cast).get("to") != TensorProto.FLOAT:
            raise _Unread(f"{GraphView.label(cast)}: must cast to float")
        return cast

    def moved(self, node: onnx.NodeProto, width: int | None = None) -> None:
        self.value = node.output[0]
        self.width = self.width if width is None else width


Reader = Callable[[Cursor], Preparation]
READERS: dict[str, Reader] = {}


def reads(kind: str) -> Callable[[Reader], Reader]:
    def register(reader: Reader) -> Reader:
        READERS[kind] = reader
        return reader
    return register


def _two_constants(c: Cursor, first: str, second: str) -> tuple[np.ndarray, np.ndarray]:
    """x -> second(first(x, a), b): the constants a and b."""
    one = c.next(first)
    two = c.next(second, one.output[0])
    c.moved(two)
    return c.constant(one, 1), c.constant(two, 1)


@reads(Standardizer.kind)
def _standardizer(c: Cursor) -> Preparation:
    return Standardizer(*_two_constants(c, "Sub", "Div"))


@reads(MinMaxScaler.kind)
def _min_max(c: Cursor) -> Preparation:
    return MinMaxScaler(*_two_constants(c, "Mul", "Add"))


@reads(FillMissing.kind)
def _fill(c: Cursor) -> Preparation:
    missing = c.next("IsNaN")
    where = c.next("Where", missing.output[0])
    if list(where.input)[2:] != [c.value]:
        raise _Unread(f"{GraphView.label(where)}: must keep {c.value!r} where it is a number")
    c.moved(where)
    return FillMissing(c.constant(where, 1))


@reads(SelectColumns.kind)
def _select(c: Cursor) -> Preparation:
    gather = c.next("Gather")
    if GraphView.attrs(gather).get("axis") != 1:
        raise _Unread(f"{GraphView.label(gather)}: must gather columns (axis 1)")
    width = c.width
    c.moved(gather, len(c.constant(gather, 1)))
    return SelectColumns(c.constant(gather, 1), width)


def _positions(c: Cursor, unknown: int | None) -> tuple[list[np.ndarray], list[str], int]:
    """Each column's categories (in position order) and position value, and the unknown's."""
    columns = []
    if c.width == 1:
        columns.append(c.value)
    else:
        gathers = [n for n in c.view.open_consumers(c.value) if n.op_type == "Gather"
                   and n.input[0] == c.value and GraphView.attrs(n).get("axis") == 1]
        gathers.sort(key=lambda n: int(c.constant(n, 1).ravel()[0]))
        if [int(c.constant(n, 1).ravel()[0]) for n in gathers] != list(range(c.width)):
            raise _Unread(f"value {c.value!r}: expected one Gather of each of its {c.width} "
                          f"columns")
        c.view.consume(*gathers)
        columns = [n.output[0] for n in gathers]
    categories, positions, defaults = [], [], set()
    for column in columns:
        encoder = c.next("LabelEncoder", column)
        attrs = GraphView.attrs(encoder)
        keys = attrs.get("keys_strings", attrs.get("keys_int64s"))
        values = attrs.get("values_int64s")
        if keys is None or values is None or sorted(values) != list(range(len(keys))):
            raise _Unread(f"{GraphView.label(encoder)}: must map each category to its position")
        keys = [k.decode() if isinstance(k, bytes) else k for k in keys]
        ordered = [None] * len(keys)
        for key, value in zip(keys, values):
            ordered[value] = key
        categories.append(np.asarray(ordered))
        positions.append(encoder.output[0])
        defaults.add(int(attrs.get("default_int64", -1)))
    if len(defaults) != 1 or (unknown is not None and defaults != {unknown}):
        raise _Unread(f"value {c.value!r}: the encoders' unknown positions {sorted(defaults)} "
                      f"must be one{'' if unknown is None else f' ({unknown})'}")
    return categories, positions, defaults.pop()


def _joined(c: Cursor, parts: list[str]) -> onnx.NodeProto | None:
    if len(parts) == 1:
        return None
    concat = c.next("Concat", parts[0])
    if list(concat.input) != parts:
        raise _Unread(f"{GraphView.label(concat)}: must join {parts} in order")
    return concat


@reads(OneHot.kind)
def _one_hot(c: Cursor) -> Preparation:
    categories, positions, _ = _positions(c, -1)
    hot = []
    for k, position in zip(categories, positions):
        equal = c.next("Equal", position)
        if not np.array_equal(c.constant(equal, 1), np.arange(len(k))):
            raise _Unread(f"{GraphView.label(equal)}: must compare with the positions 0..{len(k) - 1}")
        hot.append(c.cast_to_float(equal.output[0]).output[0])
    step = OneHot(tuple(categories))
    last = _joined(c, hot)
    c.value, c.width = (last.output[0] if last is not None else hot[0]), step.width_out
    return step


@reads(IndexEncoder.kind)
def _index(c: Cursor) -> Preparation:
    categories, positions, unknown = _positions(c, None)
    joined = _joined(c, positions)
    cast = c.cast_to_float(joined.output[0] if joined is not None else positions[0])
    c.moved(cast, len(positions))
    return IndexEncoder(tuple(categories), unknown)


def _column(view: GraphView, entry: dict, width: int) -> tuple[Column, str]:
    name, vector = str(entry["name"]), bool(entry["vector"])
    cursor = Cursor(view, name, width)
    if vector:
        cursor.moved(cursor.next("Unsqueeze"), 1)
    steps = []
    for kind in entry["steps"]:
        reader = READERS.get(kind)
        if reader is None:
            raise _Unread(f"column {name!r}: no reader for a preparation step {kind!r}; "
                          f"readable: {', '.join(sorted(READERS))}")
        steps.append(reader(cursor))
    prepare = steps[0] if len(steps) == 1 else Chain(tuple(steps))
    return Column(name, prepare, vector), cursor.value


def split_preparation(model: onnx.ModelProto) -> tuple[onnx.ModelProto, Preparation | None]:
    """(the network's graph, its preparation), or (model, None) when it has none."""
    metadata = {p.key: p.value for p in model.metadata_props}
    if META_PREPARATION not in metadata:
        return model, None
    view = GraphView(model)
    try:
        described = json.loads(metadata[META_PREPARATION])
        columns, ends = [], []
        for entry in described["columns"]:
            dims = view.dims(str(entry["name"])) or ()
            width = 1 if entry["vector"] else (dims[1] if len(dims) == 2 else None)
            if not isinstance(width, int):
                raise _Unread(f"input {entry['name']!r} must be annotated (batch, width), "
                              f"received {dims}")
            column, end = _column(view, entry, width)
            columns.append(column)
            ends.append(end)
        prepared = Columns(tuple(columns))
        joined = _joined(Cursor(view, ends[0], 0), ends)
        end = joined.output[0] if joined is not None else ends[0]
        form = described["form"]
        prepare = (prepared if form == Columns.kind else columns[0].prepare)
    except (_Unread, PreparationError, KeyError, TypeError, ValueError) as error:
        raise ImportRefused([f"metadata {META_PREPARATION}: {error}"]) from None
    return _network_part(model, view, end, prepared.width_out, metadata), prepare


def _network_part(model: onnx.ModelProto, view: GraphView, start: str, width: int,
                  metadata: dict[str, str]) -> onnx.ModelProto:
    """`model` less the preparation's nodes (and what only they read), taking `start`."""
    kept = view.unconsumed()
    read = {i for node in kept for i in node.input}
    made = {o for node in kept for o in node.output}
    part = onnx.ModelProto()
    part.CopyFrom(model)
    graph = part.graph
    del graph.node[:]
    graph.node.extend(kept)
    initializers = [t for t in model.graph.initializer if t.name in read]
    del graph.initializer[:]
    graph.initializer.extend(initializers)
    kept_inputs = [i for i in model.graph.input if i.name in {t.name for t in initializers}]
    del graph.input[:]
    graph.input.extend([helper.make_tensor_value_info(start, TensorProto.FLOAT, ["batch", width])]
                       + kept_inputs)
    infos = [v for v in model.graph.value_info if v.name in made]
    del graph.value_info[:]
    graph.value_info.extend(infos)
    del part.metadata_props[:]
    for key, value in metadata.items():
        if key != META_PREPARATION:
            part.metadata_props.add(key=key, value=value)
    return part
