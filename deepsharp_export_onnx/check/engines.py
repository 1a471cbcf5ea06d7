"""The two ways `check_annotations` sees a run's values.

ONNX Runtime: a copy of the model with every shape annotation removed (so a wrong declaration
can neither make Runtime refuse the model nor steer it) and every annotated main-graph value
added as an extra graph output; the checks themselves always read the original annotations.
Runtime cannot show values inside If/Loop/Scan bodies, so a main-graph node whose bodies carry
annotations is re-run alone on the onnx reference evaluator, fed from Runtime's values.

Reference evaluator: a subclass that reports each value to the active check as it appears:
the values available when a graph or body starts, then each node's outputs, in real time, so
body values are checked in their place in the run (between their node's inputs and outputs).
"""

from __future__ import annotations

import re
from contextvars import ContextVar
from dataclasses import dataclass, field

import numpy as np
import onnx
from onnx import GraphProto, ModelProto, TypeProto
from onnx.reference import ReferenceEvaluator
from onnx.reference.op_run import OpFunction

from deepsharp_export_onnx.errors import AnnotationViolation, ModelRunError
from deepsharp_export_onnx.check.annotations import (
    Annotation,
    Binder,
    bodies,
    has_annotated_body,
    initializer_names,
    node_label,
    scope_annotations,
)

# --- ONNX Runtime ---------------------------------------------------------------------------


def check_on_runtime(model: ModelProto, feeds: dict[str, np.ndarray], binder: Binder) -> None:
    """Check the main graph on Runtime's values; nodes with annotated bodies also on the reference."""
    graph = model.graph
    notes = scope_annotations(graph)
    _check_entry([i.name for i in graph.input], _entry_shapes(graph, feeds), notes, binder)
    if binder.faults:
        return  # a broken precondition: the run would mean nothing
    produced = [o for node in graph.node for o in node.output if o]
    wanted = {name for name in produced if name in notes}
    for node in graph.node:
        if has_annotated_body(node):  # its context, and its outputs to compare the two engines
            wanted |= (_context_names(node) & set(produced)) | set(node.output)
    values = _runtime_values(model, feeds, [name for name in produced if name in wanted])
    initializers = _initializers(graph)
    available = set(initializers) | set(feeds)
    for node in graph.node:
        if has_annotated_body(node):
            names = _context_names(node) & available
            context = {n: feeds[n] if n in feeds else values[n] if n in values else _load(initializers[n]) for n in names}
            outputs = _check_node_on_reference(model, node, context, binder)
            _same_shapes(node, outputs, values)
        for name in node.output:
            shape = shape_of(values.get(name))
            if name in notes and shape is not None:
                binder.check_all(name, shape, notes[name])
        available.update(node.output)


def shape_of(value: object) -> tuple[int, ...] | None:
    """The shape of a tensor value; None for anything else (sequence, map, missing optional)."""
    return tuple(value.shape) if isinstance(value, (np.ndarray, np.generic)) else None


def _entry_shapes(graph: GraphProto, feeds: dict[str, np.ndarray]) -> dict[str, tuple[int, ...]]:
    """Shapes of everything available when the main graph starts: initializers, overridden by feeds."""
    shapes = {t.name: tuple(t.dims) for t in graph.initializer}
    shapes.update({s.values.name: tuple(s.dims) for s in graph.sparse_initializer})
    shapes.update({name: value.shape for name, value in feeds.items()})
    return shapes


def _check_entry(inputs: list[str], shapes: dict, notes: dict[str, list[Annotation]], binder: Binder, scope: str = "") -> None:
    """Check what a graph starts with: its declared inputs first, then the rest (initializers, context)."""
    first = [name for name in inputs if name in shapes]
    for name in first + [n for n in shapes if n not in set(first)]:
        if name in notes:
            binder.check_all(name, shapes[name], notes[name], scope)


def _initializers(graph: GraphProto) -> dict[str, onnx.TensorProto | onnx.SparseTensorProto]:
    """Initializer name -> its proto; arrays are made only for the few a body needs."""
    found: dict = {t.name: t for t in graph.initializer}
    found.update({s.values.name: s for s in graph.sparse_initializer})
    return found


def _load(proto: onnx.TensorProto | onnx.SparseTensorProto) -> np.ndarray:
    if isinstance(proto, onnx.SparseTensorProto):
        return _dense(proto)
    return onnx.numpy_helper.to_array(proto)


