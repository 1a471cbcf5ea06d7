"""Writing a traced graph as ONNX: every operation through the shared primitive table.

Values are named in the order they were made: inputs and outputs by the names the trace gave,
parameters by their paths, other constants `const_{k}`, results `{primitive}_{k}`. Every result
is annotated with its dims (symbols as dim_params). A shape operand that several symbolic sizes
enter is computed at run time: `Shape` of the value holding each atom, `Gather` of its axis, `Mul`
for products, `Concat` with the fixed sizes.

    model = traced_model_proto(traced.graph)
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
import onnx
from onnx import TensorProto, helper

import deepsharp
from deepsharp.tracing.graph import TraceGraph, TraceOp, TraceValue
from deepsharp.errors import OpError
from deepsharp.tracing.sizes import Poly, Quotient
from deepsharp.tracing.symbols import Atom, Dim, Sym, onnx_dims
from deepsharp_export_onnx.errors import ExportRefused
from deepsharp_export_onnx.graph import Tape
from deepsharp_export_onnx.write.nodes import PRIMITIVE_NODES, Emit

GRAPH_NAME = "deepsharp.trace"


def elem_type(dtype: np.dtype) -> int:
    return helper.np_dtype_to_tensor_dtype(np.dtype(dtype))


@dataclass
class TraceEmit(Emit):
    """The Emit of one traced operation: shapes come from the trace's symbolic dims."""

    lowering: "Lowering | None" = None
    op: TraceOp | None = None

    def _value(self, vid: int) -> TraceValue:
        return self.lowering.graph.values[vid]

    def dims(self, index: int):
        return self._value(self.op.inputs[index]).dims

    def constant_value(self, index: int) -> np.ndarray | None:
        value = self._value(self.op.inputs[index])
        return value.array if value.kind == "constant" else None

    def size(self, dim: Any) -> str:
        if isinstance(dim, Poly):
            return self.lowering.expr_size(dim)
        return self.lowering.size(dim) if isinstance(dim, Sym) else super().size(dim)

    def vector(self, label: str, entries: Sequence[Any]) -> str:
        if all(isinstance(v, int) for v in entries):
            return super().vector(label, entries)
        return self.lowering.computed_shape(list(entries), self, label)

    def dtype_of(self, index: int) -> np.dtype:
        return self._value(self.op.inputs[index]).dtype

    def annotate_as(self, name: str, *, operand: int | None = None, result: int | None = None,
                    perm: Sequence[int] | None = None) -> None:
        value = self._value(self.op.inputs[operand] if operand is not None
                            else self.op.outputs[result])
        dims = value.dims if perm is None else tuple(value.dims[p] for p in perm)
        self.tape.annotate(name, onnx_dims(dims), elem_type(value.dtype))

    def dtype(self, index: int) -> np.dtype:
        return self._value(self.op.inputs[index]).dtype

    def result_dtype(self, index: int = 0) -> np.dtype:
        return self._value(self.op.outputs[index]).dtype

    def promoted(self, inputs: Sequence[str], skip: Sequence[int] = (), to: Any = None
                 ) -> list[str]:
        target = self._value(self.op.outputs[0]).dtype if to is None else np.dtype(to)
        result = []
        for index, name in enumerate(inputs):
            value = self._value(self.op.inputs[index])
            if index not in skip and value.dtype != target:
                name = self("Cast", [name], {"to": elem_type(target)}, suffix=f"cast_{index}")
                self.tape.annotate(name, onnx_dims(value.dims), elem_type(target))
            result.append(name)
        return result

    def shape_operand(self, shape: Sequence[int], *, minus_one: bool = False,
                      broadcast_from: int | None = None) -> str:
        """Result 0's shape: constants when nothing is symbolic; a constant with one -1 when one
        axis is (and `minus_one`); else computed from Shape nodes. With `broadcast_from`, axes
        where that input already has the size are written 1 (Expand keeps them)."""
        entries: list[Dim] = list(self._value(self.op.outputs[0]).dims)
        if broadcast_from is not None:
            source = self.dims(broadcast_from)
            lead = len(entries) - len(source)
            for axis in range(max(lead, 0), len(entries)):
                if source[axis - lead] == entries[axis]:
                    entries[axis] = 1
        symbolic = [i for i, d in enumerate(entries) if isinstance(d, Sym)]
        if not symbolic:
            return self.constant("shape", [int(d) for d in entries])
        if minus_one and len(symbolic) == 1:
            return self.constant("shape", [-1 if isinstance(d, Sym) else int(d) for d in entries])
        # an extent this very operation makes (a reshape's -1 the sizes given cannot account
        # for) cannot be read from its result: it is the -1
        made = [i for i in symbolic if any(a.source in self.op.outputs and a.expr is None
                                           for a in entries[i].atoms)]
        if made:
            if not minus_one or len(made) > 1:
                raise OpError(f"{self.op.label}: the sizes {[str(entries[i]) for i in made]} of "
                              f"its result cannot be computed before it is")
            entries[made[0]] = -1
        return self.lowering.computed_shape(entries, self)


