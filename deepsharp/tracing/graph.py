"""The recorded graph: values (inputs, constants, results) and the operations between them.

It holds no ONNX: `deepsharp_export_onnx.trace.lower` lowers it through the shared primitive table.
Value ids are given in creation order and operations are kept in the order they ran, so the
graph is in topological order and the same run gives the same graph.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from deepsharp.tracing.sizes import atoms_in
from deepsharp.tracing.symbols import Atom, Dims, describe


@dataclass
class TraceValue:
    """`kind` is "input" (a graph input, named), "constant" (an initializer: `array` holds a
    contiguous copy taken when it was first used; `name` is its parameter's name or None) or
    "result" (made by operation `op`)."""

    id: int
    dims: Dims
    dtype: np.dtype
    kind: str
    name: str | None = None
    array: np.ndarray | None = None
    op: int | None = None

    def describe(self) -> str:
        return f"{describe(self.dims)} {self.dtype}"


@dataclass(frozen=True)
class TraceOp:
    """One recorded operation: the primitive, its record's attributes, value ids in and out."""

    primitive: str
    attrs: dict[str, Any]
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    label: str  # "matmul (operation 4)": how messages and node owners name it


@dataclass
class TraceGraph:
    values: dict[int, TraceValue] = field(default_factory=dict)
    ops: list[TraceOp] = field(default_factory=list)
    inputs: list[int] = field(default_factory=list)
    outputs: list[tuple[str, int]] = field(default_factory=list)

    def needs(self, op: TraceOp) -> set[int]:
        """The values lowering `op` reads: its inputs, and where the graph finds the size of every
        atom in its results' dims and in the sizes it noted (`_`-keys of its attributes: bounds
        and limits read from symbolic axes), since a shape operand or a bound may be computed
        from them. An atom the operation itself makes is computed from the atoms it is made of."""
        needed = set(op.inputs)
        atoms = atoms_in([k for k in op.attrs.items() if k[0].startswith("_")])
        for vid in op.outputs:
            atoms |= atoms_in(self.values[vid].dims)
        seen: set[Atom] = set()
        while atoms:
            atom = atoms.pop()
            seen.add(atom)
            if atom.source in op.outputs and atom.expr is not None:
                atoms |= atom.expr.atoms() - seen
            else:
                needed.add(atom.source)
        return needed - set(op.outputs)

    def pruned(self) -> "TraceGraph":
        """Only what the outputs need (and every declared input)."""
        needed = {vid for _, vid in self.outputs}
        kept: list[TraceOp] = []
        for op in reversed(self.ops):
            if needed.intersection(op.outputs):
                kept.append(op)
                needed |= self.needs(op)
        kept.reverse()
        live = set(self.inputs) | needed | {v for op in kept for v in op.outputs}
        ops_index = {id(op): i for i, op in enumerate(kept)}
        values = {}
        for vid, value in self.values.items():
            if vid in live:
                values[vid] = value
        producers = {v: ops_index[id(op)] for op in kept for v in op.outputs}
        for vid, value in values.items():
            if value.kind == "result":
                values[vid] = replace(value, op=producers[vid])
        return TraceGraph(values, kept, list(self.inputs), list(self.outputs))

    def constants(self) -> list[TraceValue]:
        return [v for v in self.values.values() if v.kind == "constant"]
