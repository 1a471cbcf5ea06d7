"""The writer table: one writer per step type, and the context a writer writes in.

    @writes(DenseStep)
    def write_dense(step, x: Value, w: Writing) -> Value: ...

A writer states the axis order it takes (`order=`: channels-last, channels-first, or None for
any); the exporter turns the value round before calling it when needed. A step type with no writer
is refused by name: the table is the list of what can be exported.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np
from onnx import TensorProto

from deepsharp.layers.base import Step
from deepsharp_export_onnx.graph import Tape
from deepsharp_export_onnx.write.nodes import PRIMITIVE_NODES, Emit
from deepsharp_export_onnx.tables import TypeTable
from deepsharp_export_onnx.values import Dims, Value
from layout import Order


class Refusal(Exception):
    """Raised by a writer for a step it cannot write exactly; the exporter names the step."""


Writer = Callable[[Step, Value, "Writing"], Value]


@dataclass(frozen=True)
class WriterEntry:
    write: Writer
    order: Order | None
    # takes a row flattened from a channels-first image (Order.FLAT_CHANNELS_FIRST) and writes
    # it exactly (a dense layer permutes its kernel's rows), so the flatten needs no Transpose
    flat_rows: bool = False


WRITERS: TypeTable[WriterEntry] = TypeTable("writer")


def writes(*step_types: type, order: Order | None = Order.CHANNELS_LAST,
           flat_rows: bool = False) -> Callable[[Writer], Writer]:
    """Register `fn` as the writer of `step_types`, taking values in `order` (None: any);
    `flat_rows` writers also take a row flattened from a channels-first image."""

    def register(fn: Writer) -> Writer:
        for step_type in step_types:
            WRITERS.add(step_type, WriterEntry(fn, order, flat_rows))
        return fn

    return register


def writer_for(step: Step) -> WriterEntry | None:
    return WRITERS.lookup(step)


class Writing:
    """What a writer writes with: nodes and initializers named after its step."""

    def __init__(self, tape: Tape, step: Step, exporter: Any,
                 following: Sequence[Step] = ()) -> None:
        self.tape = tape
        self.step = step
        self.exporter = exporter
        self.base = f"{step.place}.{step.kind}"
        self.following = tuple(following)  # the steps written after this one, in this walk

    def emit(self) -> Emit:
        """The emitter of the nodes named after the step, for the node groups writers share with
        the primitives' table (`vocabulary_nodes`)."""
        return Emit(self.tape, self.base)

    def node(self, op_type: str, inputs: Sequence[str], attrs: dict[str, Any] | None = None, *,
             suffix: str | None = None, outputs: int = 1) -> Any:
        """A node named `{place}.{kind}` (or `{place}.{kind}/{suffix}`); returns its output(s)."""
        return self.emit()(op_type, inputs, attrs, suffix=suffix, outputs=outputs)

    def primitive(self, name: str, inputs: Sequence[str], attrs: dict[str, Any],
                  ranks: Sequence[int]) -> str:
        """The nodes of a primitive as the shared table writes them (activations, the tracer)."""
        return PRIMITIVE_NODES[name](self.emit(), inputs, attrs, ranks)

    def slot(self, name: str, array: np.ndarray) -> str:
        """An initializer holding a slot, named by its path (`0.weight`)."""
        return self.tape.initializer(f"{self.step.place}.{name}", array, weight=True)

    def constant(self, label: str, values: Any, dtype: Any = np.int64) -> str:
        """An initializer that is not a slot (a shape, a table), named `{place}.{kind}/{label}`."""
        return self.tape.constant(f"{self.base}/{label}", values, dtype)

    def value(self, name: str, dims: Dims, like: Value, **changes: Any) -> Value:
        """The step's output value: annotated with its dims, carrying `like`'s order and mask
        unless changed."""
        result = like.renamed(name, dims=tuple(dims), **changes)
        self.tape.annotate(name, result.dims, result.elem_type)
        return result

    def refuse(self, reason: str) -> Refusal:
        return Refusal(reason)

    def turn(self, x: Value, order: Order) -> Value:
        """`x` in `order` (the exporter's one Transpose), for a writer that decides late."""
        return self.exporter.turn(self.tape, x, order)

    def write_steps(self, steps: Sequence[Step], x: Value) -> Value:
        """Write a branch's steps in order (composite layers)."""
        return self.exporter.write_steps(self.tape, steps, x)


FLOAT = TensorProto.FLOAT