def _dense(sparse: onnx.SparseTensorProto) -> np.ndarray:
    """A sparse initializer as a dense array (indices are flat, or one row of coordinates each)."""
    values = onnx.numpy_helper.to_array(sparse.values)
    indices = onnx.numpy_helper.to_array(sparse.indices)
    dense = np.zeros(int(np.prod(sparse.dims)), dtype=values.dtype)
    flat = indices if indices.ndim == 1 else np.ravel_multi_index(tuple(indices.T), tuple(sparse.dims))
    dense[flat] = values
    return dense.reshape(tuple(sparse.dims))


def _runtime_values(model: ModelProto, feeds: dict[str, np.ndarray], expose: list[str]) -> dict[str, object]:
    """Run `model` on Runtime with its shape annotations made anonymous; return its outputs plus
    `expose`.

    First every declared axis is made anonymous but ranks are kept: Runtime's start-up cost
    stays that of the model as written (with no annotations at all it re-derives shapes at a
    cost that grows with the square of a chain of shape computations: 4,000 nodes, 10 s against
    1.5 s). Where a declared rank is wrong and Runtime refuses that copy, the run is retried with
    no annotations at all; if that fails too, Runtime's own error is the news (RuntimeRefused)."""
    try:
        return _run_stripped(model, feeds, expose, keep_rank=True)
    except RuntimeRefused:
        return _run_stripped(model, feeds, expose, keep_rank=False)


def _run_stripped(model: ModelProto, feeds: dict, expose: list[str], keep_rank: bool) -> dict[str, object]:
    import onnxruntime

    copy = ModelProto()
    copy.CopyFrom(model)
    strip_shapes(copy.graph, keep_rank=keep_rank, main=True)
    for function in copy.functions:  # Runtime trusts shapes declared in bodies, even in functions
        del function.value_info[:]
        for body in (b for node in function.node for b in bodies(node)):
            strip_shapes(body, keep_rank=True)
    present = {o.name for o in copy.graph.output}
    for name in expose:
        if name not in present:  # an untyped output: Runtime infers its type
            copy.graph.output.add().name = name
    options = onnxruntime.SessionOptions()
    options.log_severity_level = 4  # Runtime warns, even errs, about shapes we removed on purpose
    # the basic rewrites only: the checker reads every node's own values, which the extended
    # fusions would merge away, and ONNX Runtime 1.31's layer-norm fusion crashes the process on
    # a LayerNormalization whose optional bias is given as "" (tests/fixtures/fuzz)
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_BASIC
    try:
        session = onnxruntime.InferenceSession(copy.SerializeToString(), options, providers=["CPUExecutionProvider"])
        names = [o.name for o in session.get_outputs()]
        return dict(zip(names, session.run(names, feeds)))
    except Exception as error:  # Runtime's error classes have no stable import path
        text = str(error).strip()
        node = _node_named_in(text, model.graph)
        where = f" at {node}" if node else ""
        raise RuntimeRefused(f"ONNX Runtime could not run the model{where} (shape annotations "
                             f"removed): {text}", node=node) from error


# How Runtime names the node in its errors: "Node (n3) Op (Reshape)", "running Reshape node.
# Name:'n3'", "(op_type:Reshape, node name: n3)".
_NODE_IN_ERROR = re.compile(r"Node \(([^)]*)\)|node\. Name:'([^']*)'|node name: ([^\s),]+)")


def _node_named_in(text: str, graph: GraphProto) -> str:
    """The label of the main-graph node Runtime's error names, or ""."""
    by_name = {node.name: node for node in graph.node if node.name}
    for match in _NODE_IN_ERROR.finditer(text):
        name = next(group for group in match.groups() if group is not None)
        if name in by_name:
            return node_label(by_name[name])
    return ""


class RuntimeRefused(ModelRunError):
    """ONNX Runtime could not load or run the annotation-free copy of the model."""


def strip_shapes(graph: GraphProto, keep_rank: bool = False, main: bool = False) -> None:
    """Remove the shape annotations of `graph` and its bodies, keeping element types.

    Bodies keep their inputs' and outputs' ranks, with every axis made anonymous: Runtime needs
    ranks there (Loop's scalar inputs, Scan's outputs) and an anonymous axis asserts nothing.
    With `keep_rank` the main graph's value_info stays too, each axis anonymous (`main`).
    """
    for info in (*graph.input, *graph.output):
        _clear_shape(info.type, keep_rank)
    if main and keep_rank:
        for info in graph.value_info:
            _clear_shape(info.type, keep_rank)
    else:
        del graph.value_info[:]
    for node in graph.node:
        for body in bodies(node):
            strip_shapes(body, keep_rank=True)


