"""The preparation in front of the network: one writer per preparation step type, in a table.

    x, inputs = write_preparation(tape, Columns.fit(table, {...}), "input")

Every named column is a graph input of its own element type (float32 numbers; int64 or string
categories), 1-D (batch,) or 2-D (batch, width) as it was fitted. Each column's steps are written
from it in order, a 1-D column first made (batch, 1); the columns' results are joined by one
`Concat` on the last axis, the value the network reads. A step or Chain given alone takes the one
2-D input `input`.

What each step is written as (every number float32, as numpy computes it):

    Standardizer   Sub(x, mean), Div(., std)
    MinMaxScaler   Mul(x, scale), Add(., offset)
    FillMissing    Where(IsNaN(x), values, x)
    SelectColumns  Gather(x, indices, axis=1)
    OneHot         per column: LabelEncoder (ai.onnx.ml, category -> position, unknown -> -1),
                   Cast(Equal(position, [0..k-1]), float): an unknown category matches nothing
    IndexEncoder   per column: LabelEncoder (unknown -> `unknown`), then Cast to float

A column's values are Gathered one by one (axis 1) when an encoder takes several.
"""

from __future__ import annotations

import json
from typing import Callable

import numpy as np
from onnx import TensorProto

from deepsharp.preparation import (
    Chain, Columns, FillMissing, IndexEncoder, MinMaxScaler, OneHot, Preparation, SelectColumns,
    Standardizer, as_columns,
)
from deepsharp.preparation.base import FLOAT32, INT64, STRING
from deepsharp_export_onnx.graph import Tape
from deepsharp_export_onnx.write.names import name_faults
from deepsharp_export_onnx.tables import TypeTable
from deepsharp_export_onnx.values import Value

BATCH = "batch"
PREFIX = "prepare"           # every node and constant of the preparation is named prepare.*
PREPARED = "prepare"         # the joined columns: the value the network reads
META_PREPARATION = "deepsharp.preparation"
ML = "ai.onnx.ml"
ELEM = {FLOAT32: TensorProto.FLOAT, INT64: TensorProto.INT64, STRING: TensorProto.STRING}


class Preparing:
    """What a preparation writer writes with: nodes and constants named `{base}` and
    `{base}/{suffix}`, each output annotated (batch, width)."""

    def __init__(self, tape: Tape, base: str) -> None:
        self.tape = tape
        self.base = base

    def node(self, op_type: str, inputs: list[str], width: int, *, suffix: str | None = None,
             elem: int = TensorProto.FLOAT, domain: str = "", **attrs) -> str:
        name = self.base if suffix is None else f"{self.base}/{suffix}"
        out = self.tape.op(op_type, inputs, attrs, name=name, domain=domain)
        self.tape.annotate(out, (BATCH, width), elem)
        return out

    def constant(self, label: str, values, dtype=np.float32) -> str:
        return self.tape.constant(f"{self.base}/{label}", values, dtype)


PreparationWriter = Callable[[Preparation, str, Preparing], str]
PREPARATION_WRITERS: TypeTable[PreparationWriter] = TypeTable("preparation writer")
writes_preparation = PREPARATION_WRITERS.register


@writes_preparation(Standardizer)
def _standardize(step: Standardizer, x: str, p: Preparing) -> str:
    centred = p.node("Sub", [x, p.constant("mean", step.mean)], step.width_out, suffix="centred")
    return p.node("Div", [centred, p.constant("std", step.std)], step.width_out)


@writes_preparation(MinMaxScaler)
def _min_max(step: MinMaxScaler, x: str, p: Preparing) -> str:
    scaled = p.node("Mul", [x, p.constant("scale", step.scale)], step.width_out, suffix="scaled")
    return p.node("Add", [scaled, p.constant("offset", step.offset)], step.width_out)


@writes_preparation(FillMissing)
def _fill(step: FillMissing, x: str, p: Preparing) -> str:
    missing = p.node("IsNaN", [x], step.width_out, suffix="missing", elem=TensorProto.BOOL)
    return p.node("Where", [missing, p.constant("values", step.values), x], step.width_out)


@writes_preparation(SelectColumns)
def _select(step: SelectColumns, x: str, p: Preparing) -> str:
    return p.node("Gather", [x, p.constant("indices", step.indices, np.int64)], step.width_out,
                  axis=1)


def _positions(step: OneHot | IndexEncoder, x: str, p: Preparing, unknown: int) -> list[str]:
    """Each column's category positions (batch, 1) int64, `unknown` where none matches."""
    positions = []
    for j, categories in enumerate(step.categories):
        column = x if step.width_in == 1 else p.node(
            "Gather", [x, p.constant(f"column_{j}", [j], np.int64)], 1, suffix=f"column_{j}",
            elem=ELEM[step.input_dtype], axis=1)
        keys = ({"keys_strings": [str(c) for c in categories]} if step.input_dtype == STRING
                else {"keys_int64s": [int(c) for c in categories]})
        positions.append(p.node("LabelEncoder", [column], 1, suffix=f"position_{j}",
                                elem=TensorProto.INT64, domain=ML, **keys,
                                values_int64s=list(range(len(categories))), default_int64=unknown))
    return positions


