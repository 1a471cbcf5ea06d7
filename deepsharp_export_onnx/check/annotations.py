"""Run-time check of ONNX shape annotations (the binding-map semantics).

The rule (ONNX, "Semantics of Shape Annotations"): in one run, every value carrying an annotation
(a graph input, graph output or `value_info` entry, in the main graph or in an If/Loop/Scan body)
is checked when it becomes available, against a binding map beta that starts empty:

- the type has no shape -> nothing is asserted;
- the declared rank differs from the produced rank -> violation;
- axis `dim_value` k -> the produced size must be k;
- axis `dim_param` N -> if beta(N) is bound the size must equal it, else beta(N) := size;
- axis with neither -> nothing is asserted.

Symbol names are not scoped: N inside a body is the same N as in the main graph, and a Loop or
Scan body is checked on every iteration. Graph-input annotations are preconditions (checked
before anything runs; a broken one stops the run); the others are assertions on the run.

Decisions where the seed leaves room (the onnx reference evaluator decides the same way):
- an initializer that is also a graph input (always so below IR 4) is a model input with a
  default: it is checked as an input, against the fed value if fed, else the initializer;
- an initializer that is not a graph input is checked when the run starts against any
  `value_info` annotation it has: it is a constant available from the start, exactly like the
  output of a `Constant` node (which the seed checks), and the two forms are interchangeable;
- an annotation written in a body is checked in that body, each time the body runs, including
  an annotation on a value the body takes from an enclosing graph;
- a value with several annotations (say a graph output also listed in `value_info`) is checked
  against each of them, in the order graph input, value_info, graph output;
- only tensor types are checked; element types are not (they are not shape annotations);
  annotations inside model-local functions are not checked.

Main-graph nodes are checked in graph order (a topological order); the verdict does not depend
on it, only which occurrence of a symbol binds it. After the inputs, every violation in the run
is collected and raised once: the first is the error, the rest are in its `also`.
"""

from __future__ import annotations

import importlib.util
import os
import re
from dataclasses import dataclass
from typing import Literal, NamedTuple

import numpy as np
import onnx
from onnx import AttributeProto, GraphProto, ModelProto, TypeProto

from deepsharp_export_onnx.errors import AnnotationViolation, BoundBy, ModelRunError

Engine = Literal["auto", "onnxruntime", "reference"]
ENGINES: tuple[str, ...] = ("auto", "onnxruntime", "reference")
Dim = int | str | None


class Annotation(NamedTuple):
    """One declared shape: `where` it is written and its dims (int, symbol name, None = anonymous)."""

    where: str
    dims: tuple[Dim, ...]


@dataclass(frozen=True)
class AnnotationReport:
    """What a passing check found.

    bindings: the binding map beta at the end of the run (symbol -> size).
    engine: "onnxruntime", "onnxruntime+reference" (bodies of `reference_nodes` were re-run on
        the onnx reference evaluator to see inside them) or "reference".
    checks: how many (value, annotation) checks were made.
    reference_nodes: the main-graph nodes whose annotated bodies needed the reference evaluator.
    fallback: why engine "auto" fell back to the reference evaluator (Runtime's error), or "".
    """

    bindings: dict[str, int]
    engine: str
    checks: int
    reference_nodes: tuple[str, ...] = ()
    fallback: str = ""


def check_annotations(model: ModelProto | bytes | str | os.PathLike, feeds: dict, *, engine: Engine = "auto") -> dict[str, int]:
    """Run `model` on `feeds`, check every shape annotation, return the binding map.

    The rule is in the module docstring. Raises `AnnotationViolation` (naming the value, axis,
    declaration, produced size and, for a symbol, the value that bound it) if any check fails,
    and ValueError if `feeds` miss a required graph input or name one the graph does not have.

    Args:
        model: a ModelProto, its serialized bytes, or a path to a .onnx file.
        feeds: graph input name -> array. Inputs that have an initializer may be left out.
        engine: "auto" (ONNX Runtime, plus the reference evaluator for nodes with annotated
            bodies; the reference alone if Runtime is not installed or cannot run the model),
            "onnxruntime" (refuses models with annotated bodies) or "reference".

    Example:
        >>> check_annotations("mlp.onnx", {"x": np.zeros((3, 4), np.float32)})
        {'batch': 3}
    """
    return run_annotation_check(model, feeds, engine=engine).bindings


