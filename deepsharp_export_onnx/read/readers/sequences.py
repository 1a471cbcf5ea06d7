"""Series nodes -> layers: the patterns `writers/sequences.py` writes, read back.

- Gather of a table by the ids -> embedding (with Sub and Cast to bool beside it: its padding
  index, whose mask later readers check their own against);
- Unsqueeze, Mul by 2 pi c, Sin/Cos, Concat, Transpose, MatMul, Transpose, Add -> periodic embedding;
- Shape and Add of a table's rows sliced by the length -> sine positions; for a masked series,
  Add of the table's rows gathered by each step's place among the real steps;
- Sub, Abs, ReduceMax, Cast and Mul -> masking.

(LSTM and GRU nodes are read in recurrent.py.)
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto

from deepsharp.layers.embedding import Embedding, PeriodicEmbedding, SinePositions, sine_table
from deepsharp.layers.series import Masking
from deepsharp_export_onnx.read.readers.base import Read, Reading, reads_fork, reads_pattern
from deepsharp_export_onnx.read.readers.masked import read_places
from deepsharp_export_onnx.read.readers.patterns import (
    attrs, axes_of, constant_list, consumer, consumers, float32_decimal, other_input, perm_of,
    producer, scalar,
)


# -- embeddings --------------------------------------------------------------------------------------
def _table(r: Reading, gather: onnx.NodeProto) -> np.ndarray | None:
    if len(gather.input) < 2 or gather.input[1] != r.value:
        return None
    table = r.view.constant(gather.input[0])
    return table if table is not None and table.ndim == 2 else None


def _embedding_read(r: Reading, gather: onnx.NodeProto, table: np.ndarray, nodes: list,
                    padding_index: int | None) -> Read:
    if attrs(gather).get("axis", 0) != 0:
        raise r.unreadable(gather, "an embedding looks rows up: the Gather's axis must be 0")
    r.rank += 1
    spec = Embedding(vocabulary=table.shape[0], width=table.shape[1], padding_index=padding_index)
    return Read(gather.output[0], [gather, *nodes], [spec], [{"weight": table}])


@reads_pattern("Gather")
def read_embedding(node: onnx.NodeProto, r: Reading) -> Read | None:
    table = _table(r, node)
    return None if table is None else _embedding_read(r, node, table, [], None)


@reads_pattern("Gather")
def refuse_one_step(node: onnx.NodeProto, r: Reading) -> Read | None:
    """A Gather of one step of a series (PyTorch's `y[:, -1]`, `y[:, 0]`) that no recurrent
    layer took as its last state: refused by name, with the ways out (after the embedding's
    pattern, which looks rows of a table up)."""
    if node.input[0] != r.value or r.rank != 3 or attrs(node).get("axis", 0) % 3 != 1 \
            or scalar(r, node.input[1]) is None:
        return None
    raise r.unreadable(node, f"step {scalar(r, node.input[1])} of a series: no layer takes one "
                             f"step (a one-way LSTM's or GRU's last step reads as its last "
                             f"state); take the mean over the steps or a global pool instead")


@reads_fork
def read_padded_embedding(nodes: list[onnx.NodeProto], r: Reading) -> Read | None:
    """Gather(table, ids) beside Cast(Sub(ids, pad), bool): an embedding with a padding index."""
    gather = next((n for n in nodes if n.op_type == "Gather"), None)
    sub = next((n for n in nodes if n.op_type == "Sub" and n.input[0] == r.value), None)
    if len(nodes) != 2 or gather is None or sub is None or _table(r, gather) is None:
        return None
    pad = scalar(r, sub.input[1])
    cast = consumer(r, sub.output[0], "Cast")
    if pad is None or cast is None or attrs(cast).get("to") != TensorProto.BOOL:
        raise r.unreadable(sub, "an embedding's padding mask is Cast(ids - padding_index, bool)")
    r.extra["mask"] = cast.output[0]
    return _embedding_read(r, gather, _table(r, gather), [sub, cast], int(pad))


@reads_pattern("Unsqueeze")
def read_periodic_embedding(node: onnx.NodeProto, r: Reading) -> Read | None:
    if axes_of(r, node) != [2] or r.rank != 2:
        return None
    mul = consumer(r, node.output[0], "Mul")
    turns = producer(r, other_input(mul, node.output[0]), "Mul") if mul is not None else None
    if turns is None:
        return None
    frequencies = r.view.constant(turns.input[0])
    two_pi = scalar(r, turns.input[1])
    sin_cos = sorted(consumers(r, mul.output[0]), key=lambda n: n.op_type, reverse=True)
    if frequencies is None or two_pi is None or [n.op_type for n in sin_cos] != ["Sin", "Cos"]:
        raise r.unreadable(node, "a periodic embedding turns the features by Mul(c, 2 pi) and "
                                 "takes their Sin and Cos")
    concat = consumer(r, sin_cos[0].output[0], "Concat")
    chain = [concat] if concat is not None and list(concat.input) == [n.output[0] for n in sin_cos] \
        else [None]
    for op_type in ("Transpose", "MatMul", "Transpose", "Add"):
        chain.append(consumer(r, chain[-1].output[0], op_type) if chain[-1] is not None else None)
    concat, turn, dense, back, add = chain
    weight = r.view.constant(dense.input[1]) if dense is not None else None
    bias = r.view.constant(other_input(add, back.output[0])) if add is not None else None
    if weight is None or bias is None or perm_of(turn) != [1, 0, 2] or perm_of(back) != [1, 0, 2]:
        raise r.unreadable(node, "a periodic embedding ends with its dense per feature: Transpose, "
                                 "MatMul by a constant, Transpose, Add of a constant")
    r.rank += 1
    spec = PeriodicEmbedding(frequencies=frequencies.shape[1], width=weight.shape[2])
    slots = {"frequencies": frequencies, "weight": weight, "bias": bias}
    return Read(add.output[0], [node, turns, mul, *sin_cos, concat, turn, dense, back, add],
                [spec], [slots])


@reads_fork
def read_sine_positions(nodes: list[onnx.NodeProto], r: Reading) -> Read | None:
    """Shape(x) and Add(x, Slice(table, 0, length)): the sine positions."""
    shape = next((n for n in nodes if n.op_type == "Shape"), None)
    add = next((n for n in nodes if n.op_type == "Add"), None)
    if len(nodes) != 2 or shape is None or add is None:
        return None
    length = consumer(r, shape.output[0], "Slice")
    rows = consumer(r, length.output[0], "Slice") if length is not None else None
    table = r.view.constant(rows.input[0]) if rows is not None else None
    if table is None or other_input(add, r.value) != rows.output[0] \
            or constant_list(r, length.input[1]) != [1] or constant_list(r, rows.input[1]) != [0]:
        raise r.unreadable(add, "sine positions add the rows of a constant table sliced to the "
                                "series' length, read from its Shape")
    _require_sine_table(r, add, table)
    return Read(add.output[0], [shape, length, rows, add], [SinePositions(max_length=table.shape[0])],
                [{}])


def _require_sine_table(r: Reading, add: onnx.NodeProto, table: np.ndarray) -> None:
    if table.ndim != 2 or not np.array_equal(table, sine_table(*table.shape)):
        raise r.unreadable(add, "the table added is not the sinusoidal positions' table")


@reads_pattern("Add")
def read_placed_sine_positions(node: onnx.NodeProto, r: Reading) -> Read | None:
    """Add(x, Gather(table, places)): the sine positions of a masked series' steps, each at its
    place among the real steps."""
    rows = producer(r, other_input(node, r.value), "Gather")
    table = r.view.constant(rows.input[0]) if rows is not None else None
    if r.value not in node.input or r.extra.get("mask") is None or table is None:
        return None
    if attrs(rows).get("axis", 0) != 0:
        raise r.unreadable(rows, "sine positions gather the table's rows (axis 0)")
    _require_sine_table(r, node, table)
    places = read_places(r, node, rows.input[1])
    return Read(node.output[0], [*places.nodes, rows, node],
                [SinePositions(max_length=table.shape[0])], [{}])


@reads_fork
def read_masking(nodes: list[onnx.NodeProto], r: Reading) -> Read | None:
    """Sub(x, value) -> Abs -> ReduceMax over the channels (kept: Cast to bool and float, the Mul
    of x; not kept: Cast to bool, the mask)."""
    sub = next((n for n in nodes if n.op_type == "Sub" and n.input[0] == r.value), None)
    mul = next((n for n in nodes if n.op_type == "Mul"), None)
    if len(nodes) != 2 or sub is None or mul is None:
        return None
    value = scalar(r, sub.input[1])
    distance = consumer(r, sub.output[0], "Abs")
    largest = consumers(r, distance.output[0]) if distance is not None else []
    kept = {attrs(n).get("keepdims", 1): n for n in largest if n.op_type == "ReduceMax"
            and axes_of(r, n) == [2]}
    real = consumer(r, kept[1].output[0], "Cast") if 1 in kept else None
    keep = consumer(r, real.output[0], "Cast") if real is not None else None
    mask = consumer(r, kept[0].output[0], "Cast") if 0 in kept else None
    if value is None or len(largest) != 2 or keep is None or mask is None \
            or other_input(mul, r.value) != keep.output[0]:
        raise r.unreadable(sub, "masking compares the steps with a constant value: Abs(x - value), "
                                "its ReduceMax over the channels, Cast to bool")
    r.extra["mask"] = mask.output[0]
    return Read(mul.output[0], [sub, distance, *largest, real, keep, mask, mul],
                [Masking(value=float32_decimal(value))], [{}])