@writes_preparation(OneHot)
def _one_hot(step: OneHot, x: str, p: Preparing) -> str:
    hot = []
    for j, position in enumerate(_positions(step, x, p, -1)):
        k = len(step.categories[j])
        equal = p.node("Equal", [position, p.constant(f"positions_{j}", np.arange(k), np.int64)],
                       k, suffix=f"equal_{j}", elem=TensorProto.BOOL)
        last = len(step.categories) == 1
        hot.append(p.node("Cast", [equal], k, suffix=None if last else f"hot_{j}",
                          to=TensorProto.FLOAT))
    return hot[0] if len(hot) == 1 else p.node("Concat", hot, step.width_out, axis=1)


@writes_preparation(IndexEncoder)
def _index(step: IndexEncoder, x: str, p: Preparing) -> str:
    positions = _positions(step, x, p, step.unknown)
    if len(positions) > 1:
        positions = [p.node("Concat", positions, step.width_out, suffix="positions",
                            elem=TensorProto.INT64, axis=1)]
    return p.node("Cast", positions, step.width_out, to=TensorProto.FLOAT)


def _steps(prepare: Preparation) -> tuple[Preparation, ...]:
    return prepare.steps if isinstance(prepare, Chain) else (prepare,)


def preparation_faults(prepare: object, width: int | None) -> list[str]:
    """Why `prepare` cannot be written in front of a network taking rows of `width` features
    (None: the network does not take rows)."""
    if not isinstance(prepare, Preparation):
        return [f"prepare must be a deepsharp.preparation step, Chain or Columns, received "
                f"{prepare!r}"]
    faults = []
    if width != prepare.width_out:
        takes = f"rows of {width} features" if width is not None else "examples that are not rows"
        faults.append(f"prepare gives rows of {prepare.width_out} features; the network takes "
                      f"{takes}")
    for column in as_columns(prepare, "input").columns:
        for step in _steps(column.prepare):
            if PREPARATION_WRITERS.lookup(step) is None:
                faults.append(f"prepare: column {column.name!r}: no ONNX writer for "
                              f"{type(step).__name__}; written: {PREPARATION_WRITERS.names()}")
    return faults


def write_preparation(tape: Tape, prepare: Preparation, input_name: str) -> tuple[Value, list[str]]:
    """Write `prepare` from raw-row inputs; returns the prepared value and the inputs' names."""
    columns = as_columns(prepare, input_name)
    joined = []
    for column in columns.columns:
        step = column.prepare
        tape.owner = f"prepare (column {column.name!r})"
        dims = (BATCH,) if column.vector else (BATCH, step.width_in)
        tape.annotate(column.name, dims, ELEM[step.input_dtype])
        x = column.name
        if column.vector:
            x = Preparing(tape, f"{PREFIX}.{column.name}").node(
                "Unsqueeze", [x], 1, suffix="column", elem=ELEM[step.input_dtype], axes=[1])
        for k, part in enumerate(_steps(step)):
            x = PREPARATION_WRITERS.lookup(part)(part, x, Preparing(
                tape, f"{PREFIX}.{column.name}.{k}.{part.kind}"))
        joined.append(x)
    if len(joined) > 1:
        tape.owner = "prepare"
        joined = [tape.op("Concat", joined, {"axis": 1}, name=PREPARED)]
        tape.annotate(joined[0], (BATCH, columns.width_out))
    return Value(joined[0], (BATCH, columns.width_out)), [c.name for c in columns.columns]


def preparation_metadata(prepare: Preparation, input_name: str) -> str:
    """What the graph's nodes do not say: the columns, their order and form, the steps' kinds."""
    columns = as_columns(prepare, input_name)
    return json.dumps({
        "form": prepare.kind if isinstance(prepare, (Columns, Chain)) else "step",
        "columns": [{"name": c.name, "vector": c.vector,
                     "steps": [s.kind for s in _steps(c.prepare)]} for c in columns.columns],
    }, sort_keys=True)


def write_in_front(tape: Tape, prepare: Preparation, input_name: str) -> tuple[list[str], list[str]]:
    """Write `prepare` in front of the nodes already on `tape` (a traced network's, reading
    `input_name`): the network reads the prepared rows instead. Returns the graph's inputs and
    the names both would make (faults)."""
    front = Tape()
    x, inputs = write_preparation(front, prepare, input_name)
    made = {o for node in tape.nodes for o in node.outputs} | set(tape.initializers)
    faults = [f"prepare: the preparation's value {name!r} is also a value of the network"
              for name in sorted(({o for n in front.nodes for o in n.outputs}
                                  | set(front.initializers)) & made)]
    tape.annotations.pop(input_name, None)
    tape.rename(input_name, x.name)
    tape.nodes[:0] = front.nodes
    tape.initializers = {**front.initializers, **tape.initializers}
    tape.annotations.update(front.annotations)
    return inputs, faults + name_faults(tape, inputs, [])
