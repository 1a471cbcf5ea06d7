"""OnnxExport: write a trained network and its loss's output activation as an ONNX graph.

    OnnxExport(Shape(14), features=["age", "fare"]).write(network, BinaryCrossEntropy(), stream)

The exporter walks the stack and asks the writer registered for each step type; the tape writes
the ModelProto for the oldest operator set that holds every node. Every refusal is collected and
raised as one `ExportRefused` before a single byte is written.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any, BinaryIO, Sequence

import numpy as np
import onnx
from onnx import TensorProto

import deepsharp
from deepsharp.layers.base import Step
from deepsharp.layers.composite import walk_specs
from deepsharp.losses import Loss
from deepsharp.module import Module
from deepsharp.network import Network
from deepsharp.shape import Shape
from deepsharp_export_onnx.errors import ExportRefused
from deepsharp_export_onnx.graph import Tape
from deepsharp_export_onnx.values import Value
from deepsharp_export_onnx.write.writers import WRITERS, Refusal, Writing, writer_for
from deepsharp_export_onnx.write.writers.outputs import OUTPUT_WRITERS
from layout import Order, permute_dims, to_channels_first, to_channels_last

BATCH = "batch"
STEPS = "steps"
META_FEATURES = "features"
META_SHAPE = "deepsharp.example_shape"
META_TRAINING_ONLY = "deepsharp.training_only"
META_TRAINING_SETTINGS = "deepsharp.training_settings"


def example_dims(shape: Shape, ids: bool = False) -> tuple[int | str, ...]:
    """The graph input's dims: the batch is a symbol; so is a series' length (rank-2 shapes
    are steps x channels, and a rank-1 shape of int64 ids is a series of steps)."""
    dims: tuple[int | str, ...] = tuple(shape)
    if shape.rank == 2:
        dims = (STEPS, dims[1])
    elif shape.rank == 1 and ids:
        dims = (STEPS,)
    return (BATCH, *dims)


def name_faults(tape: Tape, inputs: Sequence[str], outputs: Sequence[tuple[str, str]]) -> list[str]:
    """The graph's input and output names must name nothing else: an output name already taken
    by an internal value would make the graph answer that value (`output_name="2.dense"` gave
    logits instead of probabilities), an input name a node also produces, or an output name an
    initializer or a second node holds, is an invalid graph; no name may be given twice.

    `outputs` pairs each requested output name with the name the tape gave the value meant
    (different when the requested name was taken). Checked once the output nodes are written;
    layer stacks and traced modules both use it.
    """
    faults = []
    producers: dict[str, list] = {}
    for node in tape.nodes:
        for o in node.outputs:
            producers.setdefault(o, []).append(node)
    requested = list(inputs) + [name for name, _ in outputs]
    for name in sorted({n for n in requested if requested.count(n) > 1}):
        faults.append(f"the name {name!r} is given to more than one graph input or output")
    for name in inputs:
        if name in producers:
            node = producers[name][0]
            faults.append(f"input name {name!r} is also the name of a value inside the graph "
                          f"(node {node.name!r}, {node.op_type}, written for "
                          f"{node.owner or 'the graph'}); choose another input_name")
        elif name in tape.initializers:
            faults.append(f"input name {name!r} is also the name of a constant; choose another "
                          f"input_name")
    for name, written in outputs:
        if name != written or len(producers.get(name, ())) > 1:
            node = producers[name][0] if name in producers else None
            owner = (node.owner or "the graph") if node is not None else "a constant"
            faults.append(f"output name {name!r} is already the name of a value inside the graph "
                          f"(written for {owner}), which the graph would answer instead; choose "
                          f"another output_name")
        elif name in tape.initializers:
            faults.append(f"output name {name!r} is already the name of the constant {name!r} "
                          f"(a parameter's path); choose another output_name")
    return faults


def _argument_faults(shape: Shape | None, features: object, max_opset: object, input_name: object,
                     output_name: object) -> list[str]:
    faults = []
    if features is not None:
        if isinstance(features, (str, bytes)) or not isinstance(features, Sequence) \
                or not all(isinstance(f, str) for f in features):
            faults.append(f"features must be a list of names, received {features!r}")
        elif shape is not None and (shape.rank == 0 or len(features) != shape[-1]):
            width = shape[-1] if shape.rank else 0
            faults.append(f"features names {len(features)} values, but an example of shape "
                          f"{shape} has {width} along its last axis")
    if max_opset is not None and (isinstance(max_opset, bool) or not isinstance(max_opset, (int, np.integer))):
        faults.append(f"max_opset must be an integer or None, received {max_opset!r}")
    for what, name in (("input_name", input_name), ("output_name", output_name)):
        if not isinstance(name, str) or not name:
            faults.append(f"{what} must be a non-empty string, received {name!r}")
    return faults


class OnnxExport:
    """Writes networks as ONNX graphs for examples of `shape`.

    Args:
        shape: the shape of one example, without the batch axis (the network's input shape).
        features: names of what a row is made of, written as model metadata.
        max_opset: refuse a network whose nodes need a newer operator set than this.
        input_name, output_name: the graph's input and output names.

    For a Module written as code, which is traced (write/traced.py):
        example: the batch the trace runs on (one array, a sequence of arrays, or a mapping
            input name -> array) instead of one made from `shape` (then `shape` may be None).
        axis_names: which axes are symbolic, as `Module.trace` takes them (`{0: "batch"}` for
            every input, or one mapping per input); by default the batch and a series' steps.
        input_names, output_names: the graph's inputs and outputs, for several of them (else
            a mapping's keys, forward's dict keys, or `input_0`, `output_0`, ...).
    """

    def __init__(self, shape: Shape | None = None, features: Sequence[str] | None = None,
                 max_opset: int | None = None, input_name: str = "input",
                 output_name: str = "output", *, example: Any = None,
                 axis_names: Any = None, input_names: Sequence[str] | None = None,
                 output_names: Sequence[str] | None = None) -> None:
        if shape is not None and not isinstance(shape, Shape):
            raise ExportRefused([f"shape must be a Shape, received {shape!r}"],
                                headline="OnnxExport: bad arguments")
        faults = _argument_faults(shape, features, max_opset, input_name, output_name)
        if faults:
            raise ExportRefused(faults, headline="OnnxExport: bad arguments")
        self.shape = shape
        self.features = list(features) if features is not None else None
        self.max_opset = max_opset
        self.input_name = input_name
        self.output_name = output_name
        self.example = example
        self.axis_names = axis_names
        self.input_names = list(input_names) if input_names is not None else None
        self.output_names = list(output_names) if output_names is not None else None

    # -- public API -------------------------------------------------------------------------------
    def write(self, network: Module, loss: Loss, stream: BinaryIO) -> None:
        """Write the graph to `stream`; a refused network writes nothing."""
        data = self.to_bytes(network, loss)
        stream.write(data)

    def to_bytes(self, network: Module, loss: Loss) -> bytes:
        return self.to_model(network, loss).SerializeToString(deterministic=True)

    def to_model(self, network: Module, loss: Loss) -> onnx.ModelProto:
        faults = self._preconditions(network, loss)
        if faults:
            raise ExportRefused(faults)
        if not isinstance(network, Network):  # written as code: traced
            from deepsharp_export_onnx.write.traced import export_module

            return export_module(self, network, loss)
        tape = Tape()
        x = self._input(network, tape)
        steps = network.logits_steps(loss)
        self._faults: list[str] = []
        z = self.write_steps(tape, steps, x)
        faults = self._faults
        if not faults:
            written = self._finish(tape, z, loss)
            faults += name_faults(tape, [self.input_name], [(self.output_name, written)])
            faults += self._opset_faults(tape)
        if faults:
            raise ExportRefused(faults)
        return tape.to_model([self.input_name], [self.output_name],
                             metadata=self._metadata(network), graph_name="deepsharp",
                             producer=("deepsharp", deepsharp.__version__))

    # -- the walk -----------------------------------------------------------------------------------
    def write_steps(self, tape: Tape, steps: Sequence[Step], x: Value) -> Value:
        """Write `steps` from value `x`; a refused step is recorded and the walk goes on (with a
        stand-in value of the step's output shape) so every refusal is found in one pass."""
        for index, step in enumerate(steps):
            entry = writer_for(step)
            if entry is None:
                if not step.spec.training_only:
                    self._faults.append(f"step {step.place} ({step.spec.describe()}): no ONNX "
                                        f"writer for {type(step).__name__}; {self._known()}")
                    x = self._stand_in(step, x)
                continue
            tape.owner = f"{step.place} ({step.kind})"
            flat = x.order is Order.FLAT_CHANNELS_FIRST and entry.flat_rows
            x = self.turn(tape, x, None if flat else entry.order)
            try:
                y = entry.write(step, x, Writing(tape, step, self, steps[index + 1:]))
            except Refusal as refusal:
                self._faults.append(f"step {step.place} ({step.spec.describe()}): {refusal}")
                x = self._stand_in(step, x)
                continue
            if y.mask is not None and y.mask == x.mask and not step.keeps_steps():
                y = replace(y, mask=None)  # the series' steps are gone: so is their mask
            x = y
        return x

    def turn(self, tape: Tape, x: Value, order: Order | None) -> Value:
        """`x` in `order` (one Transpose, or none when it already is, or when any order does)."""
        if order is not None and x.order is Order.FLAT_CHANNELS_FIRST:
            # the flatten writer keeps this order only for a writer that takes it (flat_rows)
            raise ValueError(f"{x.name!r} is a row flattened channels-first; no writer asking "
                             f"for {order.value} may receive it")
        if order is None or x.order is order or x.rank < 3:
            return x
        perm = to_channels_first(x.rank) if order is Order.CHANNELS_FIRST else to_channels_last(x.rank)
        name = tape.op("Transpose", [x.name], {"perm": list(perm)}, name=f"{x.name}/{order.value}")
        turned = x.renamed(name, dims=permute_dims(x.dims, perm), order=order)
        tape.annotate(name, turned.dims, turned.elem_type)
        return turned

    # -- the parts -------------------------------------------------------------------------------------
    def _preconditions(self, network: Module, loss: Loss) -> list[str]:
        if isinstance(network, Module) and not isinstance(network, Network):
            if self.shape is None and self.example is None:
                return ["a module written as code is traced on an example: give shape= (one "
                        "example's shape) or example= (a batch it runs on)"]
            return []  # its losses (one per output) are checked as it is written (traced.py)
        traced_only = [name for name in ("example", "axis_names", "input_names", "output_names")
                       if getattr(self, name) is not None]
        if traced_only:
            return [f"{', '.join(traced_only)}: for modules written as code (traced); a stack is "
                    f"written step by step for examples of `shape`"]
        if self.shape is None:
            return ["a stack is written for examples of `shape`: OnnxExport(network.input_shape)"]
        if not isinstance(loss, Loss):
            return [f"loss must be a deepsharp Loss, received {loss!r}"]
        if OUTPUT_WRITERS.lookup(loss) is None:
            return [f"loss {type(loss).__name__} has no output writer; written: "
                    f"{OUTPUT_WRITERS.names()}"]
        if not isinstance(network, Module):
            return [f"expected a Network or a Module, received {type(network).__name__}"]
        if isinstance(network, Network) and network.input_shape != self.shape:
            return [f"the network takes examples of shape {network.input_shape}, the export was "
                    f"asked for {self.shape}"]
        return []

    def _input(self, network: Network, tape: Tape) -> Value:
        steps = network.steps
        dtype = steps[0].spec.input_dtype if steps else "float32"
        elem = TensorProto.INT64 if dtype == "int64" else TensorProto.FLOAT
        x = Value(self.input_name, example_dims(self.shape, ids=dtype == "int64"), elem_type=elem)
        tape.annotate(x.name, x.dims, elem)
        return x

    def _stand_in(self, step: Step, x: Value) -> Value:
        dims = (BATCH, *step.output_shape)
        return Value(f"{step.place}.{step.kind}", dims)

    def _finish(self, tape: Tape, z: Value, loss: Loss) -> str:
        """Write the loss's output activation; the name the output got (see `name_faults`)."""
        tape.owner = f"output ({type(loss).__name__})"
        z = self.turn(tape, z, Order.CHANNELS_LAST)
        name = OUTPUT_WRITERS.lookup(loss)(tape, z, self.output_name)
        tape.annotate(name, z.dims, z.elem_type)
        return name

    def _opset_faults(self, tape: Tape) -> list[str]:
        if self.max_opset is None or tape.needed_opset() <= self.max_opset:
            return []
        faults = []
        for node in tape.nodes_needing_more_than(self.max_opset):
            faults.append(f"step {node.owner}: node {node.name!r} ({node.op_type}) needs operator "
                          f"set {tape.node_needs(node)}, above max_opset "
                          f"{self.max_opset}")
        return faults

    def _metadata(self, network: Network) -> dict[str, str]:
        metadata = {}
        features = self.features if self.features is not None else network.features
        if features:
            metadata[META_FEATURES] = json.dumps(list(features))
        metadata[META_SHAPE] = str(self.shape)
        silent = [{"place": place, "layer": spec.dump()} for place, spec in walk_specs(network.spec)
                  if spec.training_only]  # inside composite layers' branches too (3.branch.1)
        if silent:
            metadata[META_TRAINING_ONLY] = json.dumps(silent, sort_keys=True)
        settings = {place: {name: getattr(spec, name) for name in spec.training_fields}
                    for place, spec in walk_specs(network.spec) if spec.training_fields}
        if settings:
            metadata[META_TRAINING_SETTINGS] = json.dumps(settings, sort_keys=True)
        return metadata

    @staticmethod
    def _known() -> str:
        return "steps written: " + WRITERS.names()
