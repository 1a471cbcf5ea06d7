"""The importer's boundary: what a graph must be before any reader looks at it.

Refused here, every fault collected and raised once as `ImportRefused`:

- sizes past the limits (nodes, initializers, bodies nested, a tensor's rank), so a small file
  cannot make the importer work for minutes;
- a tensor whose declared shape the bytes present do not fill (or overfill), an unknown element
  type, a negative size: checked before any array is made from it;
- names ONNX Runtime refuses: an initializer named twice, a value produced twice or produced by a
  node while it is a graph input or an initializer, a graph input named twice;
- attributes Runtime refuses or reads differently: a 0/1 flag (`keepdims`, `transA`, ...)
  holding anything else, an axis outside [-rank, rank) or axes named twice (which the readers
  would otherwise wrap with `axis % rank`), a Transpose perm that is not an order of the axes;
- `deepsharp.*` metadata that is not what the exporter writes (features, example shape, the
  training-only layers and settings), so the later steps can take it as written.
"""

from __future__ import annotations

import json
import re
import onnx
from onnx import AttributeProto, TensorProto

from deepsharp.errors import DeepsharpError
from deepsharp.layers.base import parse_spec
from deepsharp.shape import Shape
from deepsharp_export_onnx.errors import ImportRefused
from deepsharp_export_onnx.read.source import ITEMSIZE, declared_bytes, text_faults
from deepsharp_export_onnx.write.export import (
    META_FEATURES, META_SHAPE, META_TRAINING_ONLY, META_TRAINING_SETTINGS,
)
from deepsharp_export_onnx.inference import infer_shapes

MAX_NODES = 100_000
MAX_INITIALIZERS = 100_000
MAX_DEPTH = 8          # bodies nested in bodies
MAX_RANK = 16
MAX_DIM = 1 << 40
LIGHT_BYTES = 4096     # tensors above this keep only their shape in the copy inference sees
FLAGS = {"keepdims", "noop_with_empty_axes", "transA", "transB", "count_include_pad", "ceil_mode",
         "allowzero", "select_last_index", "training_mode", "exclusive", "reverse",
         "linear_before_reset", "input_forget", "is_causal"}
WINDOWS = {"pads", "kernel_shape", "strides", "dilations", "output_padding", "output_shape"}
MAX_WINDOW = 1 << 24
PLACE = re.compile(r"^\d+(\.[A-Za-z_]\w*|\.\d+)*$")


def validate(model: onnx.ModelProto) -> None:
    """Refuse `model` (ImportRefused naming every fault) unless it passes the checks above."""
    faults = graph_faults(model, extra=_metadata)
    if faults:
        raise ImportRefused(faults)


def graph_faults(model: onnx.ModelProto, extra=None) -> list[str]:
    """Every fault of the checks above but the metadata's (`extra` adds more), one line each:
    what the importer and the annotation checker both refuse before running anything."""
    faults = text_faults(model) or _sizes(model.graph, 0)
    if faults:  # past a limit nothing else is worth the time
        return faults
    faults += _tensors(model.graph)
    faults += _names(model.graph)
    faults += _flags(model.graph)
    faults += extra(model) if extra is not None else []
    if not faults:
        faults += _inference(model)
    return faults


def _sizes(graph: onnx.GraphProto, depth: int) -> list[str]:
    if depth > MAX_DEPTH:
        return [f"bodies are nested more than {MAX_DEPTH} deep"]
    faults = []
    if len(graph.node) > MAX_NODES:
        faults.append(f"{len(graph.node):,} nodes, more than the {MAX_NODES:,} read")
    if len(graph.initializer) + len(graph.sparse_initializer) > MAX_INITIALIZERS:
        faults.append(f"more than {MAX_INITIALIZERS:,} initializers")
    for info in (*graph.input, *graph.output, *graph.value_info):
        dims = info.type.tensor_type.shape.dim if info.type.HasField("tensor_type") else ()
        if len(dims) > MAX_RANK:
            faults.append(f"value {info.name!r} is annotated with rank {len(dims)}, above {MAX_RANK}")
        elif any(d.HasField("dim_value") and not 0 <= d.dim_value <= MAX_DIM for d in dims):
            faults.append(f"value {info.name!r} is annotated with a size outside [0, {MAX_DIM}]")
    for node in graph.node:
        for body in _bodies(node):
            faults += _sizes(body, depth + 1)
            if faults:
                return faults
    return faults


