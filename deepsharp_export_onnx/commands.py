"""`deepsharp inspect` and `deepsharp check`: read an ONNX file's annotations, statically and in a run.

Exit status: 0 = fine, 1 = an annotation was violated (or the run failed), 2 = usage error.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections import Counter

import numpy as np
import onnx

from deepsharp_export_onnx.check.annotations import (
    ENGINES,
    declared_dims,
    initializer_names,
    load_model,
    run_annotation_check,
    scope_annotations,
)
from deepsharp_export_onnx.errors import AnnotationViolation, ModelRunError
from deepsharp_export_onnx.inference import infer_shapes

DEFAULT_SIZE = 2  # size of a symbolic or anonymous input axis that --dim does not set
INTEGER_HIGH = 2  # made integer inputs are drawn from [0, INTEGER_HIGH): valid indices into any axis of size >= 2


class UsageError(Exception):
    """A problem with the command line or the files it names (exit status 2)."""


def check_main(argv: list[str]) -> int:
    """`deepsharp check model.onnx [--dim N=SIZE ...] [--inputs feeds.npz] [--seed N] [--engine E]`.

    Makes inputs that satisfy the input annotations (each symbol from --dim, else 2; each anonymous
    axis 2; floats standard normal, integers 0 or 1, from --seed) or reads them from an .npz, runs
    the annotation checker and prints the binding map or the violation. Exit 0, 1 or 2.

    Example:
        $ deepsharp check mlp.onnx --dim batch=3
    """
    parser = _check_parser()
    try:
        args = parser.parse_args(argv)
        model = _read_model(args.model)
        feeds, origin = _feeds(model.graph, args)
    except SystemExit as stop:  # argparse: --help (0) or a bad option (2), already printed
        return int(stop.code or 0)
    except UsageError as error:
        print(f"deepsharp check: {error}", file=sys.stderr)
        return 2
    print(f"model: {args.model}")
    print(f"inputs ({origin}):")
    for name, value in feeds.items():
        print(f"  {name}  {value.dtype}  {tuple(value.shape)}")
    return _run_check(model, feeds, args.engine)


def _check_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="deepsharp check", description="Run an ONNX file and check its shape annotations.")
    parser.add_argument("model", help="path to the .onnx file")
    parser.add_argument("--dim", action="append", default=[], metavar="SYMBOL=SIZE", help=f"size of an input symbol (default {DEFAULT_SIZE}); repeatable")
    parser.add_argument("--inputs", metavar="FEEDS.npz", help="read the inputs from an .npz (one array per graph input) instead of making them")
    parser.add_argument("--seed", type=_seed, default=0, help="seed of the made inputs (default 0)")
    parser.add_argument("--engine", choices=ENGINES, default="auto", help="default auto: ONNX Runtime, reference evaluator for annotated bodies")
    return parser


def _seed(text: str) -> int:
    """A seed numpy's generator takes: a non-negative integer (argparse reports the rest, exit 2)."""
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"must be a non-negative integer, received {text!r}")
    return int(text)


def _run_check(model: onnx.ModelProto, feeds: dict, engine: str) -> int:
    try:
        report = run_annotation_check(model, feeds, engine=engine)
    except AnnotationViolation as violation:
        print(f"engine: {violation.engine}")
        print(f"violation: {violation}")
        return 1
    except ModelRunError as error:  # the model did not run: Runtime's error, naming the node
        print(f"error: {error}")
        if error.node:
            print(f"node: {error.node}")
        return 1
    except ValueError as error:  # feeds that do not match the graph, an engine that cannot apply
        print(f"deepsharp check: {error}", file=sys.stderr)
        return 2
    nodes = f"; bodies of {', '.join(report.reference_nodes)} on the reference evaluator" if report.reference_nodes else ""
    print(f"engine: {report.engine} ({report.checks} annotation checks{nodes})")
    if report.fallback:
        print(f"  (fell back to the reference evaluator: {report.fallback})")
    bindings = ", ".join(f"{name}={size}" for name, size in report.bindings.items())
    print(f"bindings: {bindings or '(no symbols)'}")
    print("ok: every shape annotation held in this run")
    return 0


def _read_model(path: str) -> onnx.ModelProto:
    try:
        return load_model(path)
    except Exception as error:  # a missing file, or bytes that are not a model
        raise UsageError(f"cannot read the model {path!r}: {error}") from error