def _clear_shape(type_proto: TypeProto, keep_rank: bool) -> None:
    kind = type_proto.WhichOneof("value")
    if kind in ("tensor_type", "sparse_tensor_type"):
        tensor = getattr(type_proto, kind)
        if keep_rank and tensor.HasField("shape"):
            for dim in tensor.shape.dim:
                dim.Clear()
        else:
            tensor.ClearField("shape")
    elif kind in ("sequence_type", "optional_type"):
        _clear_shape(getattr(type_proto, kind).elem_type, keep_rank)
    elif kind == "map_type":
        _clear_shape(type_proto.map_type.value_type, keep_rank)


def _context_names(node: onnx.NodeProto) -> set[str]:
    """What re-running `node` alone needs: its inputs and the outer values its bodies use or annotate."""
    names = {i for i in node.input if i}
    for body in bodies(node):
        names |= _outer_names(body)
    return names


def _outer_names(graph: GraphProto) -> set[str]:
    """Names a body (or a body nested in it) uses or annotates without defining them."""
    defined = {i.name for i in graph.input} | set(initializer_names(graph))
    defined |= {o for node in graph.node for o in node.output}
    used = {i for node in graph.node for i in node.input} | set(scope_annotations(graph))
    used |= {o.name for o in graph.output}
    for node in graph.node:
        for body in bodies(node):
            used |= _outer_names(body)
    return {name for name in used if name} - defined


def _check_node_on_reference(model: ModelProto, node: onnx.NodeProto, context: dict, binder: Binder) -> dict:
    """Run one node alone on the reference evaluator so its bodies' values are checked; its outputs."""
    inputs = [onnx.ValueInfoProto(name=name) for name in context]  # untyped: nothing to check here
    outputs = [onnx.ValueInfoProto(name=name) for name in node.output if name]
    alone = onnx.helper.make_graph([node], "alone", inputs, outputs)
    opsets = {d.domain: d.version for d in model.opset_import}
    evaluator = CheckingEvaluator(alone, opsets=opsets, functions=list(model.functions))
    try:
        results = _run_checking(evaluator, context, _Run(binder, stop_after_entry=False))
    except Exception as error:
        raise ModelRunError(
            f"the onnx reference evaluator could not run {node_label(node)}, which ONNX Runtime ran, "
            f"so its bodies cannot be checked: {error}", node=node_label(node)
        ) from error
    return dict(zip([o.name for o in outputs], results or ()))


def _same_shapes(node: onnx.NodeProto, reference: dict, runtime: dict) -> None:
    """Body checks are only sound if the reference ran the node as Runtime did: same output shapes."""
    differ = [
        f"{name!r}: reference {shape_of(reference[name])}, Runtime {shape_of(runtime[name])}"
        for name in reference
        if name in runtime and shape_of(reference[name]) != shape_of(runtime[name])
    ]
    if differ:
        raise ModelRunError(
            f"the onnx reference evaluator and ONNX Runtime disagree on the outputs of {node_label(node)} "
            f"({'; '.join(differ)}), so its bodies cannot be checked; engine='reference' checks the "
            "whole model on the reference evaluator"
        )


# --- Reference evaluator ----------------------------------------------------------------------


def check_on_reference(model: ModelProto, feeds: dict[str, np.ndarray], binder: Binder) -> None:
    """Run the whole model on the reference evaluator, checking each value as it appears. Any
    failure of the evaluator (its TypeError, KeyError, ZeroDivisionError...) is a ModelRunError
    naming the node it ran, never a traceback of the evaluator's own."""
    try:
        evaluator = CheckingEvaluator(model)
    except Exception as error:  # an op it does not know, an attribute it cannot take
        raise ModelRunError(f"the onnx reference evaluator could not load the model: "
                            f"{type(error).__name__}: {_short(error)}") from error
    try:
        _run_checking(evaluator, feeds, _Run(binder, stop_after_entry=True))
    except (ModelRunError, AnnotationViolation):
        raise
    except Exception as error:
        raise ModelRunError(f"the onnx reference evaluator could not run the model: "
                            f"{type(error).__name__}: {_short(error)}") from error


