"""Tracer: records one eager run of a model as a graph, through the records autograd uses.

    with Tracer() as tracer:
        x = tracer.input("x", example, axis_names={0: "batch"})
        tracer.parameter("w", w)
        traced = tracer.finish({"y": (x @ w).relu()})
    traced.save_onnx("model.onnx")

While a trace records, the tracer is the thread's trace hook: `apply` hands it every record made
from a traced input (a tensor depending on an `input`), and tensors tell it about reads of values,
writes into storage, aliases and `no_grad`. Values are computed as always; each record is checked
and kept as an operation of the graph with the symbolic dims of its results (docs/tracing.md).
Whatever cannot be recorded faithfully raises `TraceException` at the offending call, and ends
the trace.
"""

from __future__ import annotations

import itertools
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from deepsharp.errors import OpError, TraceErrorKind, TraceException
from deepsharp.tensors import modes
from deepsharp.tensors.symint import holds_live
from deepsharp.tensors.tensor import Record, Tensor, _as_array
from deepsharp.tensors.weak import WeakIdKeyDictionary
from deepsharp.tracing.constants import Constants
from deepsharp.tracing.dims import DimContext, Operand, positional
from deepsharp.tracing.slices import slice_axes
from deepsharp.tracing.graph import TraceGraph, TraceOp, TraceValue
from deepsharp.tracing.model import TracedModel
from deepsharp.tracing.size_reads import SizeReads
from deepsharp.tracing.sizes import Poly
from deepsharp.tracing.symbols import Atom, Dims, Sym, describe, examples, symbolic

Kind = TraceErrorKind

_LOSS = ("a loss: losses have no operator in the ONNX sets written and a trace is an inference "
         "graph; trace the model's output and compute the loss outside the graph")

_FUSED = ("a fused kernel (deepsharp.layers.fused): networks run it only when no tracer records; "
          "write the primitives it fuses (matmul and add, then a relu; conv, relu and max_pool; a "
          "self-attention layer's projections and attention)")

# Primitives a trace never records, and why.
NOT_TRACEABLE: dict[str, str] = {
    "dropout": ("dropout in training mode: its random mask would be frozen into the graph; "
                "trace the evaluation pass (module.eval(); Module.trace does so)"),
    "batch_norm": ("batch normalisation in training mode: it normalises by the batch's own "
                   "statistics and updates the running ones, which an inference graph does not; "
                   "trace the evaluation pass (module.eval(); Module.trace does so), which "
                   "normalises by the running statistics"),
    "mse_loss": _LOSS, "bce_logits_loss": _LOSS, "cross_entropy_loss": _LOSS,
    "cross_entropy_ids_loss": _LOSS,
    # fused kernels a network runs only when no tracer records (the trace holds their primitives)
    "matmul_add": _FUSED, "matmul_add_relu": _FUSED, "conv_relu_max_pool": _FUSED,
    "self_attention": _FUSED,
    "unique": ("unique: its result's size is read from the values, which a graph for inputs of "
               "any values cannot hold"),
}


# Records whose result is its (traced) input's values unchanged: no node is written and the result
# shares the input's value (a copy of a traced tensor keeps its identity). Each test reads the
# record and the traced input's symbolic dims (a slice is whole only if it is at every size).
ALIASES: dict[str, Callable[[Record, Dims], bool]] = {
    "copy": lambda r, d: True,
    "reshape": lambda r, d: r.shapes[0] == r.inputs[0].shape,
    "expand": lambda r, d: r.shapes[0] == r.inputs[0].shape,
    "transpose": lambda r, d: tuple(r.attrs["perm"]) == tuple(range(len(r.attrs["perm"]))),
    "slice": lambda r, d: all(k == "full" for k in slice_axes(d, r.attrs)),
    "cast": lambda r, d: r.dtypes[0] == r.inputs[0].dtype,
    "sum": lambda r, d: not r.attrs["axes"],
    "mean": lambda r, d: not r.attrs["axes"],
    "max": lambda r, d: not r.attrs["axes"],
}


def _lowering_table() -> tuple[dict[str, Any], dict[str, Any]]:
    """The shared primitive -> ONNX table and the dims rules registered with it. Imported when a
    trace begins (it brings in onnx), never when deepsharp is imported."""
    from deepsharp_export_onnx.write.nodes import PRIMITIVE_DIMS, PRIMITIVE_NODES

    return PRIMITIVE_NODES, PRIMITIVE_DIMS