def _bodies(node: onnx.NodeProto) -> list[onnx.GraphProto]:
    return [b for a in node.attribute for b in ([a.g] if a.type == AttributeProto.GRAPH else a.graphs)]


def _tensors(graph: onnx.GraphProto) -> list[str]:
    faults = [f for t in graph.initializer for f in tensor_faults(t, f"initializer {t.name!r}")]
    for node in graph.node:
        for attribute in node.attribute:
            if attribute.type == AttributeProto.TENSOR:
                faults += tensor_faults(attribute.t, f"node {node.name!r} ({node.op_type}) "
                                                     f"attribute {attribute.name!r}")
    return faults


def tensor_faults(tensor: TensorProto, label: str) -> list[str]:
    """Whether the bytes present fill the declared shape exactly (checked before any array is made)."""
    if tensor.data_location == TensorProto.EXTERNAL:
        return [f"{label} is stored as external data that was not read"]
    if len(tensor.dims) > MAX_RANK or any(not 0 <= d <= MAX_DIM for d in tensor.dims):
        return [f"{label}: shape {list(tensor.dims)[:MAX_RANK + 1]} is outside the limits "
                f"(rank <= {MAX_RANK}, sizes in [0, {MAX_DIM}])"]
    count = 1
    for dim in tensor.dims:
        count *= dim
    if tensor.data_type == TensorProto.STRING:
        present = len(tensor.string_data)
        return [] if present == count else [f"{label}: shape {list(tensor.dims)} declares {count:,} "
                                            f"strings, the file holds {present:,}"]
    if tensor.data_type not in ITEMSIZE:
        return [f"{label}: element type {tensor.data_type} is not a numeric type the importer reads"]
    if tensor.HasField("raw_data"):
        needed = declared_bytes(tensor)
        if len(tensor.raw_data) != needed:
            return [f"{label}: shape {list(tensor.dims)} of {_type(tensor)} needs {needed:,} bytes, "
                    f"the file holds {len(tensor.raw_data):,}"]
        return []
    field = onnx.helper.tensor_dtype_to_field(tensor.data_type)  # where this type's values live
    present = len(getattr(tensor, field))
    stray = [f for f in ("float_data", "int32_data", "int64_data", "double_data", "uint64_data")
             if f != field and len(getattr(tensor, f))]
    if stray:
        return [f"{label}: {_type(tensor)} values belong in {field}, the file holds "
                f"{', '.join(stray)}"]
    expected = count * (2 if tensor.data_type in (TensorProto.COMPLEX64, TensorProto.COMPLEX128) else 1)
    if ITEMSIZE[tensor.data_type] == 0.5:
        expected = (count + 1) // 2
    if present != expected:
        return [f"{label}: shape {list(tensor.dims)} of {_type(tensor)} declares {count:,} values, "
                f"the file holds {present:,}"]
    return []


def _type(tensor: TensorProto) -> str:
    return TensorProto.DataType.Name(tensor.data_type).lower()


