"""What `OnnxExport` writes for a Module written as code: its evaluation pass traced on an
example, every input and output named, each output followed by its loss's output activation.

    OnnxExport(Shape(14)).write(module, loss, stream)                    # an example made
    OnnxExport(example=x, axis_names={0: "batch"}).write(module, loss, stream)
    OnnxExport(example={"ids": ids, "mask": mask}).write(module, None, stream)

The example is the caller's (`example=`: one array, a sequence, or a mapping name -> array), or
made from `shape` (normal values, zeros for a module of ids) at sizes that avoid the model's fixed
sizes. The symbolic axes are `axis_names` (as `Module.trace` takes them), by default the batch
(axis 0) and a series' steps (axis 1 of a (batch, steps, channels) input or of (batch, steps)
ids). Inputs are named `input_name` (one), `input_names=`, a mapping's keys, or `input_0`, ...;
outputs `output_name` (one tensor), `output_names=`, a dict's keys, or `output_0`, ... (forward
may return a tensor, or a tuple or dict of tensors). `loss` is one Loss for one output, or one per
output (a mapping name -> Loss, or a sequence), None for an output written as it is.
"""

from __future__ import annotations

import json
from typing import Any, Mapping, Sequence

import numpy as np
import onnx

import deepsharp
from deepsharp.errors import DeepsharpError, TraceException
from deepsharp.losses import Loss, MeanSquaredError
from deepsharp.module import Module
from deepsharp.tensors import Tensor
from deepsharp.tracing import trace_module
from deepsharp.tracing.module import normalize_axis_names
from deepsharp.tracing.symbols import onnx_dims
from deepsharp_export_onnx.errors import ExportRefused
from deepsharp_export_onnx.trace.lower import Lowering, elem_type, opset_faults
from deepsharp_export_onnx.values import Value
from deepsharp_export_onnx.write.names import name_faults
from deepsharp_export_onnx.write.writers.outputs import OUTPUT_WRITERS

BATCH, STEPS = "batch", "steps"
LOGITS = "{}/logits"  # a traced output's value, before its output activation takes the name


def example_sizes(fixed: set[int], count: int) -> list[int]:
    """`count` distinct example sizes for symbols, avoiding every fixed size of the model (a
    symbol whose example size equals a fixed size could be mistaken for it)."""
    sizes: list[int] = []
    n = 3
    while len(sizes) < count:
        if n not in fixed and all(n % p for p in range(2, int(n ** 0.5) + 1)):
            sizes.append(n)
        n += 1
    return sizes


def made_axes(exporter: Any, module: Module, name: str) -> dict[int, str]:
    """The symbolic axes of a made example: `axis_names`, else the batch and a series' steps (as
    for a stack)."""
    from deepsharp_export_onnx.write.export import example_dims

    if exporter.axis_names is not None:
        return normalize_axis_names(exporter.axis_names, [name])[0]
    ids = getattr(module, "input_dtype", "float32") == "int64"
    return {i: d for i, d in enumerate(example_dims(exporter.shape, ids=ids)) if isinstance(d, str)}


def default_axes(array: np.ndarray) -> dict[int, str]:
    """The batch, and a series' steps (as for a stack: (batch, steps, channels), or ids)."""
    axes = {0: BATCH}
    if (array.ndim == 3 and array.dtype.kind == "f") or (array.ndim == 2
                                                         and array.dtype.kind in "iu"):
        axes[1] = STEPS
    return axes


def made_example(exporter: Any, module: Module, axes: dict[int, str]) -> np.ndarray:
    """A batch of examples of `exporter.shape`, its symbolic `axes` at sizes avoiding the model's
    fixed ones (a batch that is not symbolic is one example)."""
    ids = getattr(module, "input_dtype", "float32") == "int64"
    fixed = set(exporter.shape) | {n for t in module._slots().values() for n in t.shape}
    symbols = sorted(set(axes.values()))
    size = dict(zip(symbols, example_sizes(fixed, len(symbols))))
    shape = tuple(size[axes[i]] if i in axes else n
                  for i, n in enumerate((1, *exporter.shape)))
    if ids:
        return np.zeros(shape, dtype=np.int64)
    return np.random.default_rng(0).standard_normal(shape).astype(np.float32)


