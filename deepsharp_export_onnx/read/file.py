"""OnnxFile: read an ONNX graph back as a network that gives the same numbers and trains again.

    network = OnnxFile(BinaryCrossEntropy()).read(stream)

The importer strips the loss's output activation, then walks from the graph's input to that
point, asking the reader registered for each node's op type; the readers' layer specs are lowered
and their slot values loaded. Layers that only act in training (dropout) leave no node; the
exporter records them in the metadata and the importer puts them back where they were, so the
network trains as it did and exports to the same bytes.

Before any reader, the graph is normalised (`normalise/`): constants folded, shapes inferred,
no-ops dropped, decompositions fused, so a reader meets one form of each layer whatever wrote the
graph. A graph taking channels-first images or series gives a network that takes them so too
(`ends.py`).

The graph's input annotation stays with the network as a precondition (its batch, and a series'
steps, symbolic): a batch that breaks it is refused with the `AnnotationViolation` the
annotation checker would raise.
"""

from __future__ import annotations

import json
import os
from typing import BinaryIO

import numpy as np
import onnx

from deepsharp.errors import DeepsharpError, ShapeError, SpecError
from deepsharp.io import FREE_ELEMENTS
from deepsharp.layers.base import LayerSpec, allocation_budget, make_spec, parse_spec
from deepsharp.layers.composite import insert_at, replace_at, spec_at
from deepsharp.layers.data_format import FromChannelsFirst, ToChannelsFirst
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
from deepsharp_export_onnx.read.preparation import split_preparation
from deepsharp_export_onnx.read.ends import (
    DATA_FORMATS, Ends, contract_dims, ends, example_shapes,
)
from deepsharp_export_onnx.read.lengths import length_for, mismatched_rows
from deepsharp_export_onnx.read.normalise import normalise
from deepsharp_export_onnx.read.readers.outputs import OUTPUT_READERS
from layout import Order


NO_READER = "no reader for op type"


def read_chain(r: Reading, stop: str, faults: list[str]) -> tuple[list[LayerSpec], list[dict]]:
    """Read the nodes from `r.value` to `stop` as a stack of layers (faults collected).

    After a refused node the walk goes on from its output when one value leads on; otherwise
    (a recurrent node's several outputs) it stops, and the nodes after the refused one are not
    refused again for being off the way."""
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
            if not isinstance(error, Unreadable):
                error = r.unreadable(consumers[0], f"the reader failed on it ({type(error).__name__}: "
                                                   f"{str(error)[:200]})")
            faults.append(str(error))
            node = error.node if error.node is not None else consumers[0]
            view.consume(*view.between(start, node), node)
            going_on = [o for o in node.output if o and (view.open_consumers(o) or o == stop)]
            if len(going_on) == 1 and len([o for o in node.output if o]) == 1:
                r.value = going_on[0]
                continue
            view.consume(*view.after(node))
            break
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
        raise r.unreadable(node, f"{NO_READER} {node.op_type}: no layer is read from it alone"
                                 f"{_pattern_hint(node.op_type)}")
    return reader(node, r)


def _pattern_hint(op_type: str) -> str:
    """For an op type read only as part of patterns: which."""
    patterns = PATTERN_READERS.get(op_type)
    if not patterns:
        return ""
    names = sorted({p.__name__.removeprefix("read_").replace("_", " ") for p in patterns})
    return f" (it starts {', '.join(names)} patterns, and these nodes are none of them)"