def _names(graph: onnx.GraphProto) -> list[str]:
    faults = []
    initializers = [t.name for t in graph.initializer] + [s.values.name for s in graph.sparse_initializer]
    inputs = [i.name for i in graph.input]
    for what, names in (("initializer", initializers), ("graph input", inputs)):
        seen: set[str] = set()
        for name in names:
            if name in seen:
                faults.append(f"{what} {name!r} is named twice")
            seen.add(name)
    defined = set(initializers) | set(inputs)
    produced: dict[str, onnx.NodeProto] = {}
    for node in graph.node:
        for name in node.output:
            if not name:
                continue
            if name in produced:
                faults.append(f"value {name!r} is produced twice (node {produced[name].name!r} and "
                              f"node {node.name!r})")
            elif name in defined:
                faults.append(f"value {name!r} is produced by node {node.name!r} ({node.op_type}) "
                              f"but is also a graph input or initializer")
            produced[name] = node
    return faults


def _flags(graph: onnx.GraphProto) -> list[str]:
    """0/1 flags that hold anything else, and window sizes past MAX_WINDOW (a 1 KB graph whose
    Conv pads a series by 2**40 reads as a network that asks terabytes of every batch)."""
    faults = []
    for node in graph.node:
        for attribute in node.attribute:
            label = f"node {node.name!r} ({node.op_type}): {attribute.name}"
            if attribute.name in FLAGS and (attribute.type != AttributeProto.INT or attribute.i not in (0, 1)):
                value = onnx.helper.get_attribute_value(attribute)
                faults.append(f"{label} must be 0 or 1, received {value!r}")
            elif attribute.name in WINDOWS and (attribute.type != AttributeProto.INTS or any(
                    not -MAX_WINDOW <= v <= MAX_WINDOW for v in attribute.ints)):
                value = onnx.helper.get_attribute_value(attribute)
                faults.append(f"{label} must be integers within +-{MAX_WINDOW:,}, received "
                              f"{str(value)[:80]}")
    return faults


def _metadata(model: onnx.ModelProto) -> list[str]:
    """The deepsharp.* metadata (and features) parsed and checked as the exporter writes it."""
    faults = []
    entries = {p.key: p.value for p in model.metadata_props}
    for key, check in ((META_FEATURES, _features), (META_SHAPE, _shape),
                       (META_TRAINING_ONLY, _training_only), (META_TRAINING_SETTINGS, _settings)):
        if key in entries:
            try:
                check(entries[key])
            except (ValueError, TypeError, KeyError, RecursionError, DeepsharpError) as error:
                faults.append(f"metadata {key!r} is damaged: {str(error)[:200]}")
    return faults


def _features(text: str) -> None:
    value = json.loads(text)
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError("expected a JSON list of names")


def _shape(text: str) -> None:
    shape = Shape.parse(text)
    if shape.rank > MAX_RANK or any(d > MAX_DIM for d in shape):
        raise ValueError(f"shape {text[:80]} is outside the limits")


def _training_only(text: str) -> None:
    entries = json.loads(text)
    if not isinstance(entries, list):
        raise ValueError("expected a JSON list")
    for entry in entries:
        if not isinstance(entry, dict) or not isinstance(entry.get("place"), str) \
                or not PLACE.match(entry["place"]):
            raise ValueError(f"entry {str(entry)[:80]} has no place such as '3' or '3.branch.1'")
        parse_spec(entry.get("layer"))


def _settings(text: str) -> None:
    settings = json.loads(text)
    if not isinstance(settings, dict) or not all(
            isinstance(place, str) and PLACE.match(place) and isinstance(values, dict)
            for place, values in settings.items()):
        raise ValueError("expected a JSON object of places, each to an object of settings")


# Ops whose `axis` attribute names an axis of input 0: the extra room at the top (Flatten's axis
# may equal the rank), and ops whose `axes` (attribute or input 1) name axes of input 0 (or, for
# Unsqueeze, of the output).
AXIS_OPS = {"Softmax": 0, "LogSoftmax": 0, "Hardmax": 0, "Concat": 0, "Gather": 0,
            "GatherElements": 0, "Split": 0, "ArgMax": 0, "ArgMin": 0, "LayerNormalization": 0,
            "Flatten": 1, "CumSum": 0}
