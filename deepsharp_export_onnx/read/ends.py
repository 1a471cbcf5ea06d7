"""The two ends of a graph read as a network: what it takes (its one input, in which order, of what
example shape, under what contract) and what it gives.

- Order: a graph whose input (a series or an image) first meets a channels-first operator (Conv,
  a pool, BatchNormalization, ...) takes it channels-first, as PyTorch holds it; the network read
  then starts with `from_channels_first()` (and ends with `to_channels_first()` when its output
  still has places), so it takes and gives what the graph does. `data_format="channels_last"`
  asks for a network that takes and gives channels-last values instead.
- Example shape: the exporter's own (metadata), else the input's fixed axes; an axis the graph
  leaves symbolic (a series' steps) takes the first example length the layers accept.
- Contract: the input's annotation, kept as a precondition of every batch, with its batch axis
  (and a series' steps) symbolic, so the network runs and trains at any batch size even when the
  graph was written for one.
"""

from __future__ import annotations

from dataclasses import dataclass

import onnx

from deepsharp_export_onnx.errors import ImportRefused
from deepsharp_export_onnx.read.readers.view import GraphView
from layout import Order, permute_dims, to_channels_first, to_channels_last

# operators that read their input channels-first: the first one met decides a graph's order
CHANNELS_FIRST_OPS = {
    "Conv", "ConvTranspose", "MaxPool", "AveragePool", "LpPool", "GlobalAveragePool",
    "GlobalMaxPool", "GlobalLpPool", "BatchNormalization", "InstanceNormalization",
    "GroupNormalization", "LpNormalization", "Resize", "Upsample", "LRN", "MaxRoiPool",
}
# operators that read the last axis as the channels (or turn the value): a channels-last graph
CHANNELS_LAST_OPS = {
    "MatMul", "Gemm", "Transpose", "LSTM", "GRU", "RNN", "LayerNormalization", "Softmax",
    "LogSoftmax", "Flatten", "Reshape", "Gather", "RMSNormalization", "Gelu",
}
EXAMPLE_LENGTHS = (1, 8, 32, 128)  # tried in turn for an axis the graph leaves symbolic
CHANNELS_FIRST = "channels_first"
CHANNELS_LAST = "channels_last"
DATA_FORMATS = (CHANNELS_FIRST, CHANNELS_LAST)


@dataclass(frozen=True)
class Ends:
    input: onnx.ValueInfoProto
    output: onnx.ValueInfoProto
    dims: tuple            # the graph input's dims, batch first
    graph_first: bool      # whether the graph takes its input channels-first
    take_first: bool       # whether the network read takes it channels-first

    @property
    def order(self) -> Order:
        """The order of the graph's input relative to the layers' own (channels-last)."""
        return Order.CHANNELS_FIRST if self.graph_first else Order.CHANNELS_LAST

    def example_dims(self, example: tuple | None = None) -> tuple:
        """The network's example dims (no batch), symbols left for `example_shapes`; `example`
        is the exporter's own example shape (metadata), in the order of the graph's input."""
        dims = tuple(self.dims) if example is None else (self.dims[0], *example)
        return self.as_taken(dims)[1:]

    def as_taken(self, dims: tuple) -> tuple:
        """Dims in the graph input's order (batch first) in the order the network takes."""
        if self.graph_first == self.take_first:
            return tuple(dims)
        return permute_dims(tuple(dims), to_channels_last(len(dims)) if self.graph_first
                            else to_channels_first(len(dims)))


def ends(view: GraphView, data_format: str | None) -> Ends:
    inputs, outputs = view.inputs, list(view.graph.output)
    if len(inputs) != 1 or len(outputs) != 1:
        raise ImportRefused([f"a network reads one input and gives one output; this graph has "
                             f"inputs {[i.name for i in inputs]} and outputs "
                             f"{[o.name for o in outputs]}"])
    x = inputs[0]
    dims = view.dims(x.name)
    if dims is None or len(dims) < 2:
        raise ImportRefused([f"input {x.name!r} must be annotated (batch, ...), received {dims}"])
    first = len(dims) >= 3 and takes_channels_first(view, x.name)
    take = first if data_format is None else (data_format == CHANNELS_FIRST and len(dims) >= 3)
    return Ends(x, outputs[0], tuple(dims), first, take)


def takes_channels_first(view: GraphView, value: str) -> bool:
    """Whether the first operator that cares about the order of `value`'s axes, on the way from
    it, reads it channels-first."""
    reached = {value}
    for node in view.nodes:
        if not any(i in reached for i in node.input):
            continue
        if node.op_type in CHANNELS_FIRST_OPS:
            return True
        if node.op_type in CHANNELS_LAST_OPS:
            return False
        reached.update(o for o in node.output if o)
    return False


def example_shapes(dims: tuple) -> list[tuple[int, ...]]:
    """The example shapes to try: symbols (or unknown axes) at each of EXAMPLE_LENGTHS."""
    if all(isinstance(d, int) and d > 0 for d in dims):
        return [tuple(dims)]
    return [tuple(d if isinstance(d, int) and d > 0 else n for d in dims) for n in EXAMPLE_LENGTHS]


def contract_dims(dims: tuple, series_axis: int | None) -> tuple:
    """The input annotation kept as the network's precondition: the batch symbolic (and the
    series' steps, at `series_axis`)."""
    kept = list(dims)
    kept[0] = kept[0] if isinstance(kept[0], str) else "batch"
    if series_axis is not None and series_axis < len(kept) and not isinstance(kept[series_axis], str):
        kept[series_axis] = "steps"
    return tuple(kept)