def _feeds(graph: onnx.GraphProto, args: argparse.Namespace) -> tuple[dict[str, np.ndarray], str]:
    """The inputs to run on, and a line saying where they came from."""
    if args.inputs:
        if args.dim:
            raise UsageError("--dim sizes made inputs; it cannot be combined with --inputs")
        try:
            with np.load(args.inputs, allow_pickle=False) as stored:
                return {name: stored[name] for name in stored.files}, f"read from {args.inputs}"
        except Exception as error:
            raise UsageError(f"cannot read the inputs {args.inputs!r}: {error}") from error
    dims = _parse_dims(args.dim)
    feeds = make_feeds(graph, dims, np.random.default_rng(args.seed))
    symbols = ", ".join(f"{k}={v}" for k, v in dims.items())
    return feeds, f"made from the annotations, seed {args.seed}" + (f"; {symbols}" if symbols else "")


def _parse_dims(items: list[str]) -> dict[str, int]:
    dims: dict[str, int] = {}
    for item in items:
        name, _, size = item.partition("=")
        if not name or not size.isdigit():
            raise UsageError(f"--dim expects SYMBOL=SIZE with a non-negative integer size; received {item!r}")
        dims[name] = int(size)
    return dims


def make_feeds(graph: onnx.GraphProto, dims: dict[str, int], rng: np.random.Generator) -> dict[str, np.ndarray]:
    """One array per graph input without a default, satisfying its annotation.

    Symbol N -> dims[N], else the size an annotated initializer gives N, else DEFAULT_SIZE;
    anonymous axis -> DEFAULT_SIZE; constant k -> k.
    Floats are standard normal, integers in [0, INTEGER_HIGH), booleans fair coin flips.

    Example:
        >>> make_feeds(graph_with_x_batch_by_4, {"batch": 3}, np.random.default_rng(0))["x"].shape
        (3, 4)
    """
    defaults = set(initializer_names(graph))
    needed = [info for info in graph.input if info.name not in defaults]
    symbols = {d for info in needed for d in (declared_dims(info.type) or ()) if isinstance(d, str)}
    unknown = sorted(set(dims) - symbols)
    if unknown:
        known = ", ".join(sorted(symbols)) or "none"
        raise UsageError(f"--dim {', '.join(unknown)}: no graph input declares this symbol; input symbols: {known}")
    sizes = _sizes_fixed_by_initializers(graph) | dims
    return {info.name: _made_input(info, sizes, rng) for info in needed}


def _sizes_fixed_by_initializers(graph: onnx.GraphProto) -> dict[str, int]:
    """Symbols an annotated initializer already decides (say w [in, units] holding a 4x3 array)."""
    sizes: dict[str, int] = {}
    notes = scope_annotations(graph)
    for tensor in graph.initializer:
        for annotation in notes.get(tensor.name, ()):
            if len(annotation.dims) == len(tensor.dims):
                for dim, size in zip(annotation.dims, tensor.dims):
                    if isinstance(dim, str):
                        sizes.setdefault(dim, int(size))
    return sizes


MADE_ELEMENTS = 1 << 24  # a made input of more values is a declaration, not a test


def _made_input(info: onnx.ValueInfoProto, dims: dict[str, int], rng: np.random.Generator) -> np.ndarray:
    declared = declared_dims(info.type)
    if declared is None:
        raise UsageError(f"input {info.name!r} declares no shape to make a value from; pass --inputs feeds.npz")
    if any(isinstance(d, int) and d < 0 for d in declared):
        raise UsageError(f"input {info.name!r} declares a negative size {declared}; pass --inputs feeds.npz")
    shape = tuple(d if isinstance(d, int) else dims.get(d, DEFAULT_SIZE) if isinstance(d, str) else DEFAULT_SIZE for d in declared)
    try:
        dtype = np.dtype(onnx.helper.tensor_dtype_to_np_dtype(info.type.tensor_type.elem_type))
    except (KeyError, TypeError) as error:
        raise UsageError(f"input {info.name!r} has no element type numpy can make; pass --inputs feeds.npz") from error
    count = math.prod(shape)
    if count > MADE_ELEMENTS:
        raise UsageError(f"input {info.name!r} would be made of {count:,} values (shape {shape}), "
                         f"more than check makes ({MADE_ELEMENTS:,}); pass --dim with smaller "
                         f"sizes or --inputs feeds.npz")
    if dtype.kind == "f" or dtype.kind == "c":
        return rng.standard_normal(shape).astype(dtype)
    if dtype.kind in "iu":
        return rng.integers(0, INTEGER_HIGH, shape).astype(dtype)
    if dtype.kind == "b":
        return rng.random(shape) < 0.5
    raise UsageError(f"input {info.name!r} has element type {dtype}, which check cannot make; pass --inputs feeds.npz")