def _short(error: BaseException, limit: int = 300) -> str:
    text = " ".join(str(error).split())
    return text if len(text) <= limit else text[:limit] + "..."


@dataclass
class _Frame:
    """A control-flow node being run: its label, op type and how many times a body started."""

    label: str
    op_type: str
    runs: int = 0


@dataclass
class _Run:
    """The check in progress, shared by every evaluator (main graph and bodies) of one run."""

    binder: Binder
    stop_after_entry: bool
    stack: list[_Frame] = field(default_factory=list)
    muted: int = 0  # > 0 inside a model-local function: Runtime inlines those, so neither engine checks them


class _PreconditionBroken(Exception):
    """Stops the reference run once a graph input breaks its annotation."""


_ACTIVE: ContextVar[_Run | None] = ContextVar("annotation_check", default=None)


def _run_checking(evaluator: ReferenceEvaluator, feeds: dict, run: _Run) -> list | None:
    """Run `evaluator` with `run` active; its outputs, or None when a precondition stopped it."""
    token = _ACTIVE.set(run)
    try:
        return evaluator.run(None, feeds)
    except _PreconditionBroken:
        return None  # the faults are in the binder
    finally:
        _ACTIVE.reset(token)


class CheckingEvaluator(ReferenceEvaluator):
    """A ReferenceEvaluator that reports every value of every graph it runs to the active check.

    Bodies get this class too: the reference builds them with `self.__class__`.
    """

    def _init(self) -> None:
        super()._init()
        graph = self.onnx_graph_ if isinstance(self.onnx_graph_, GraphProto) else None
        self.notes_ = scope_annotations(graph) if graph is not None else {}
        self.graph_name_ = graph.name if graph is not None else ""
        self.entry_order_ = [i.name for i in graph.input] if graph is not None else []
        for node in self.rt_nodes_:
            node.run = _reporting(node, node.run, self)  # an instance attribute shadows OpRun.run

    def run(self, output_names, feed_inputs, attributes=None, **kwargs):
        active = _ACTIVE.get()
        if active is not None and active.stack:
            active.stack[-1].runs += 1
        if active is not None and self.notes_ and not active.muted:
            values = {**self.rt_inits_, **feed_inputs}
            shapes = {n: shape_of(v) for n, v in values.items() if shape_of(v) is not None}
            _check_entry(self.entry_order_, shapes, self.notes_, active.binder, self.scope_(active))
            if active.stop_after_entry and not active.stack and active.binder.faults:
                raise _PreconditionBroken
        return super().run(output_names, feed_inputs, attributes, **kwargs)

    def scope_(self, active: _Run) -> str:
        """'' in the main graph; " in body 'b' of Loop 'l', iteration 2" inside a body."""
        if not active.stack:
            return ""
        frame = active.stack[-1]
        name = f" {self.graph_name_!r}" if self.graph_name_ else ""
        text = f" in body{name} of {frame.label}"
        return text + (f", iteration {frame.runs - 1}" if frame.op_type in ("Loop", "Scan") else "")


def _reporting(node, run, evaluator: CheckingEvaluator):
    """Wrap one node's `run` so its outputs are checked the moment it returns them."""
    proto = node.onnx_node

    def run_and_report(*args, **kwargs):
        active = _ACTIVE.get()
        if active is None:
            return run(*args, **kwargs)
        function = isinstance(node, OpFunction)
        active.stack.append(_Frame(node_label(proto), proto.op_type))
        active.muted += function
        try:
            outputs = run(*args, **kwargs)
        except (ModelRunError, AnnotationViolation, _PreconditionBroken):
            raise
        except Exception as error:  # the evaluator's own failure, named by the node it ran
            raise ModelRunError(f"the onnx reference evaluator failed at {node_label(proto)}: "
                                f"{type(error).__name__}: {_short(error)}",
                                node=node_label(proto)) from error
        finally:
            active.stack.pop()
            active.muted -= function
        scope = evaluator.scope_(active)
        for name, value in zip(proto.output, outputs):
            if name in evaluator.notes_ and shape_of(value) is not None and not active.muted:
                active.binder.check_all(name, shape_of(value), evaluator.notes_[name], scope)
        return outputs

    return run_and_report