def run_annotation_check(model: ModelProto | bytes | str | os.PathLike, feeds: dict, *, engine: Engine = "auto") -> AnnotationReport:
    """`check_annotations`, returning an `AnnotationReport` that also says which engine ran.

    Example:
        >>> run_annotation_check("mlp.onnx", {"x": np.zeros((3, 4), np.float32)}).engine
        'onnxruntime'
    """
    if engine not in ENGINES:
        raise ValueError(f"engine must be one of {', '.join(ENGINES)}; received {engine!r}")
    model = load_model(model)
    feeds = validated_feeds(model.graph, feeds)
    _refuse_invalid(model)
    binder = Binder()
    hybrid = [node for node in model.graph.node if has_annotated_body(node)]
    if engine == "auto" and importlib.util.find_spec("onnxruntime") is None:
        engine = "reference"  # onnxruntime is an optional dependency
    if engine == "onnxruntime" and hybrid:
        raise ValueError(
            "engine='onnxruntime' cannot see values inside subgraph bodies, and these nodes have "
            f"annotated bodies: {', '.join(node_label(n) for n in hybrid)}; use engine='auto' or 'reference'"
        )
    # Imported here: the engines import this module for the rule and the annotation reader.
    from deepsharp_export_onnx.check import engines

    fallback, refused = "", None
    if engine != "reference":
        try:
            _reporting_faults(engines.check_on_runtime, model, feeds, binder, _engine_name(engine, hybrid))
        except engines.RuntimeRefused as refusal:
            if engine == "onnxruntime":
                raise
            # e.g. a body annotation of the wrong rank: the stripped copy keeps body ranks.
            fallback, engine, binder, refused = str(refusal), "reference", Binder(), refusal
    used = _engine_name(engine, hybrid)
    if engine == "reference":
        try:
            _reporting_faults(engines.check_on_reference, model, feeds, binder, used)
        except ModelRunError as error:
            if refused is None:
                raise
            # Neither engine ran it: Runtime's error is the clearer news, the evaluator's follows.
            raise ModelRunError(f"{refused}\nthe onnx reference evaluator could not run it either: "
                                f"{error}", node=refused.node or error.node) from error
    if binder.faults:
        raise binder.violation(used)
    labels = tuple(node_label(n) for n in hybrid) if used == "onnxruntime+reference" else ()
    return AnnotationReport(dict(binder.bindings), used, binder.checks, labels, fallback)


def _refuse_invalid(model: ModelProto) -> None:
    """A graph ONNX Runtime refuses or reads differently (a value produced twice, a 0/1 flag
    holding 2, an axis out of range, sizes past the limits) is not run at all: the permissive
    reference evaluator would otherwise run it, slowly or wrongly, in Runtime's place."""
    from deepsharp_export_onnx.read.validate import graph_faults

    faults = graph_faults(model)
    if faults:
        node = re.search(r"node '([^']*)' \((\w+)\)", faults[0])
        raise ModelRunError("the model is not valid ONNX, so it is not run:\n"
                            + "\n".join(f"  - {fault}" for fault in faults),
                            node=f"{node.group(2)} {node.group(1)!r}" if node else "")


def _engine_name(engine: str, hybrid: list) -> str:
    if engine == "reference":
        return "reference"
    return "onnxruntime+reference" if hybrid else "onnxruntime"


def _reporting_faults(check, model: ModelProto, feeds: dict, binder: Binder, engine: str) -> None:
    """Run one engine; if the run fails after a violation was seen, the violation is the news."""
    try:
        check(model, feeds, binder)
    except Exception as error:
        if binder.faults:
            raise binder.violation(engine) from error
        raise


def check_inputs(model: ModelProto | bytes | str | os.PathLike, feeds: dict) -> dict[str, int]:
    """Check only the preconditions: each fed graph input against its graph-input annotation.

    Nothing runs. Same rule and wording as `check_annotations` (every broken input is reported
    in one AnnotationViolation); ValueError for missing or unknown feeds. Returns the bindings.

    Example:
        >>> check_inputs("mlp.onnx", {"x": np.zeros((3, 4), np.float32)})
        {'batch': 3}
    """
    model = load_model(model)
    feeds = validated_feeds(model.graph, feeds)
    notes, binder = scope_annotations(model.graph), Binder()
    for info in model.graph.input:
        if info.name in feeds:
            preconditions = [a for a in notes.get(info.name, ()) if a.where == "graph input"]
            binder.check_all(info.name, feeds[info.name].shape, preconditions)
    if binder.faults:
        raise binder.violation()
    return dict(binder.bindings)


