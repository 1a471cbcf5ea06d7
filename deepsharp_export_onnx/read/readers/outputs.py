"""The graph's last node as the loss's output activation: Sigmoid for BinaryCrossEntropy,
Softmax over the last axis for CrossEntropy, nothing for MeanSquaredError."""

from __future__ import annotations

from typing import Callable

from deepsharp.losses import BinaryCrossEntropy, CrossEntropy, MeanSquaredError
from deepsharp_export_onnx.read.readers.base import Unreadable
from deepsharp_export_onnx.read.readers.view import GraphView
from deepsharp_export_onnx.tables import TypeTable

# reader(view, output name) -> the value the activation was applied to (its node consumed)
OutputReader = Callable[[GraphView, str], str]
OUTPUT_READERS: TypeTable[OutputReader] = TypeTable("output reader")
reads_output = OUTPUT_READERS.register


def _strip(view: GraphView, output: str, op_type: str, loss_name: str) -> str:
    node = view.producer.get(output)
    if node is None or node.op_type != op_type:
        found = f"{GraphView.label(node)}" if node is not None else "no node"
        raise Unreadable(f"the graph's output {output!r} is made by {found}; {loss_name} answers "
                         f"through a last {op_type}")
    view.consume(node)
    return node.input[0]


@reads_output(MeanSquaredError)
def _identity(view: GraphView, output: str) -> str:
    node = view.producer.get(output)
    if node is not None and node.op_type == "Identity":
        view.consume(node)
        return node.input[0]
    return output


@reads_output(BinaryCrossEntropy)
def _sigmoid(view: GraphView, output: str) -> str:
    """A last Sigmoid; or both classes' probabilities, Concat(1 - Sigmoid(z), Sigmoid(z)) on the
    last axis (scikit-learn's binary classifiers): the network answers the second's."""
    node = view.producer.get(output)
    if node is not None and node.op_type == "Concat" and len(node.input) == 2:
        complement, positive = (view.producer.get(i) for i in node.input)
        one = view.constant(complement.input[0]) if complement is not None else None
        rank = len(view.dims(output) or ()) or 2
        if complement is not None and positive is not None and complement.op_type == "Sub" \
                and positive.op_type == "Sigmoid" and list(complement.input[1:]) == [positive.output[0]] \
                and one is not None and one.size == 1 and float(one.reshape(-1)[0]) == 1.0 \
                and int(GraphView.attrs(node).get("axis", 0)) % rank == rank - 1:
            view.consume(node, complement)
            return _strip(view, positive.output[0], "Sigmoid", "BinaryCrossEntropy")
    return _strip(view, output, "Sigmoid", "BinaryCrossEntropy")


@reads_output(CrossEntropy)
def _softmax(view: GraphView, output: str) -> str:
    value = _strip(view, output, "Softmax", "CrossEntropy")
    node = view.producer.get(output)
    axis = GraphView.attrs(node).get("axis", -1 if view.opset >= 13 else 1)
    rank = len(view.dims(output) or ()) or 2
    if axis % rank != rank - 1:
        raise Unreadable(f"{GraphView.label(node)}: CrossEntropy answers through a softmax over "
                         f"the last axis, this one is over axis {axis}")
    return value