class Lowering:
    """One pass over a (pruned) trace graph, writing a Tape."""

    def __init__(self, graph: TraceGraph) -> None:
        self.graph = graph
        self.tape = Tape()
        self.names: dict[int, str] = {}
        self.counts: Counter[str] = Counter()
        self.sizes: dict[Any, str] = {}    # Atom or Sym -> int64[1] value holding its size
        self.shapes: dict[int, str] = {}   # value id -> its Shape node
        self.first_output: dict[int, str] = {}
        for name, vid in graph.outputs:
            self.first_output.setdefault(vid, name)
        self.taken = ({graph.values[v].name for v in graph.inputs} | {n for n, _ in graph.outputs}
                      | {v.name for v in graph.constants() if v.name})
        for vid in graph.inputs:
            value = graph.values[vid]
            self.names[vid] = value.name
            self.annotate(value.name, value)

    # -- names and annotations ---------------------------------------------------------------------
    def fresh(self, base: str) -> str:
        name, k = base, 0
        while name in self.taken:
            k += 1
            name = f"{base}_{k}"
        self.taken.add(name)
        return name

    def annotate(self, name: str, value: TraceValue) -> None:
        self.tape.annotate(name, onnx_dims(value.dims), elem_type(value.dtype))

    def name_of(self, vid: int) -> str:
        if vid not in self.names:
            value = self.graph.values[vid]  # a constant, written where first used
            name = value.name
            if name is None:
                name = self.fresh(f"const_{self.counts['const']}")
                self.counts["const"] += 1
            self.names[vid] = self.tape.initializer(name, value.array,
                                                    weight=value.name is not None)
        return self.names[vid]

    # -- the walk -----------------------------------------------------------------------------------
    def run(self) -> list[str]:
        """Write every operation, then the outputs; returns the output names. A constant no node
        reads is dropped: an entry that wrote it again in another form (an LSTM's weights in
        ONNX's gate order) left it behind."""
        for op in self.graph.ops:
            self.lower(op)
        outputs = []
        for name, vid in self.graph.outputs:
            if self.names[vid] != name:  # an input, or a value asked for twice
                self.tape.owner = f"output {name!r}"
                self.tape.op("Identity", [self.names[vid]], name=name)
                self.annotate(name, self.graph.values[vid])
            outputs.append(name)
        read = {i for node in self.tape.nodes for i in node.inputs}
        for name in [n for n in self.tape.initializers if n not in read]:
            del self.tape.initializers[name]
            self.tape.annotations.pop(name, None)
        return outputs

    def lower(self, op: TraceOp) -> None:
        inputs = [self.name_of(v) for v in op.inputs]
        ranks = [len(self.graph.values[v].dims) for v in op.inputs]
        base = self.first_output.get(op.outputs[0])
        if base is None:
            base = self.fresh(f"{op.primitive}_{self.counts[op.primitive]}")
            self.counts[op.primitive] += 1
        self.tape.owner = op.label
        emit = TraceEmit(self.tape, base, lowering=self, op=op)
        written = PRIMITIVE_NODES[op.primitive](emit, inputs, op.attrs, ranks)
        written = [written] if isinstance(written, str) else list(written)
        for vid, name in zip(op.outputs, written):
            wanted = self.first_output.get(vid)
            if wanted is not None and name != wanted:
                self.tape.rename(name, wanted)
                name = wanted
            self.names[vid] = name
            self.annotate(name, self.graph.values[vid])

    # -- sizes read at run time ------------------------------------------------------------------------
    def computed_shape(self, entries: list[Any], emit: Emit, label: str = "shape") -> str:
        """An int64 vector of numbers and sizes (Dims, polynomials) computed at run time."""
        pieces: list[str] = []
        fixed: list[int] = []
        for dim in entries:
            if isinstance(dim, (Sym, Poly)):
                if fixed:
                    pieces.append(emit.constant(f"{label}_{len(pieces)}", fixed))
                    fixed = []
                pieces.append(self.size(dim) if isinstance(dim, Sym) else self.expr_size(dim))
            else:
                fixed.append(int(dim))
        if fixed:
            pieces.append(emit.constant(f"{label}_{len(pieces)}", fixed))
        if len(pieces) == 1 and len(entries) == 1:
            return pieces[0]
        shape = emit("Concat", pieces, {"axis": 0}, suffix=label)
        self.tape.annotate(shape, (len(entries),), TensorProto.INT64)
        return shape

    def size(self, dim: Sym) -> str:
        """An int64[1] value holding `dim` at run time."""
        if dim not in self.sizes:
            parts = [self.atom_size(a) for a in dim.atoms]
            if dim.coef != 1:
                parts.append(self.tape.constant(f"size.{dim}/coefficient", [dim.coef]))
            result = parts[0]
            for part in parts[1:]:
                result = self.tape.op("Mul", [result, part], name=f"size.{dim}")
                self.tape.annotate(result, (1,), TensorProto.INT64)
            self.sizes[dim] = result
        return self.sizes[dim]

    def atom_size(self, atom: Atom) -> str:
        if atom not in self.sizes:
            if atom.source not in self.names:  # held by the value being written: computed
                if atom.expr is None:
                    raise OpError(f"the size {atom.name} is read before the value holding it "
                                  f"is written")
                self.sizes[atom] = self.expr_size(atom.expr)
                return self.sizes[atom]
            source = self.names[atom.source]
            if atom.source not in self.shapes:
                shape = self.tape.op("Shape", [source], name=f"{source}/shape")
                rank = len(self.graph.values[atom.source].dims)
                self.tape.annotate(shape, (rank,), TensorProto.INT64)
                self.shapes[atom.source] = shape
            axis = self.tape.constant(f"size.{atom.name}/axis", [atom.axis])
            size = self.tape.op("Gather", [self.shapes[atom.source], axis], {"axis": 0},
                                name=f"size.{atom.name}")
            self.tape.annotate(size, (1,), TensorProto.INT64)
            self.sizes[atom] = size
        return self.sizes[atom]

    def expr_size(self, poly: Poly) -> str:
        """An int64[1] value holding the polynomial `poly` (a size computed in Python from
        symbolic sizes) at run time: Mul and Add of its atoms' sizes; a floor quotient
        a // b as (a - Mod(a, b)) / b, exact for either sign (Mod takes the divisor's sign)."""
        dim = poly.as_dim()
        if isinstance(dim, Sym):
            return self.size(dim)
        if poly not in self.sizes:
            total = None
            for factors, coef in poly.terms:
                term = None
                for factor in factors:
                    value = (self.atom_size(factor) if isinstance(factor, Atom)
                             else self.quotient_size(factor))
                    term = value if term is None else self._int_op("Mul", term, value, poly)
                if coef != 1 or term is None:
                    scale = self.tape.constant(f"size.{poly}/{coef}", [coef])
                    term = scale if term is None else self._int_op("Mul", term, scale, poly)
                total = term if total is None else self._int_op("Add", total, term, poly)
            self.sizes[poly] = total if total is not None else self.tape.constant(
                f"size.{poly}", [0])
        return self.sizes[poly]

    def quotient_size(self, quotient: Quotient) -> str:
        if quotient not in self.sizes:
            a, b = self.expr_size(quotient.num), self.expr_size(quotient.den)
            rest = self._int_op("Mod", a, b, quotient)
            exact = self._int_op("Sub", a, rest, quotient)
            self.sizes[quotient] = self._int_op("Div", exact, b, quotient)
        return self.sizes[quotient]

    def _int_op(self, op_type: str, a: str, b: str, size: Any) -> str:
        result = self.tape.op(op_type, [a, b], name=f"size.{size}")
        self.tape.annotate(result, (1,), TensorProto.INT64)
        return result


def opset_faults(tape: Tape, max_opset: int | None) -> list[str]:
    if max_opset is None:
        return []
    return [f"{node.owner}: node {node.name!r} ({node.op_type}) needs operator set "
            f"{tape.node_needs(node)}, above max_opset {max_opset}"
            for node in tape.nodes_needing_more_than(max_opset)]


def traced_model_proto(graph: TraceGraph, *, max_opset: int | None = None,
                       metadata: dict[str, str] | None = None) -> onnx.ModelProto:
    """The ModelProto of a traced graph, for the oldest operator set holding every node."""
    lowering = Lowering(graph)
    outputs = lowering.run()
    faults = opset_faults(lowering.tape, max_opset)
    if faults:
        raise ExportRefused(faults)
    inputs = [graph.values[v].name for v in graph.inputs]
    return lowering.tape.to_model(inputs, outputs, metadata=metadata, graph_name=GRAPH_NAME,
                                  producer=("deepsharp", deepsharp.__version__))
