"""OnnxExport: write a trained network and its loss's output activation as an ONNX graph.

    OnnxExport(Shape(14), features=["age", "fare"]).write(network, BinaryCrossEntropy(), stream)

The exporter walks the stack and asks the writer registered for each step type; the tape writes
the ModelProto for the oldest operator set that holds every node. Every refusal is collected and
raised as one `ExportRefused` before a single byte is written.
"""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path
from typing import Any, BinaryIO, Sequence

import numpy as np
import onnx
from onnx import TensorProto

from deepsharp.layers.base import Step
from deepsharp.layers.composite import walk_specs
from deepsharp.layers.masks import MASK_CARRIED
from deepsharp.losses import Loss
from deepsharp.module import Module
from deepsharp.network import Network
from deepsharp.shape import Shape
from deepsharp_export_onnx.errors import ExportRefused
from deepsharp_export_onnx.graph import Tape
from deepsharp_export_onnx.write.names import name_faults
from deepsharp_export_onnx.values import Value
from deepsharp_export_onnx.write import deploy
from deepsharp_export_onnx.write.external import ExternalData
from deepsharp_export_onnx.write.forms import option_faults
from deepsharp_export_onnx.write.preparation import (
    META_PREPARATION, preparation_faults, preparation_metadata, write_preparation,
)
from deepsharp_export_onnx.write.report import ExportReport
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


def _folds_steps(network: Network) -> bool:
    """Whether a layer folds a series' steps into the values of a row (a flatten or reshape
    whose output changes with the series' length, or that cannot take another length): the
    layers after it are built for that many values, so the network runs at its example's length
    only, and its graph says so. (A flatten after an adaptive pool does not: its row is the
    same at every length.)"""
    shape = network.input_shape
    for index, step in enumerate(network.steps):
        if step.kind in ("flatten", "reshape") and shape.rank >= 2 \
                and _row_changes_with_length(network, index):
            return True
        shape = step.output_shape
    return False


def _row_changes_with_length(network: Network, index: int) -> bool:
    """Whether the layers up to `index` (the layers before it only: the dense after a flatten
    may be large), built for series one step shorter, one longer and twice as long, give another
    shape there, or cannot take the longer ones (convolutions and pools give a row that grows
    with the length, by steps of their strides; an adaptive pool one of a fixed size)."""
    axis = 1 if network.data_format == "channels_first" else 0
    length = network.input_shape[axis]
    for other in (length - 1, length + 1, 2 * length):
        if other < 1:
            continue
        dims = list(network.input_shape)
        dims[axis] = other
        shape = network.spec.shape_after(index + 1, Shape(*dims))
        if shape is None and other < length:  # too short for a window: the graph fails, loudly
            continue
        if shape != network.steps[index].output_shape:
            return True
    return False


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
        if name is not None and (not isinstance(name, str) or not name):
            faults.append(f"{what} must be a non-empty string, received {name!r}")
    return faults


DEFAULT_NAMES = ("input", "output")


