"""OnnxFile: read an ONNX graph back as a network that gives the same numbers and trains again.

    network = OnnxFile(BinaryCrossEntropy()).read(stream)

The importer strips the loss's output activation, then walks from the graph's input to that
point, asking the reader registered for each node's op type; the readers' layer specs are lowered
and their slot values loaded. Layers that only act in training (dropout) leave no node; the
exporter records them in the metadata and the importer puts them back where they were, so the
network trains as it did and exports to the same bytes.

The graph's input annotation stays with the network as a precondition: a batch that breaks it is
refused with the `AnnotationViolation` the annotation checker would raise.
"""

from __future__ import annotations

import json
import os
from typing import BinaryIO

import numpy as np
import onnx

from deepsharp.errors import DeepsharpError, SpecError
from deepsharp.io import FREE_ELEMENTS
from deepsharp.layers.base import LayerSpec, allocation_budget, make_spec, parse_spec
from deepsharp.layers.composite import insert_at, replace_at, spec_at
from deepsharp.losses import Loss
from deepsharp.network import Network
from deepsharp.random import RandomStream
from deepsharp.sequential import Sequential
from deepsharp.shape import Shape
from deepsharp_export_onnx.check.annotations import InputContract, declared_dims
from deepsharp_export_onnx.errors import ImportRefused, OnnxError
from deepsharp_export_onnx.read.source import load_external_data, model_and_folder
from deepsharp_export_onnx.read.validate import validate
from deepsharp_export_onnx.write.export import (
    META_FEATURES, META_SHAPE, META_TRAINING_ONLY, META_TRAINING_SETTINGS,
)
from deepsharp_export_onnx.read.readers import (
    FORK_READERS, PATTERN_READERS, READERS, GraphView, Read, Reading, Unreadable,
)
from deepsharp_export_onnx.read.readers.outputs import OUTPUT_READERS
from layout import Order


def read_chain(r: Reading, stop: str, faults: list[str]) -> tuple[list[LayerSpec], list[dict]]:
    """Read the nodes from `r.value` to `stop` as a stack of layers (faults collected)."""
    specs: list[LayerSpec] = []
    slots: list[dict[str, np.ndarray]] = []
    view = r.view
    while r.value != stop:
        start = r.value
        consumers = view.open_consumers(start)
        if not consumers:
            faults.append(f"value {start!r} leads nowhere: no node reads it on the way to the output")
            break
        try:
            read = _read_one(consumers, r)
        except (Unreadable, *_STRAY) as error:  # a stray error is a reader's bug: name the node
            faults.append(str(error) if isinstance(error, Unreadable) else
                          f"{GraphView.label(consumers[0])}: the reader failed on it "
                          f"({type(error).__name__}: {str(error)[:200]})")
            node = consumers[0]
            view.consume(node)
            r.value = node.output[0]
            continue
        view.consume(*read.nodes)
        specs += read.specs
        slots += read.slots
        r.value = read.output
        if read.order is not None:
            r.order = read.order
        if read.rank is not None:
            r.rank = read.rank
        left = view.open_consumers(start)
        if left:
            faults.append(f"value {start!r} is also read by {', '.join(GraphView.label(n) for n in left)}: "
                          f"the graph forks where no layer does")
    return specs, slots


# What a reader can raise on a graph the validation let through but the reader did not expect:
# each becomes a fault naming the node (a safety net; the checks belong in validate.py).
_STRAY = (ValueError, IndexError, KeyError, TypeError, AttributeError, ArithmeticError,
          RecursionError, AssertionError)


def _read_one(consumers: list[onnx.NodeProto], r: Reading) -> Read:
    if len(consumers) > 1:
        for fork_reader in FORK_READERS:
            read = fork_reader(consumers, r)
            if read is not None:
                return read
    node = consumers[0]
    for pattern_reader in PATTERN_READERS.get(node.op_type, ()):
        read = pattern_reader(node, r)
        if read is not None:
            return read
    reader = READERS.get(node.op_type)
    if reader is None:
        raise Unreadable(f"{GraphView.label(node)}: no reader for op type {node.op_type}; "
                         f"readable: {', '.join(sorted(READERS))}")
    return reader(node, r)