class Binder:
    """The binding map beta of one run and the violations found so far (seed rules 1-3).

    Example:
        >>> b = Binder(); b.check("x", (3, 4), Annotation("graph input", ("batch", 4)))
        >>> b.bindings
        {'batch': 3}
    """

    def __init__(self) -> None:
        self.bindings: dict[str, int] = {}
        self.bound_by: dict[str, BoundBy] = {}
        self.faults: list[AnnotationViolation] = []
        self.checks = 0

    def check_all(self, value: str, shape: tuple[int, ...], annotations: list[Annotation], scope: str = "") -> None:
        """Check one produced shape against each annotation the value carries in this scope."""
        for annotation in annotations:
            self.check(value, shape, annotation, scope)

    def check(self, value: str, shape: tuple[int, ...], annotation: Annotation, scope: str = "") -> None:
        """Rank first (rule 2), then each axis (rule 3); a fault is recorded, not raised."""
        self.checks += 1
        shape = tuple(int(s) for s in shape)
        where = annotation.where + scope
        if len(annotation.dims) != len(shape):
            self._fault(value, where, None, annotation.dims, shape, shape)
            return
        for axis, (dim, size) in enumerate(zip(annotation.dims, shape)):
            self._check_axis(value, where, axis, dim, size, shape)

    def _check_axis(self, value: str, where: str, axis: int, dim: Dim, size: int, shape: tuple[int, ...]) -> None:
        if isinstance(dim, int):
            if dim != size:
                self._fault(value, where, axis, dim, size, shape)
        elif isinstance(dim, str):
            if dim not in self.bindings:
                self.bindings[dim] = size
                self.bound_by[dim] = BoundBy(value, where, axis, size)
            elif self.bindings[dim] != size:
                self._fault(value, where, axis, dim, size, shape, self.bound_by[dim])
        # dim is None: an anonymous axis asserts nothing.

    def _fault(self, value, where, axis, declared, actual, shape, bound_by=None) -> None:
        self.faults.append(
            AnnotationViolation(
                value=value, where=where, axis=axis, declared=declared,
                actual=actual, shape=shape, bound_by=bound_by,
            )
        )

    def violation(self, engine: str = "") -> AnnotationViolation:
        """The first fault as the error, carrying the later ones in `also`."""
        first = self.faults[0]
        return AnnotationViolation(
            value=first.value, where=first.where, axis=first.axis, declared=first.declared, actual=first.actual,
            shape=first.shape, bound_by=first.bound_by, also=tuple(self.faults[1:]), engine=engine,
        )


def scope_annotations(graph: GraphProto) -> dict[str, list[Annotation]]:
    """Name -> the shape annotations written in this graph (not its bodies), in check order.

    Only tensor types with a `shape` field count: a type without one asserts nothing.
    """
    found: dict[str, list[Annotation]] = {}
    for where, infos in (("graph input", graph.input), ("value_info", graph.value_info), ("graph output", graph.output)):
        for info in infos:
            dims = declared_dims(info.type)
            if dims is not None:
                found.setdefault(info.name, []).append(Annotation(where, dims))
    return found


def declared_dims(type_proto: TypeProto) -> tuple[Dim, ...] | None:
    """The dims a tensor type declares (int / symbol / None for anonymous), or None with no shape."""
    if type_proto.WhichOneof("value") != "tensor_type" or not type_proto.tensor_type.HasField("shape"):
        return None
    return tuple(_dim(d) for d in type_proto.tensor_type.shape.dim)


def _dim(dim: onnx.TensorShapeProto.Dimension) -> Dim:
    which = dim.WhichOneof("value")
    if which == "dim_value":
        return int(dim.dim_value)
    if which == "dim_param":
        return dim.dim_param
    return None


