"""The graph's last node: the loss's output activation (Sigmoid, Softmax over the last axis, or
nothing), one writer per loss type."""

from __future__ import annotations

from typing import Callable

from deepsharp.losses import BinaryCrossEntropy, CrossEntropy, MeanSquaredError
from deepsharp_export_onnx.graph import Tape
from deepsharp_export_onnx.tables import TypeTable
from deepsharp_export_onnx.values import Value

OutputWriter = Callable[[Tape, Value, str], str]
OUTPUT_WRITERS: TypeTable[OutputWriter] = TypeTable("output writer")
writes_output = OUTPUT_WRITERS.register


@writes_output(MeanSquaredError)
def _identity(tape: Tape, z: Value, name: str) -> str:
    producers = {o for node in tape.nodes for o in node.outputs}
    if z.name in producers:
        tape.rename(z.name, name)
    else:  # the graph's input itself, or an initializer: an output must be made by a node
        tape.op("Identity", [z.name], name=name)
    return name


@writes_output(BinaryCrossEntropy)
def _sigmoid(tape: Tape, z: Value, name: str) -> str:
    return tape.op("Sigmoid", [z.name], name=name)


@writes_output(CrossEntropy)
def _softmax(tape: Tape, z: Value, name: str) -> str:
    axis = z.rank - 1
    return tape.op("Softmax", [z.name], {"axis": axis, "_last_axis": True}, name=name)