AXES_OPS = {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1",
            "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare", "Squeeze",
            "Unsqueeze"}


def _inference(model: onnx.ModelProto) -> list[str]:
    """Axes out of range, which the readers would otherwise wrap with `axis % rank` while ONNX
    Runtime refuses them: each node's axis checked against its input's rank (declared, or from
    ONNX's shape inference over a light copy whose large tensors keep only their shape)."""
    light = _light(model)
    try:
        light = infer_shapes(light)
    except Exception:  # non-strict inference rarely fails; the ranks then come from annotations
        pass
    ranks = {info.name: len(info.type.tensor_type.shape.dim)
             for info in (*light.graph.input, *light.graph.value_info, *light.graph.output)
             if info.type.HasField("tensor_type") and info.type.tensor_type.HasField("shape")}
    ranks.update({t.name: len(t.dims) for t in model.graph.initializer})
    constants = {t.name: t for t in model.graph.initializer  # whole ones: the rest is refused
                 if len(t.dims) <= 1 and not tensor_faults(t, t.name)}
    faults = []
    for node in model.graph.node:
        rank = ranks.get(node.input[0]) if node.input else None
        if rank is not None:
            faults += _axis_faults(node, rank, constants)
    return faults


def _axis_faults(node: onnx.NodeProto, rank: int, constants: dict[str, TensorProto]) -> list[str]:
    attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
    label = f"node {node.name!r} ({node.op_type})"
    for name in ("perm", "axes"):
        if name in attrs and not (isinstance(attrs[name], list) and all(isinstance(v, int) for v in attrs[name])):
            return [f"{label}: {name} must be a list of integers, received {str(attrs[name])[:80]}"]
    if node.op_type in AXIS_OPS and "axis" in attrs:
        top = rank + AXIS_OPS[node.op_type]
        axis = attrs["axis"]
        if not isinstance(axis, int) or not -top <= axis < max(top, 1):
            return [f"{label}: axis {axis!r} is outside [{-top}, {top}) for an input of rank {rank}"]
    if node.op_type == "Transpose" and "perm" in attrs:
        if sorted(attrs["perm"]) != list(range(rank)):
            return [f"{label}: perm {list(attrs['perm'])} is not an order of the {rank} axes of its input"]
    if node.op_type in AXES_OPS:
        axes = attrs.get("axes")
        if axes is None and len(node.input) > 1 and node.input[1] in constants:
            axes = onnx.numpy_helper.to_array(constants[node.input[1]]).reshape(-1).tolist()
        if axes is not None:
            top = rank + (len(axes) if node.op_type == "Unsqueeze" else 0)
            if any(not -top <= a < top for a in axes) or len({a % top for a in axes}) != len(axes):
                return [f"{label}: axes {list(axes)} are not distinct axes in [{-top}, {top}) "
                        f"for an input of rank {rank}"]
    return []


def _light(model: onnx.ModelProto) -> onnx.ModelProto:
    """A copy without the bytes of large tensors (a big model is not doubled): inference needs
    their type and shape, which a graph input declares (as IR < 4 graphs declare initializers)."""
    graph = model.graph
    light = onnx.ModelProto(ir_version=model.ir_version)
    light.opset_import.extend(model.opset_import)
    light.functions.extend(model.functions)
    copy = light.graph
    copy.name = graph.name
    for field in ("node", "input", "sparse_initializer"):  # annotations inside are derived anew
        getattr(copy, field).extend(getattr(graph, field))
    copy.output.extend(onnx.ValueInfoProto(name=o.name) for o in graph.output)
    inputs = {i.name for i in graph.input}
    for tensor in graph.initializer:
        if len(tensor.raw_data) <= LIGHT_BYTES:
            copy.initializer.append(tensor)
        elif tensor.name not in inputs:
            copy.input.append(onnx.helper.make_tensor_value_info(
                tensor.name, tensor.data_type, list(tensor.dims)))
    return light