class OnnxFile:
    """Reads ONNX graphs as networks trained with `loss` (whose output activation the graph's
    last node must be)."""

    def __init__(self, loss: Loss, output: str | None = None,
                 data_format: str | None = None, series: str | None = None) -> None:
        """Args:
            loss: the loss the network is trained with; the graph's last node must be its
                output activation (a Sigmoid for BinaryCrossEntropy, ...).
            output: the graph output to read, for a graph with several (a classifier's label
                and probabilities); None for a graph with one.
            data_format: None to take and give values in the order the graph does (a PyTorch
                CNN's images channels-first), or "channels_last" / "channels_first" to choose.
            series: None, or "batch_first" to read a graph taking its series time-major
                (steps, batch, channels: PyTorch's nn.LSTM/nn.GRU with batch_first=False) as a
                network taking them batch-first (read/normalise/series.py).
        """
        if not isinstance(loss, Loss) or OUTPUT_READERS.lookup(loss) is None:
            raise ImportRefused([f"loss must be one of {OUTPUT_READERS.names()}, received {loss!r}"],
                                headline="OnnxFile: bad arguments")
        if output is not None and not isinstance(output, str):
            raise ImportRefused([f"output must be the name of a graph output, received "
                                 f"{output!r}"], headline="OnnxFile: bad arguments")
        if data_format not in (None, *DATA_FORMATS):
            raise ImportRefused([f"data_format must be None or one of {DATA_FORMATS}, received "
                                 f"{data_format!r}"], headline="OnnxFile: bad arguments")
        if series not in (None, "batch_first"):
            raise ImportRefused([f"series must be None or 'batch_first', received {series!r}"],
                                headline="OnnxFile: bad arguments")
        self.loss = loss
        self.output = output
        self.data_format = data_format
        self.series = series

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
        model, preparation = split_preparation(model)  # raw rows' steps, if any
        view = GraphView(normalise(model, self.output, self.series))
        end = ends(view, self.data_format)
        faults: list[str] = []
        try:
            before = OUTPUT_READERS.lookup(self.loss)(view, end.output.name)
        except Unreadable as error:
            raise ImportRefused([str(error)]) from None
        reading = Reading(view, end.input.name, end.order, rank=len(end.dims))
        specs, slots = read_chain(reading, before, faults)
        faults += [f"{GraphView.label(n)}: not on the way from the input to the output"
                   for n in view.unconsumed()]
        if faults:
            if any(NO_READER in f for f in faults):
                faults.append(f"op types read: {', '.join(sorted(READERS))}; and in patterns: "
                              f"{', '.join(sorted(set(PATTERN_READERS) - set(READERS)))}")
            raise ImportRefused(faults)
        specs, slots = self._turns(end, reading, specs, slots)  # first: places count them
        specs, slots = self._training_only(view, specs, slots)
        stack = self._training_settings(view, Sequential(layers=tuple(specs)))
        state = {f"{i}.{name}": value for i, s in enumerate(slots) for name, value in s.items()}
        network = self._lower(view, end, stack, state)
        network.load_state_dict(state, strict=True)
        features = json.loads(view.metadata[META_FEATURES]) if META_FEATURES in view.metadata else None
        contract = InputContract(end.input.name, contract_dims(
            end.as_taken(declared_dims(end.input.type)), self._series_axis(end, network)))
        network = network.with_io_names(end.input.name if preparation is None else None,
                                        end.output.name)
        return network.with_features(features).with_input_check(contract).with_preparation(
            preparation)

    # -- the parts -------------------------------------------------------------------------------
    @staticmethod
    def _turns(end: Ends, reading: Reading, specs: list, slots: list) -> tuple[list, list]:
        """The data format chosen at both ends: a network taking channels-first values starts by
        turning them (and gives them back channels-first when its output has places)."""
        if not end.take_first:
            return specs, slots
        specs, slots = [FromChannelsFirst(), *specs], [{}, *slots]
        if reading.rank >= 3 and (reading.order is Order.CHANNELS_FIRST or not end.graph_first):
            specs, slots = [*specs, ToChannelsFirst()], [*slots, {}]
        return specs, slots

    @staticmethod
    def _lower(view: GraphView, end: Ends, stack: Sequential, state: dict) -> Network:
        """Lowered for the exporter's example shape, else for the input's dims (a symbolic axis
        at the first example length the layers take; where a dense layer's kernel then has
        other rows than the graph's, at the length that gives them: read/lengths.py)."""
        failure = None
        example = tuple(Shape.parse(view.metadata[META_SHAPE])) if META_SHAPE in view.metadata \
            else None
        template = end.example_dims(example)
        symbolic = [i for i, d in enumerate(template) if not (isinstance(d, int) and d > 0)]
        held = sum(int(v.size) for v in view.initializers.values())
        for dims in example_shapes(template):
            try:
                with allocation_budget(held + FREE_ELEMENTS):  # no shape outgrows the file
                    network = stack.lower(Shape(*dims), RandomStream(0))
                    wrong = mismatched_rows(network, state) if len(symbolic) == 1 else None
                    length = None if wrong is None else length_for(stack, dims, symbolic[0], *wrong)
                    if length is None:
                        return network
                    return stack.lower(Shape(*(length if i == symbolic[0] else d
                                               for i, d in enumerate(dims))), RandomStream(0))
            except (ShapeError, SpecError) as error:
                failure = error
        raise ImportRefused([f"the layers read ({stack}) cannot be built for the graph's input "
                             f"{end.input.name!r} of dims {list(end.dims)}: {failure}"])

    @staticmethod
    def _series_axis(end: Ends, network: Network) -> int | None:
        """The graph input's steps axis, for a network over series (ids, or steps x channels)."""
        steps = network.steps
        ids = bool(steps) and steps[0].spec.input_dtype == "int64"
        if ids and len(end.dims) == 2:
            return 1
        if len(end.dims) == 3:
            return 2 if end.take_first else 1
        return None

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