# --- inspect ----------------------------------------------------------------------------------


def inspect_main(argv: list[str]) -> int:
    """`deepsharp inspect model.onnx`: what the file declares, and where inference contradicts it.

    Prints the IR version, opset imports, inputs and outputs with their annotated shapes, node
    counts by type (bodies included), initializer count and bytes, and every definite conflict
    between a declared annotation of the main graph and what strict shape inference (with data
    propagation) derives from the input annotations. Exit 0 (2 if the file cannot be read).

    Example:
        $ deepsharp inspect mlp.onnx
    """
    parser = argparse.ArgumentParser(prog="deepsharp inspect", description="Print an ONNX file's inputs, outputs, opset, nodes.")
    parser.add_argument("model", help="path to the .onnx file")
    try:
        args = parser.parse_args(argv)
        model = _read_model_header(args.model)
    except SystemExit as stop:
        return int(stop.code or 0)
    except UsageError as error:
        print(f"deepsharp inspect: {error}", file=sys.stderr)
        return 2
    print("\n".join(describe(model, args.model)))
    return 0


def _read_model_header(path: str) -> onnx.ModelProto:
    """The model without its external tensor data: inspect needs only the sizes. A regular file
    only (a FIFO is refused without blocking), not empty, its names UTF-8 text."""
    from deepsharp.files import read_regular
    from deepsharp_export_onnx.errors import ImportRefused
    from deepsharp_export_onnx.read.source import parse

    try:
        model = parse(read_regular(path, lambda reason: ImportRefused([reason])), path)
    except FileNotFoundError:
        raise UsageError(f"cannot read the model {path!r}: no such file") from None
    except ImportRefused as refusal:
        raise UsageError(f"cannot read the model {path!r}: {'; '.join(refusal.faults)}") from None
    if not model.graph.node and not model.graph.output:
        raise UsageError(f"cannot read the model {path!r}: it holds no graph")
    return model


def describe(model: onnx.ModelProto, path: str) -> list[str]:
    """The lines `deepsharp inspect` prints."""
    graph = model.graph
    producer = f", producer {model.producer_name!r} {model.producer_version}".rstrip() if model.producer_name else ""
    opsets = ", ".join(f"{d.domain or 'ai.onnx'} {d.version}" for d in model.opset_import)
    lines = [f"model: {path}", f"IR version: {model.ir_version}{producer}", f"opset imports: {opsets}"]
    lines += ["inputs:"] + [f"  {i.name}  {_type_text(i.type)}" for i in graph.input]
    lines += ["outputs:"] + [f"  {o.name}  {_type_text(o.type)}" for o in graph.output]
    lines.append(f"value_info annotations: {sum(declared_dims(v.type) is not None for v in graph.value_info)}")
    counts, in_bodies = _node_counts(graph)
    by_type = ", ".join(f"{op} {n}" for op, n in sorted(counts.items(), key=lambda item: (-item[1], item[0])))
    where = f", {in_bodies} of them in subgraph bodies" if in_bodies else ""
    lines.append(f"nodes ({sum(counts.values())}{where}): {by_type or 'none'}")
    tensors = list(graph.initializer) + list(graph.sparse_initializer)
    sizes = [_tensor_bytes(t) for t in tensors]
    unknown = sum(size is None for size in sizes)
    total = f"{sum(size for size in sizes if size is not None):,} bytes"
    total += f" (and {unknown} of a size the file does not state)" if unknown else ""
    lines.append(f"initializers: {len(tensors)}, {total}")
    return lines + _inference_lines(model)


def _type_text(type_proto: onnx.TypeProto) -> str:
    """'float32 [batch, 4]'; '?' marks an anonymous axis, 'no shape' an unannotated tensor."""
    kind = type_proto.WhichOneof("value")
    if kind != "tensor_type":
        return kind or "untyped"
    elem = type_proto.tensor_type.elem_type
    name = onnx.TensorProto.DataType.Name(elem).lower() if elem in onnx.TensorProto.DataType.values() else str(elem)
    dims = declared_dims(type_proto)
    return f"{name}  " + ("no shape" if dims is None else _dims_text(dims))