class Tracer(SizeReads):
    """Records one eager run on the calling thread (see the module docstring).

    `Tracer.begin()` starts recording and returns the tracer; `with Tracer() as tracer:` does the
    same and stops on leaving the block. `finish(outputs)` stops and returns the `TracedModel`.
    """

    def __init__(self) -> None:
        self._state = "new"
        self._hook_cm: Any = None
        self._values: WeakIdKeyDictionary[Tensor, int] = WeakIdKeyDictionary()
        self._graph = TraceGraph()
        self._ids = itertools.count()
        self._calls = 0  # operations recorded so far (messages number them)
        self._symbols: dict[str, Atom] = {}
        self._atoms: list[Atom] = []
        self._derived: dict[Poly, Atom] = {}  # a size computed from atoms -> its atom
        self._shapes: dict[int, tuple[int, ...]] = {}  # value id -> its shape of SymInts
        self._names: set[str] = set()
        self._constants = Constants(self._new_constant, self._rename_constant)
        self._nodes: dict[str, Any] = {}
        self._rules: dict[str, Any] = {}

    # -- starting and stopping -------------------------------------------------------------------
    @classmethod
    def begin(cls) -> "Tracer":
        tracer = cls()
        tracer._start()
        return tracer

    def __enter__(self) -> "Tracer":
        self._start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop("closed")

    def close(self) -> None:
        """Stop recording without a graph (what leaving a `with` block does)."""
        self._stop("closed")

    def _start(self) -> None:
        if self._state != "new":
            raise TraceException(Kind.INVALID_USAGE, f"this tracer was already started (it is "
                                 f"{self._state}); make a new Tracer for each trace")
        if modes.trace_hook() is not None:
            raise TraceException(Kind.INVALID_USAGE, "a trace is already recording on this "
                                 "thread: tracers cannot be nested")
        self._nodes, self._rules = _lowering_table()
        self._hook_cm = modes.installed_trace_hook(self)
        self._hook_cm.__enter__()
        self._state = "recording"

    def _stop(self, state: str) -> None:
        if self._state == "recording":
            self._hook_cm.__exit__(None, None, None)
            self._state = state

    def _refuse(self, kind: TraceErrorKind, message: str) -> TraceException:
        """End the trace (it cannot be completed faithfully) and return the error to raise."""
        self._stop("failed")
        return TraceException(kind, message)

    def _require_recording(self, call: str) -> None:
        if self._state != "recording":
            raise TraceException(Kind.INVALID_USAGE, f"{call}: the tracer is not recording (it is "
                                 f"{self._state}); use Tracer.begin() or `with Tracer() as t:`")

    # -- declaring inputs and parameters -----------------------------------------------------------
    def input(self, name: str, example: Any, axis_names: Mapping[int, str] | None = None) -> Tensor:
        """A graph input: a tensor holding (a copy of) `example`, from which the trace records.

        `axis_names` maps axes to symbols (`{0: "batch", 1: "steps"}`) whose size may differ at run
        time; their example sizes must be at least 2 and differ from each other's. A name used on
        several inputs is one symbol (their example sizes must agree).
        """
        self._require_recording("input")
        self._claim(name, "input")
        if isinstance(example, Tensor):
            if example in self._values:
                raise self._refuse(Kind.INVALID_USAGE, f"input {name!r}: the example is itself a "
                                   f"traced tensor; pass the example's values")
            example = example._data
        array = np.array(_as_array(example), copy=True)
        vid = next(self._ids)
        dims: list[Any] = list(array.shape)
        for axis, symbol in dict(axis_names or {}).items():
            axis = self._axis(name, axis, array.ndim)
            dims[axis] = Sym(1, (self._symbol(name, symbol, array.shape[axis], vid, axis),))
        tensor = Tensor._wrap(array)
        self._graph.values[vid] = TraceValue(vid, tuple(dims), array.dtype, "input", name=name)
        self._graph.inputs.append(vid)
        self._values[tensor] = vid
        return tensor

    def parameter(self, name: str, tensor: Tensor) -> Tensor:
        """Name a weight or buffer: the initializer holding it is called `name` (a differently
        strided view of it, `{name}.view_{k}`). Returns the tensor."""
        self._require_recording("parameter")
        if not isinstance(tensor, Tensor):
            raise self._refuse(Kind.INVALID_USAGE, f"parameter {name!r}: expected a Tensor, "
                               f"received {type(tensor).__name__}")
        if tensor in self._values:
            raise self._refuse(Kind.INVALID_USAGE, f"parameter {name!r} depends on an input; a "
                               f"parameter must be a constant of the graph")
        if self._constants.named(name) is tensor or self._constants.name_of(tensor) is not None:
            return tensor  # the same tensor under a second path (a shared weight): first name wins
        self._claim(name, "parameter")
        self._constants.name(name, tensor)
        return tensor

    def _claim(self, name: Any, what: str) -> None:
        if not isinstance(name, str) or not name:
            raise self._refuse(Kind.INVALID_USAGE, f"{what} names must be non-empty strings, "
                               f"received {name!r}")
        if name in self._names:
            raise self._refuse(Kind.INVALID_USAGE, f"the name {name!r} is used twice (inputs, "
                               f"parameters and outputs share one namespace)")
        self._names.add(name)

    def _axis(self, name: str, axis: Any, rank: int) -> int:
        if not isinstance(axis, (int, np.integer)) or not -rank <= int(axis) < rank:
            raise self._refuse(Kind.INVALID_USAGE, f"input {name!r}: axis_names names axis "
                               f"{axis!r}, but the example has {rank} axes")
        return int(axis) % rank

    def _symbol(self, name: str, symbol: Any, size: int, vid: int, axis: int) -> Atom:
        if not isinstance(symbol, str) or not symbol:
            raise self._refuse(Kind.INVALID_USAGE, f"input {name!r}: symbol names must be non-empty "
                               f"strings, received {symbol!r}")
        known = self._symbols.get(symbol)
        if known is not None:
            if known.example != size:
                raise self._refuse(Kind.INVALID_USAGE, f"input {name!r}: symbol {symbol!r} has "
                                   f"size {size} on axis {axis}, but {known.example} where it was "
                                   f"first declared")
            return known
        if size < 2:
            raise self._refuse(Kind.INVALID_USAGE, f"input {name!r}: symbol {symbol!r} (axis "
                               f"{axis}) has example size {size}; symbolic axes need example "
                               f"sizes of at least 2 (a size of 1 broadcasts and hides the axis)")
        for other in self._symbols.values():
            if other.example == size:
                raise self._refuse(Kind.INVALID_USAGE, f"input {name!r}: symbols {other.name!r} "
                                   f"and {symbol!r} both have example size {size}; give symbols "
                                   f"distinct example sizes so the trace can tell them apart")
        atom = Atom(symbol, size, len(self._atoms), vid, axis)
        self._symbols[symbol] = atom
        self._atoms.append(atom)
        return atom

    # -- finishing -------------------------------------------------------------------------------
    def finish(self, outputs: Mapping[str, Tensor] | Tensor) -> TracedModel:
        """Stop recording; the graph from the inputs to `outputs` (name -> traced tensor), keeping
        only what they need. Tensors stay readable afterwards (they hold the example run's values)."""
        self._require_recording("finish")
        self._stop("finished")
        if isinstance(outputs, Tensor):
            outputs = {"output": outputs}
        if not isinstance(outputs, Mapping) or not outputs:
            raise TraceException(Kind.INVALID_USAGE, f"finish: outputs must be a non-empty mapping "
                                 f"of names to traced tensors, received {outputs!r}")
        for name, tensor in outputs.items():
            self._claim_output(name, tensor)
        faults = self._constants.changed(self._describe_constant)
        if faults:
            raise TraceException(Kind.IN_PLACE_MUTATION, "; ".join(faults))
        self._graph.outputs = [(name, self._values[t]) for name, t in outputs.items()]
        return TracedModel(self._graph.pruned())

    def _claim_output(self, name: str, tensor: Any) -> None:
        if not isinstance(tensor, Tensor):
            raise TraceException(Kind.INVALID_USAGE, f"finish: output {name!r} must be a Tensor, "
                                 f"received {type(tensor).__name__}")
        if tensor not in self._values:
            raise TraceException(Kind.INVALID_USAGE, f"finish: output {name!r} {describe(tensor.shape)}"
                                 f" does not depend on an input; a graph output must be computed "
                                 f"from the inputs")
        if not isinstance(name, str) or not name or name in self._names:
            raise TraceException(Kind.INVALID_USAGE, f"finish: output name {name!r} is empty or "
                                 f"already used by an input, a parameter or another output")
        self._names.add(name)

    def _describe_constant(self, vid: int) -> str:
        value = self._graph.values[vid]
        named = f"constant {value.name!r}" if value.name else "an unnamed constant"
        return f"{named} {value.describe()}"

    # -- the hook (called by tensors) ---------------------------------------------------------------
    def involves(self, tensors: Sequence[Tensor]) -> bool:
        values = self._values
        return any(t in values for t in tensors)

    def on_read(self, tensor: Tensor, what: str) -> None:
        if tensor in self._values:
            raise self._refuse(Kind.DATA_DEPENDENT, f"{what} reads the values of a traced tensor "
                               f"({self._origin(tensor)}): they depend on the inputs, and a graph "
                               f"cannot hand values back to Python to decide with; compute with "
                               f"tensor operations (values may be read after finish())")

    def on_write(self, tensor: Tensor, what: str) -> None:
        """Only a write the tensors refuse reaches a traced tensor here (`what` says why):
        the others are recorded (`setitem`, `add`, ...)."""
        if tensor in self._values:
            raise self._refuse(Kind.IN_PLACE_MUTATION, f"{what} (the tensor written is traced: "
                               f"{self._origin(tensor)})")

    def on_alias(self, source: Tensor, result: Tensor, what: str) -> None:
        vid = self._values.get(source)
        if vid is not None:
            self._values[result] = vid
        # a constant written in place by a recorded write: the graph holds its values from
        # before for the operations that used it, and the write's result after
        self._constants.refresh(result)

    def on_no_grad(self) -> None:
        raise self._refuse(Kind.NO_GRAD_IN_TRACE, "no_grad() while tracing: results computed "
                           "inside would not be recorded and would be frozen as constants; a "
                           "trace records no gradients anyway, so drop the no_grad() block")

    def _origin(self, tensor: Tensor) -> str:
        value = self._graph.values[self._values[tensor]]
        if value.kind == "input":
            return f"the input {value.name!r} {describe(value.dims)}"
        return f"{describe(value.dims)}, made by {self._graph.ops[value.op].label}"

    def _next_call(self) -> int:
        """The number the next recorded operation will have (messages name it)."""
        return self._calls + 1

    def on_record(self, record: Record, outputs: Sequence[Tensor]) -> None:
        if not record.inputs and record.op not in self._nodes:
            return  # made from no tensor (arange) and not mapped: a constant
        self._calls += 1
        number = self._calls
        label = f"{record.op} (operation {number})"
        if record.op in NOT_TRACEABLE:
            raise self._refuse(Kind.UNSUPPORTED_OPERATION, f"{label}: {NOT_TRACEABLE[record.op]}")
        alias = ALIASES.get(record.op)
        source = next((t for t in record.inputs if t in self._values), None)
        if alias is not None and source is not None:  # (no source: constants given a size)
            if alias(record, self._graph.values[self._values[source]].dims):
                self._values[outputs[0]] = self._values[source]
                return
        if record.op not in self._nodes:
            raise self._refuse(Kind.UNSUPPORTED_OPERATION, f"{label}: primitive {record.op!r} has "
                               f"no mapping to ONNX nodes, so it cannot be traced; mapped: "
                               f"{', '.join(sorted(self._nodes))}")
        try:
            self._record(record, outputs, label, number)
        except Exception:
            self._stop("failed")
            raise

    def _record(self, record: Record, outputs: Sequence[Tensor], label: str, number: int) -> None:
        operands, ids = [], []
        for t in record.inputs:
            vid = self._values.get(t)
            if vid is None:
                vid = self._constants.capture(t, label)
            value = self._graph.values[vid]
            operands.append(Operand(value.dims, value.dtype, value.kind != "constant",
                                    value.array))
            ids.append(vid)
        out_ids = [next(self._ids) for _ in outputs]

        def make_atom(output: int, axis: int, size: int, name: str | None = None) -> Atom:
            atom = Atom(name or f"{record.op}{number}_{axis}", size, len(self._atoms),
                        out_ids[output], axis)
            self._atoms.append(atom)
            return atom

        def sized_atom(size: Poly, name: str, output: int, axis: int, create: bool
                       ) -> Atom | None:
            if size not in self._derived and create:
                atom = Atom(name, size.example, len(self._atoms), out_ids[output], axis, size)
                self._atoms.append(atom)
                self._derived[size] = atom
            return self._derived.get(size)

        ctx = DimContext(record.op, label, dict(record.attrs), operands, record.shapes,
                         lambda: list(self._atoms), make_atom, sized_atom)
        self._sizes_taken(record.op, record.attrs, label)
        rule = self._rules.get(record.op) or positional
        results = rule(ctx)
        if not record.inputs and not any(symbolic(dims) for dims in results) \
                and not holds_live(record.attrs):
            return  # made from no tensor, at fixed sizes: a constant like any other
        index = len(self._graph.ops)
        for vid, dims, shape, dtype, tensor in zip(out_ids, results, record.shapes, record.dtypes,
                                                   outputs):
            if examples(dims) != tuple(shape):
                raise OpError(f"{label}: its symbolic dims rule gave {describe(dims)} for a result "
                              f"of shape {tuple(shape)}")
            self._graph.values[vid] = TraceValue(vid, dims, np.dtype(dtype), "result", op=index)
            self._values[tensor] = vid
        # the rule may have noted what it decided for the writer (`_`-keys of ctx.attrs)
        self._graph.ops.append(TraceOp(record.op, ctx.attrs, tuple(ids), tuple(out_ids), label))

    # -- constants ---------------------------------------------------------------------------------
    def _new_constant(self, array: np.ndarray, name: str | None) -> int:
        vid = next(self._ids)
        self._graph.values[vid] = TraceValue(vid, tuple(array.shape), array.dtype, "constant",
                                             name=name, array=array)
        return vid

    def _rename_constant(self, vid: int, name: str) -> None:
        self._graph.values[vid].name = name