class OnnxExport:
    """Writes networks as ONNX graphs for examples of `shape`.

    Args:
        shape: the shape of one example, without the batch axis (the network's input shape).
        features: names of what a row is made of, written as model metadata.
        max_opset: refuse a network whose nodes need a newer operator set than this.
        input_name, output_name: the graph's input and output names; by default those of the
            graph the network was read from (`network.io_names`), else "input" and "output".
        prepare: a fitted preparation (`deepsharp.preparation`: a step, a Chain, or Columns)
            written in front of the network, so the graph takes raw rows (named columns are
            inputs of their own); by default the network's own (`network.preparation`, which a
            graph read back carries).
        weights: "float32", or "float16" (weights stored float16, computed in float32).
        quantize: None, or "dynamic" (int8 weights by ONNX Runtime's `quantize_dynamic`).
        external_data: None (the weights beside the graph, in `<name>.onnx.data`, only when the
            graph would pass protobuf's 2 GiB), True (always, when written to a path), False
            (never: such a graph is refused).
        compare_on: rows (raw, as `prepare` takes them) on which `report` gives the largest
            difference between the graph's answers in ONNX Runtime and the float32 network's.

    After each export, `report` (an `ExportReport`) gives the form, the size and that difference.

    For a Module written as code, which is traced (write/traced.py):
        example: the batch the trace runs on (one array, a sequence of arrays, or a mapping
            input name -> array) instead of one made from `shape` (then `shape` may be None).
        axis_names: which axes are symbolic, as `Module.trace` takes them (`{0: "batch"}` for
            every input, or one mapping per input); by default the batch and a series' steps.
        input_names, output_names: the graph's inputs and outputs, for several of them (else
            a mapping's keys, forward's dict keys, or `input_0`, `output_0`, ...).
    """

    def __init__(self, shape: Shape | None = None, features: Sequence[str] | None = None,
                 max_opset: int | None = None, input_name: str | None = None,
                 output_name: str | None = None, *, prepare: Any = None, weights: str = "float32",
                 quantize: str | None = None, external_data: bool | None = None,
                 compare_on: Any = None, example: Any = None, axis_names: Any = None,
                 input_names: Sequence[str] | None = None,
                 output_names: Sequence[str] | None = None) -> None:
        if shape is not None and not isinstance(shape, Shape):
            raise ExportRefused([f"shape must be a Shape, received {shape!r}"],
                                headline="OnnxExport: bad arguments")
        faults = _argument_faults(shape, features, max_opset, input_name, output_name)
        faults += option_faults(weights, quantize, external_data)
        if faults:
            raise ExportRefused(faults, headline="OnnxExport: bad arguments")
        self.shape = shape
        self.features = list(features) if features is not None else None
        self.max_opset = max_opset
        self._names = (input_name, output_name)  # None: the network's own, else the default
        self.input_name = input_name or DEFAULT_NAMES[0]
        self.output_name = output_name or DEFAULT_NAMES[1]
        self.prepare = prepare
        self.weights = weights
        self.quantize = quantize
        self.external_data = external_data
        self.compare_on = compare_on
        self.report: ExportReport | None = None
        self._plan: ExternalData | None = None  # where the weights go, while write(path) runs
        self._front: Any = None  # the preparation of a traced network, while it is written
        self.example = example
        self.axis_names = axis_names
        self.input_names = list(input_names) if input_names is not None else None
        self.output_names = list(output_names) if output_names is not None else None

    # -- public API -------------------------------------------------------------------------------
    def write(self, network: Module, loss: Loss, target: BinaryIO | str | os.PathLike) -> None:
        """Write the graph to `target`: a binary stream, or a path (written whole or not at all;
        the weights go beside it when the graph needs external data). A refused network writes
        nothing."""
        if isinstance(target, (str, os.PathLike)):
            deploy.save(self, network, loss, Path(target))
            return
        data = self.to_bytes(network, loss)
        target.write(data)

    def to_bytes(self, network: Module, loss: Loss) -> bytes:
        model = self._model(network, loss)
        try:
            data = model.SerializeToString(deterministic=True)
        except Exception as error:  # protobuf's EncodeError / ValueError past 2 GiB
            raise ExportRefused([f"the graph cannot be one protobuf message ({error}): write it "
                                 f"to a path, with its weights as external data"]) from None
        self.report = deploy.report(self, data, len(data), 0, network, loss)
        return data

    def to_model(self, network: Module, loss: Loss) -> onnx.ModelProto:
        model = self._model(network, loss)
        data = model.SerializeToString(deterministic=True) if self.compare_on is not None else b""
        self.report = deploy.report(self, data, model.ByteSize(), 0, network, loss)
        return model

    def model_of(self, tape: Tape, inputs: Sequence[str], metadata: dict[str, str],
                 outputs: Sequence[str] | None = None) -> onnx.ModelProto:
        """The finished tape as the ModelProto of the form asked (float16 weights, int8 weights,
        weights planned as external data); refused by name when the form cannot hold it.
        `outputs`: the graph's outputs (by default the one `output_name`)."""
        return deploy.finish(self, tape, inputs, metadata,
                             [self.output_name] if outputs is None else outputs)

    # -- the network --------------------------------------------------------------------------------
    def _model(self, network: Module, loss: Loss) -> onnx.ModelProto:
        faults = self._preconditions(network, loss)
        if faults:
            raise ExportRefused(faults)
        if not isinstance(network, Network):  # written as code: traced
            from deepsharp_export_onnx.write.traced import export_module

            self._front = self._prepare_of(network)  # model_of writes it in front of the trace
            try:
                return export_module(self, network, loss)
            finally:
                self._front = None
        self.input_name, self.output_name = (
            given or own or default
            for given, own, default in zip(self._names, network.io_names, DEFAULT_NAMES))
        tape = Tape()
        prepare = self._prepare_of(network)
        if prepare is not None:
            x, inputs = write_preparation(tape, prepare, self.input_name)
        else:
            x, inputs = self._input(network, tape), [self.input_name]
        steps = network.logits_steps(loss)
        self._faults: list[str] = []
        z = self.write_steps(tape, steps, x)
        faults = self._faults
        if not faults:
            written = self._finish(tape, z, loss)
            faults += name_faults(tape, inputs, [(self.output_name, written)])
            faults += self._opset_faults(tape)
        if faults:
            raise ExportRefused(faults)
        metadata = self._metadata(network)
        if prepare is not None:
            metadata[META_PREPARATION] = preparation_metadata(prepare, self.input_name)
        return self.model_of(tape, inputs, metadata)

    def _prepare_of(self, network: Module) -> Any:
        return self.prepare if self.prepare is not None else getattr(network, "preparation", None)

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
            refusal = step.mask_refusal() if x.mask is not None else None
            if refusal is not None:  # the network refuses it by the same answer
                self._faults.append(f"step {step.place} ({step.spec.describe()}): {MASK_CARRIED}; "
                                    f"{refusal}")
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
        prepare = self._prepare_of(network)
        if prepare is not None:
            if isinstance(network, Network):
                dtype = network.steps[0].spec.input_dtype if network.steps else "float32"
            else:
                dtype = getattr(network, "input_dtype", "float32")
            rows = self.shape.rank == 1 and dtype == "float32"
            return preparation_faults(prepare, self.shape[0] if rows else None)
        return []

    def _input(self, network: Network, tape: Tape) -> Value:
        steps = network.steps
        dtype = steps[0].spec.input_dtype if steps else "float32"
        elem = TensorProto.INT64 if dtype == "int64" else TensorProto.FLOAT
        dims = example_dims(self.shape, ids=dtype == "int64")
        if network.data_format == "channels_first" and self.shape.rank == 2:
            dims = (BATCH, self.shape[0], STEPS)  # a series taken channels-first
        if STEPS in dims and _folds_steps(network):  # it runs at the example's length only
            dims = (BATCH, *self.shape)
        x = Value(self.input_name, dims, elem_type=elem)
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