def _as_array(value: Any) -> np.ndarray:
    return value.numpy() if isinstance(value, Tensor) else np.asarray(value)


def inputs_of(exporter: Any, module: Module, faults: list[str]) -> dict[str, np.ndarray]:
    """The examples by input name."""
    example, names = exporter.example, exporter.input_names
    if example is None:
        if names is not None and len(names) != 1:
            faults.append(f"input_names {list(names)}: a module with several inputs needs "
                          f"example= (one array per input)")
            return {}
        name = names[0] if names else exporter.input_name
        return {name: made_example(exporter, module, made_axes(exporter, module, name))}
    if isinstance(example, Mapping):
        if names is not None and list(names) != [str(k) for k in example]:
            faults.append(f"input_names {list(names)} differ from the example's keys "
                          f"{[str(k) for k in example]}")
        return {str(k): _as_array(v) for k, v in example.items()}
    arrays = ([_as_array(v) for v in example] if isinstance(example, (list, tuple))
              else [_as_array(example)])
    if names is None:
        names = ([exporter.input_name] if len(arrays) == 1
                 else [f"input_{i}" for i in range(len(arrays))])
    if len(names) != len(arrays):
        faults.append(f"input_names {list(names)}: {len(names)} names for {len(arrays)} inputs")
        return {}
    if exporter.shape is not None and len(arrays) == 1 and \
            tuple(arrays[0].shape[1:]) != tuple(exporter.shape):
        faults.append(f"the example has shape {arrays[0].shape}: a batch of examples of shape "
                      f"{tuple(arrays[0].shape[1:])}, not of the shape asked for, {exporter.shape}")
    return dict(zip(names, arrays))


def named_outputs(result: Any, exporter: Any) -> dict[str, Tensor]:
    """forward's result by output name: a tensor, or a tuple or dict of tensors (one level)."""
    names = exporter.output_names
    if isinstance(result, Tensor):
        items, default = [result], [exporter.output_name]
    elif isinstance(result, Mapping):
        items, default = list(result.values()), [str(k) for k in result]
    elif isinstance(result, (list, tuple)):
        items, default = list(result), [f"output_{i}" for i in range(len(result))]
    else:
        raise ExportRefused([f"forward returned {type(result).__name__}: a module exports a "
                             f"tensor, or a tuple or dict of tensors"])
    names = list(names) if names is not None else default
    faults = []
    if len(names) != len(items):
        faults.append(f"output_names {names}: {len(names)} names for {len(items)} outputs")
    faults += [f"output name {n!r} is used twice" for n in sorted(set(names))
               if names.count(n) > 1]
    for name, item in zip(default, items):
        if not isinstance(item, Tensor):
            faults.append(f"output {name!r} is a {type(item).__name__}: forward may return a "
                          f"tensor, or a tuple or dict of tensors (nested one level at most)")
    if faults:
        raise ExportRefused(faults)
    return {LOGITS.format(name): item for name, item in zip(names, items)}


def _made(examples: dict[str, np.ndarray]) -> str:
    return ", ".join(f"{name} of shape {a.shape}, {'zeros' if a.dtype.kind in 'iu' else 'normal'}"
                     for name, a in examples.items())