def bodies(node: onnx.NodeProto) -> list[GraphProto]:
    """The subgraphs a node carries (If branches, Loop and Scan bodies, any graph attribute)."""
    found: list[GraphProto] = []
    for attribute in node.attribute:
        if attribute.type == AttributeProto.GRAPH:
            found.append(attribute.g)
        elif attribute.type == AttributeProto.GRAPHS:
            found.extend(attribute.graphs)
    return found


def has_annotated_body(node: onnx.NodeProto) -> bool:
    """True if a body of `node`, or a body nested in one, carries any shape annotation."""
    return any(scope_annotations(g) or any(has_annotated_body(n) for n in g.node) for g in bodies(node))


def node_label(node: onnx.NodeProto) -> str:
    """How messages name a node: "Loop 'loop1'", or by its first output when it has no name."""
    if node.name:
        return f"{node.op_type} {node.name!r}"
    return f"{node.op_type} (producing {node.output[0]!r})" if node.output else node.op_type


def initializer_names(graph: GraphProto) -> list[str]:
    """Dense and sparse initializers of `graph`, in file order."""
    return [t.name for t in graph.initializer] + [s.values.name for s in graph.sparse_initializer]


def load_model(model: ModelProto | bytes | str | os.PathLike) -> ModelProto:
    """A ModelProto from itself, serialized bytes, or a path: a regular file (a FIFO is refused
    without blocking), its external data read from its folder and confined to it, as the
    importer does (`read/source.py`); bytes or a ModelProto naming external data are refused,
    so Runtime is never handed locations to resolve against the working folder. Anything else
    is a ModelUnreadable naming the fault."""
    from deepsharp_export_onnx.errors import ImportRefused, ModelUnreadable
    from deepsharp_export_onnx.read.source import load_external_data, model_and_folder

    try:
        proto, folder = model_and_folder(model, None)
        load_external_data(proto, folder)
    except ImportRefused as refusal:
        raise ModelUnreadable(refusal.faults) from None
    if not proto.graph.node and not proto.graph.output:
        raise ModelUnreadable(["it holds no graph (an empty file parses as an empty model)"])
    return proto


def validated_feeds(graph: GraphProto, feeds: dict) -> dict[str, np.ndarray]:
    """Feeds as arrays, after checking they name every required graph input and nothing else.

    A graph input with an initializer of the same name has a default and may be left out.
    """
    inputs = [i.name for i in graph.input]
    defaults = set(initializer_names(graph))
    missing = [i for i in graph.input if i.name not in feeds and i.name not in defaults]
    extra = [name for name in feeds if name not in inputs]
    if missing or extra:
        faults = [f"missing graph input {i.name!r} {_type_text(i.type)}" for i in missing]
        faults += [f"{name!r} is not a graph input" for name in extra]
        known = ", ".join(f"{n!r}" + (" (has a default)" if n in defaults else "") for n in inputs)
        raise ValueError(f"feeds do not match the graph inputs: {'; '.join(faults)}. Graph inputs: {known or 'none'}")
    return {name: np.asarray(value) for name, value in feeds.items()}


def _type_text(type_proto: TypeProto) -> str:
    """'float32 [batch, 3]' for a tensor type; the type kind otherwise."""
    if type_proto.WhichOneof("value") != "tensor_type":
        return f"({type_proto.WhichOneof('value') or 'untyped'})"
    elem_type = type_proto.tensor_type.elem_type
    dtype = onnx.TensorProto.DataType.Name(elem_type).lower() if elem_type in onnx.TensorProto.DataType.values() else elem_type
    dims = declared_dims(type_proto)
    shape = "unknown shape" if dims is None else "[" + ", ".join("?" if d is None else str(d) for d in dims) + "]"
    return f"({dtype} {shape})"


@dataclass(frozen=True)
class InputContract:
    """A graph input's annotation kept as a precondition of calling a network read from the
    graph: a batch that breaks it raises the AnnotationViolation `check_inputs` would.

    Example:
        >>> InputContract("input", ("batch", 14))(np.zeros((3, 13), np.float32))
        Traceback (most recent call last):
        AnnotationViolation: value 'input' (graph input), axis 1: declared 14; the run produced 13 ...
    """

    value: str
    dims: tuple[Dim, ...]

    def __call__(self, batch: np.ndarray) -> None:
        binder = Binder()
        binder.check(self.value, tuple(batch.shape), Annotation("graph input", self.dims))
        if binder.faults:
            raise binder.violation()