def _node_counts(graph: onnx.GraphProto) -> tuple[Counter, int]:
    """Op type -> count over the graph and every body in it; and how many are in bodies."""
    counts, in_bodies = Counter(n.op_type for n in graph.node), 0
    for node in graph.node:
        for attribute in node.attribute:
            for body in [attribute.g] if attribute.type == onnx.AttributeProto.GRAPH else attribute.graphs:
                inner, _ = _node_counts(body)
                counts += inner
                in_bodies += sum(inner.values())
    return counts, in_bodies


def _tensor_bytes(tensor: onnx.TensorProto | onnx.SparseTensorProto) -> int | None:
    """Stored size: raw bytes, external length, or elements times item size; None when the file
    does not say (a length that is not a number, an element type ONNX does not define)."""
    from deepsharp_export_onnx.read.source import declared_bytes

    if isinstance(tensor, onnx.SparseTensorProto):
        parts = [_tensor_bytes(tensor.values), _tensor_bytes(tensor.indices)]
        return None if None in parts else sum(parts)
    external = {e.key: e.value for e in tensor.external_data}
    if "length" in external:
        length = external["length"]
        return int(length) if isinstance(length, str) and length.isdigit() and length.isascii() else None
    if tensor.raw_data:
        return len(tensor.raw_data)
    if tensor.data_type == onnx.TensorProto.STRING:
        return sum(len(s) for s in tensor.string_data)
    try:
        return declared_bytes(tensor)
    except ValueError:  # a negative size
        return None


def _inference_lines(model: onnx.ModelProto) -> list[str]:
    header = "shape inference (strict, data propagation)"
    try:
        conflicts = inference_conflicts(model)
    except Exception as error:  # InferenceError, or a checker error strict mode raises first
        return [f"{header} failed: {str(error).strip()}"]
    if not conflicts:
        return [f"{header}: no conflict with the declared annotations"]
    return [f"{header} contradicts {len(conflicts)} declared annotation(s):"] + [f"  {c}" for c in conflicts]


def inference_conflicts(model: onnx.ModelProto) -> list[str]:
    """Definite contradictions between the main graph's annotations and strict shape inference.

    Inference starts from the graph-input annotations (the preconditions) with value_info and
    output shapes removed, so it cannot merely echo them. Reported: a rank that differs; a
    dim_value that differs from an inferred constant; a symbol inferred as two different
    constants. An inferred symbol or unknown where a constant is declared is not a contradiction.
    """
    stripped = onnx.ModelProto()
    stripped.CopyFrom(model)
    del stripped.graph.value_info[:]
    for output in stripped.graph.output:
        if output.type.WhichOneof("value") == "tensor_type":
            output.type.tensor_type.ClearField("shape")
    inferred_graph = infer_shapes(stripped, strict_mode=True, data_prop=True).graph
    inferred = {v.name: declared_dims(v.type) for v in (*inferred_graph.value_info, *inferred_graph.output)}
    inputs = {i.name for i in model.graph.input}
    inferred.update({t.name: tuple(t.dims) for t in model.graph.initializer if t.name not in inputs})
    conflicts: list[str] = []
    sites: dict[str, dict[int, tuple[str, int]]] = {}  # symbol -> inferred size -> (value, axis)
    for name, annotations in scope_annotations(model.graph).items():
        for annotation in annotations:
            if inferred.get(name) is not None and annotation.where != "graph input":
                conflicts += _compare(name, annotation, inferred[name], sites)
    for symbol, sizes in sites.items():
        if len(sizes) > 1:
            seen = " and ".join(f"{size} at value {v!r} axis {a}" for size, (v, a) in sorted(sizes.items()))
            conflicts.append(f"symbol {symbol!r}: inference gives {seen}")
    return conflicts


def _compare(name: str, annotation, inferred: tuple, sites: dict) -> list[str]:
    declared, head = annotation.dims, f"value {name!r} ({annotation.where})"
    if len(declared) != len(inferred):
        return [f"{head}: declared rank {len(declared)} {_dims_text(declared)}, inference gives rank {len(inferred)} {_dims_text(inferred)}"]
    found = []
    for axis, (want, got) in enumerate(zip(declared, inferred)):
        if isinstance(want, int) and isinstance(got, int) and want != got:
            found.append(f"{head}, axis {axis}: declared {want}, inference gives {got}")
        elif isinstance(want, str) and isinstance(got, int):
            sites.setdefault(want, {}).setdefault(got, (name, axis))
    return found


def _dims_text(dims: tuple) -> str:
    return "[" + ", ".join("?" if d is None else str(d) for d in dims) + "]"


__all__ = ["check_main", "describe", "inference_conflicts", "inspect_main", "make_feeds"]
