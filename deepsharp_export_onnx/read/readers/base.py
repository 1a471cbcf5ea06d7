"""The reader table: one reader per ONNX op type (and fork readers for values read twice).

    @reads("MatMul")
    def read_matmul(node, r: Reading) -> Read: ...

A reader starts at one node that reads the current value, consumes the nodes its layer was
written as, and returns the layer specs, their slot values, and the value after them. A node whose
op type has no reader is refused by name.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
import onnx

from deepsharp.layers.base import LayerSpec
from deepsharp_export_onnx.read.readers.view import GraphView
from layout import Order


class Unreadable(Exception):
    """Raised by a reader for nodes it cannot read as a layer; the importer names the node.

    `node` is the node refused: the walk skips to it (the nodes before it on the way are part
    of the same refusal) instead of refusing them one by one."""

    def __init__(self, message: str, node: onnx.NodeProto | None = None) -> None:
        super().__init__(message)
        self.node = node


@dataclass
class Read:
    """What a reader made of some nodes: layer specs with their slots, and the value after."""

    output: str
    nodes: list[onnx.NodeProto]
    specs: list[LayerSpec] = field(default_factory=list)
    slots: list[dict[str, np.ndarray]] = field(default_factory=list)
    order: Order | None = None  # the axis order after, when the nodes turned it
    rank: int | None = None     # the rank after (batch included), when the nodes changed it


@dataclass
class Reading:
    """Where the importer is: the graph, the current value and its axis order."""

    view: GraphView
    value: str
    order: Order = Order.CHANNELS_LAST
    rank: int = 2
    extra: dict[str, Any] = field(default_factory=dict)

    def unreadable(self, node: onnx.NodeProto, reason: str) -> Unreadable:
        return Unreadable(f"{GraphView.label(node)}: {reason}", node)

    def need_constant(self, node: onnx.NodeProto, index: int, what: str) -> np.ndarray:
        name = node.input[index] if index < len(node.input) else ""
        array = self.view.constant(name) if name else None
        if array is None:
            raise self.unreadable(node, f"its {what} (input {index}) must be a constant")
        return array


Reader = Callable[[onnx.NodeProto, Reading], Read]
READERS: dict[str, Reader] = {}
ForkReader = Callable[[list[onnx.NodeProto], Reading], "Read | None"]
FORK_READERS: list[ForkReader] = []


def reads(*op_types: str) -> Callable[[Reader], Reader]:
    def register(fn: Reader) -> Reader:
        for op in op_types:
            if op in READERS:
                raise ValueError(f"op type {op!r} has two readers")
            READERS[op] = fn
        return fn

    return register


PatternReader = Callable[[onnx.NodeProto, Reading], "Read | None"]
PATTERN_READERS: dict[str, list[PatternReader]] = {}


def reads_pattern(*op_types: str) -> Callable[[PatternReader], PatternReader]:
    """Register a reader tried, before the table's reader for the op type, on a node that starts
    a pattern (a Transpose into an LSTM, a Slice of columns); it returns None when the nodes are
    not its pattern, so several layers can start with the same op type."""

    def register(fn: PatternReader) -> PatternReader:
        for op in op_types:
            PATTERN_READERS.setdefault(op, []).append(fn)
        return fn

    return register


def reads_fork(fn: ForkReader) -> ForkReader:
    """Register a reader tried when a value is read by several nodes (a residual, a SiLU)."""
    FORK_READERS.append(fn)
    return fn