def losses_for(loss: Any, names: Sequence[str], faults: list[str]) -> dict[str, Loss | None]:
    """One loss (or None) per output name."""
    if loss is None or isinstance(loss, Loss):
        if isinstance(loss, Loss) and len(names) > 1:
            faults.append(f"loss {type(loss).__name__}: the module has {len(names)} outputs "
                          f"({', '.join(names)}); give one loss per output (a mapping output "
                          f"name -> Loss or None, or a sequence of them)")
        chosen = {name: loss for name in names}
    elif isinstance(loss, Mapping):
        unknown = sorted(set(map(str, loss)) - set(names))
        missing = [n for n in names if n not in loss]
        if unknown or missing:
            faults.append(f"loss: the mapping names {unknown or 'no unknown output'} and misses "
                          f"{missing or 'no output'}; outputs: {', '.join(names)}")
        chosen = {name: loss.get(name) for name in names}
    elif isinstance(loss, (list, tuple)) and len(loss) == len(names):
        chosen = dict(zip(names, loss))
    else:
        faults.append(f"loss must be a Loss, None, or one per output (a mapping or a sequence of "
                      f"{len(names)}), received {loss!r}")
        return {}
    for name, one in chosen.items():
        if one is not None and (not isinstance(one, Loss) or OUTPUT_WRITERS.lookup(one) is None):
            faults.append(f"loss for output {name!r}: {one!r} is not a Loss with an output "
                          f"writer; written: {OUTPUT_WRITERS.names()}")
    return chosen


def export_module(exporter: Any, module: Module, loss: Any) -> onnx.ModelProto:
    """The traced graph of `module`'s evaluation pass (see the module docstring)."""
    faults: list[str] = []
    examples = inputs_of(exporter, module, faults)
    if faults:
        raise ExportRefused(faults)
    traced = _trace(exporter, module, loss, examples)
    names = list(examples)
    outputs = [name[:-len("/logits")] for name in traced.output_names]
    chosen = losses_for(loss, outputs, faults)
    lowering = Lowering(traced.graph)
    lowering.run()
    tape = lowering.tape
    if faults:
        raise ExportRefused(faults)
    written = []
    for name, (_, vid) in zip(outputs, traced.graph.outputs):
        value = traced.graph.values[vid]
        z = Value(LOGITS.format(name), onnx_dims(value.dims), elem_type=elem_type(value.dtype))
        tape.owner = f"output {name!r} ({type(chosen[name]).__name__})"
        written.append(OUTPUT_WRITERS.lookup(chosen[name] or MeanSquaredError())(tape, z, name))
        tape.annotate(written[-1], z.dims, z.elem_type)
    faults += name_faults(tape, names, list(zip(outputs, written)))
    faults += opset_faults(tape, exporter.max_opset)
    if faults:
        raise ExportRefused(faults)
    return exporter.model_of(tape, names, _metadata(exporter, examples), outputs)  # the form asked


def _trace(exporter: Any, module: Module, loss: Any, examples: dict[str, np.ndarray]) -> Any:
    """The evaluation pass traced on `examples`: a module's logits for one input and one loss
    (as for a stack), else its forward; every failure an ExportRefused naming the module."""
    axes = (exporter.axis_names if exporter.axis_names is not None
            else [default_axes(a) for a in examples.values()])
    single = len(examples) == 1 and isinstance(loss, Loss)

    def call(*xs: Tensor) -> dict[str, Tensor]:
        result = module.logits(xs[0], loss) if single else module.forward(*xs)
        return named_outputs(result, exporter)

    try:
        return trace_module(module, examples, axes, call=call)
    except DeepsharpError as error:  # a trace refused, or the module failing on the example
        made = "" if exporter.example is not None or isinstance(error, TraceException) else (
            f"; it ran on a made example ({_made(examples)}): pass example= a batch the module "
            f"runs on")
        raise ExportRefused([f"{type(module).__name__} (traced): {error}{made}"]) from error


def _metadata(exporter: Any, examples: dict[str, np.ndarray]) -> dict[str, str]:
    from deepsharp_export_onnx.write.export import META_FEATURES, META_SHAPE

    metadata = {}
    if exporter.shape is not None or len(examples) == 1:
        shape = exporter.shape if exporter.shape is not None else \
            deepsharp.Shape(*next(iter(examples.values())).shape[1:])
        metadata[META_SHAPE] = str(shape)
    if exporter.features:
        metadata[META_FEATURES] = json.dumps(list(exporter.features))
    return metadata