class OnnxFile:
    """Reads ONNX graphs as networks trained with `loss` (whose output activation the graph's
    last node must be)."""

    def __init__(self, loss: Loss) -> None:
        if not isinstance(loss, Loss) or OUTPUT_READERS.lookup(loss) is None:
            raise ImportRefused([f"loss must be one of {OUTPUT_READERS.names()}, received {loss!r}"],
                                headline="OnnxFile: bad arguments")
        self.loss = loss

    def read(self, source: str | os.PathLike | BinaryIO | bytes | onnx.ModelProto, *,
             folder: str | os.PathLike | None = None) -> Network:
        """The network the graph in `source` holds.

        `source` is a path (external data is read from the file's folder, confined to it), or
        bytes, a binary stream or a ModelProto (external data only from `folder`, when given);
        see `read/source.py` for the rule. The graph is validated (`read/validate.py`) before
        any reader sees it; every fault is an ImportRefused naming it.
        """
        model, base = model_and_folder(source, folder)
        load_external_data(model, base)
        validate(model)
        try:
            return self._read(model)
        except OnnxError:
            raise
        except DeepsharpError as error:  # the layers read cannot be built or filled as declared
            raise ImportRefused([f"the layers read cannot be built as the graph declares them: "
                                 f"{error}"]) from None
        except (*_STRAY, MemoryError) as error:  # the last net: a fault no check foresaw
            raise ImportRefused([f"the importer failed on this graph ({type(error).__name__}: "
                                 f"{str(error)[:200]})"]) from error

    def _read(self, model: onnx.ModelProto) -> Network:
        view = GraphView(model)
        x, out, shape = self._ends(view)
        faults: list[str] = []
        try:
            before = OUTPUT_READERS.lookup(self.loss)(view, out.name)
        except Unreadable as error:
            raise ImportRefused([str(error)]) from None
        reading = Reading(view, x.name, Order.CHANNELS_LAST, rank=shape.rank + 1)
        specs, slots = read_chain(reading, before, faults)
        faults += [f"{GraphView.label(n)}: not on the way from the input to the output"
                   for n in view.unconsumed()]
        if faults:
            raise ImportRefused(faults)
        specs, slots = self._training_only(view, specs, slots)
        stack = self._training_settings(view, Sequential(layers=tuple(specs)))
        held = sum(int(v.size) for v in view.initializers.values())
        with allocation_budget(held + FREE_ELEMENTS):  # a declared shape cannot outgrow the file
            network = stack.lower(shape, RandomStream(0))
        state = {f"{i}.{name}": value for i, s in enumerate(slots) for name, value in s.items()}
        network.load_state_dict(state, strict=True)
        features = json.loads(view.metadata[META_FEATURES]) if META_FEATURES in view.metadata else None
        contract = InputContract(x.name, declared_dims(x.type))
        return network.with_features(features).with_input_check(contract)

    # -- the parts -------------------------------------------------------------------------------
    @staticmethod
    def _ends(view: GraphView) -> tuple[onnx.ValueInfoProto, onnx.ValueInfoProto, Shape]:
        inputs, outputs = view.inputs, list(view.graph.output)
        if len(inputs) != 1 or len(outputs) != 1:
            raise ImportRefused([f"a network reads one input and gives one output; this graph has "
                                 f"inputs {[i.name for i in inputs]} and outputs "
                                 f"{[o.name for o in outputs]}"])
        x = inputs[0]
        dims = view.dims(x.name)
        if dims is None or len(dims) < 2:
            raise ImportRefused([f"input {x.name!r} must be annotated (batch, ...), received {dims}"])
        if META_SHAPE in view.metadata:
            shape = Shape.parse(view.metadata[META_SHAPE])
        else:  # an axis left symbolic takes size 1 as its example
            shape = Shape(*(d if isinstance(d, int) and d > 0 else 1 for d in dims[1:]))
        return x, outputs[0], shape

    @staticmethod
    def _training_only(view: GraphView, specs: list[LayerSpec], slots: list[dict]):
        """Put back the layers that act only in training, at the places they held: a place in a
        composite layer's branch (`3.branch.1`) goes into that branch, and the branch's later
        slots move along. Shallower places first, each stack's in increasing order, so every
        place names a position in the finished stack."""
        if META_TRAINING_ONLY not in view.metadata:
            return specs, slots
        specs, slots = list(specs), list(slots)
        entries = json.loads(view.metadata[META_TRAINING_ONLY])
        for entry in sorted(entries, key=lambda e: _place_key(str(e["place"]))):
            place, spec = str(entry["place"]), parse_spec(entry["layer"])
            top, _, inner = place.partition(".")
            index = int(top)
            if not inner:
                if index > len(specs):
                    raise ImportRefused([f"metadata {META_TRAINING_ONLY}: place {place} is beyond "
                                         f"the {len(specs)} layers read"])
                specs.insert(index, spec)
                slots.insert(index, {})
                continue
            if index >= len(specs):
                raise ImportRefused([f"metadata {META_TRAINING_ONLY}: place {place} is in layer "
                                     f"{index}, beyond the {len(specs)} layers read"])
            try:
                stack = insert_at(Sequential(layers=(specs[index],)), f"0.{inner}", spec)
            except SpecError as error:
                raise ImportRefused([f"metadata {META_TRAINING_ONLY}: {error}"]) from None
            specs[index] = stack[0]
            slots[index] = _shift_slots(slots[index], inner)
        return specs, slots


    @staticmethod
    def _training_settings(view: GraphView, stack: Sequential) -> Sequential:
        """Give back the settings no node holds (batch norm's momentum) from the metadata."""
        if META_TRAINING_SETTINGS not in view.metadata:
            return stack
        for place, values in sorted(json.loads(view.metadata[META_TRAINING_SETTINGS]).items()):
            try:
                spec = spec_at(stack, place)
                unknown = sorted(set(values) - set(spec.training_fields))
                if unknown:
                    raise SpecError(f"{spec.describe()} at place {place} has no training setting "
                                    f"{', '.join(unknown)}")
                stack = replace_at(stack, place, make_spec(type(spec), spec.kind,
                                                           **{**spec.model_dump(), **values}))
            except SpecError as error:
                raise ImportRefused([f"metadata {META_TRAINING_SETTINGS}: {error}"]) from None
        return stack


def _place_key(place: str) -> tuple:
    parts = place.split(".")
    return (len(parts), tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in parts))


def _shift_slots(slots: dict[str, np.ndarray], inner: str) -> dict[str, np.ndarray]:
    """A composite's slots (`branch.2.weight`) after a layer is inserted at `inner`
    (`branch.1`): every slot of that branch at or after the position moves one on."""
    parent, _, position = inner.rpartition(".")
    prefix, at = f"{parent}.", int(position)
    shifted = {}
    for path, value in slots.items():
        if path.startswith(prefix):
            head, _, rest = path[len(prefix):].partition(".")
            if head.isdigit() and int(head) >= at:
                path = f"{prefix}{int(head) + 1}.{rest}"
        shifted[path] = value
    return shifted
