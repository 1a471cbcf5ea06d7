"""ONNX nodes for the sequence primitives, in the shared table (`nodes.PRIMITIVE_NODES`), and the
node groups the sequence writers share with them.

- `embedding` -> Gather on axis 0;
- `attention` -> the unfused pattern of the oldest operator sets (no opset-23 Attention):
  MatMul(q, k^T), Mul by the scale, an Add of -1e9 where the key mask (or the causal order) leaves
  a key out, Softmax over the last axis, MatMul by v, and a Mul by 0 for a query with no key left;
- `lstm` / `gru` -> one LSTM / GRU node (one direction), gates reordered by `layout`; their writer
  returns one name per result (y, last state[, last cell]).

And `real_first_nodes` / `along_steps_nodes`, the order putting a masked series' real steps first
(`deepsharp.layers.masks.real_first`), which the recurrent and sine-position writers share.

The recurrent entries need the weights as constants (initializers on the tape): ONNX's LSTM takes
them in its own gate order, which `layout` makes from the numbers.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
from onnx import TensorProto

from deepsharp.tensors.ops.attention import LEFT_OUT
from deepsharp.tracing import dims
from deepsharp_export_onnx.write.nodes import Emit, writes_primitive
from layout import (
    gru_biases_to_onnx, gru_kernel_to_onnx, lstm_biases_to_onnx, lstm_kernel_to_onnx,
)

ONNX_RECURRENT = {"lstm": ("LSTM", lstm_kernel_to_onnx, lstm_biases_to_onnx),
                  "gru": ("GRU", gru_kernel_to_onnx, gru_biases_to_onnx)}


@writes_primitive("embedding", dims=dims.embedding)
def _embedding(emit: Emit, inputs: Sequence[str], attrs: dict, ranks: Sequence[int]) -> str:
    """The padding index only matters for gradients: the lookup is a plain Gather."""
    return emit("Gather", [inputs[0], inputs[1]], {"axis": 0})


# -- attention ---------------------------------------------------------------------------------------
def allowed_nodes(emit: Emit, scores: str, key_mask: str | None, causal: bool,
                  rank: int) -> str | None:
    """A bool value broadcastable to the scores (..., Tq, Tk): which keys each query may see."""
    allowed = None
    if key_mask is not None:  # (batch, Tk) -> (batch, 1, ..., 1, Tk)
        allowed = emit("Unsqueeze", [key_mask], {"axes": list(range(1, rank - 1))},
                       suffix="key_mask")
    if causal:  # key j is seen by query i when j <= i: not (j > i)
        shape = emit("Shape", [scores], suffix="shape")
        zero = emit.constant("zero", np.asarray(0, np.int64))
        one = emit.constant("one", np.asarray(1, np.int64))
        ranges = []
        for label, axis in (("queries", rank - 2), ("keys", rank - 1)):
            size = emit("Gather", [shape, emit.constant(f"{label}_axis", np.asarray(axis, np.int64))],
                        {"axis": 0}, suffix=f"{label}_count")
            ranges.append(emit("Range", [zero, size, one], suffix=f"{label}_range"))
        query = emit("Unsqueeze", [ranges[0]], {"axes": [1]}, suffix="query_column")
        key = emit("Unsqueeze", [ranges[1]], {"axes": [0]}, suffix="key_row")
        future = emit("Greater", [key, query], suffix="future")
        order = emit("Not", [future], suffix="causal")
        allowed = order if allowed is None else emit("And", [allowed, order], suffix="allowed")
    return allowed


def attention_nodes(emit: Emit, q: str, k_t: str, v: str, key_mask: str | None, *,
                    scale: float, causal: bool, rank: int) -> str:
    """softmax(q k_t * scale + bias) v, zeros for a query with no key left; k_t is k with its
    last two axes swapped. Returns the weighted values (..., Tq, dv)."""
    scores = emit("MatMul", [q, k_t], suffix="scores")
    scores = emit("Mul", [scores, emit.constant("scale", np.asarray(scale, np.float32), np.float32)],
                  suffix="scaled")
    allowed = allowed_nodes(emit, scores, key_mask, causal, rank)
    if allowed is not None:
        bias = emit("Where", [allowed, emit.constant("kept", np.asarray(0.0, np.float32), np.float32),
                              emit.constant("left_out", np.asarray(LEFT_OUT, np.float32),
                                            np.float32)], suffix="bias")
        scores = emit("Add", [scores, bias], suffix="masked")
    weights = emit("Softmax", [scores], {"axis": rank - 1, "_last_axis": True}, suffix="weights")
    out = emit("MatMul", [weights, v], suffix="weighted")
    if key_mask is not None:  # a query whose every key is left out gives zeros
        seen = emit("Cast", [allowed], {"to": TensorProto.FLOAT}, suffix="seen")
        any_key = emit("ReduceMax", [seen], {"axes": [rank - 1], "keepdims": 1}, suffix="any_key")
        out = emit("Mul", [out, any_key], suffix="answered")
    return out


@writes_primitive("attention", dims=dims.attention)
def _attention(emit: Emit, inputs: Sequence[str], attrs: dict, ranks: Sequence[int]) -> str:
    rank = ranks[0]
    perm = list(range(rank))
    perm[-2], perm[-1] = perm[-1], perm[-2]
    k_t = emit("Transpose", [inputs[1]], {"perm": perm}, suffix="keys_t")
    return attention_nodes(emit, inputs[0], k_t, inputs[2], inputs[3] if len(inputs) > 3 else None,
                           scale=float(attrs["scale"]), causal=bool(attrs["causal"]), rank=rank)


# -- a masked series' real steps first ---------------------------------------------------------------
def real_first_nodes(emit: Emit, mask: str) -> tuple[str, str]:
    """(places, order), int64 (batch, steps), from a series' bool mask (batch, steps): where each
    step goes, and which step goes to each place, when the real steps come first in their order
    and the padding after them in its order:

        real_before = CumSum(Cast(mask, int64), exclusive)         (the rank of a real step)
        padded_before = CumSum(Cast(Not(mask), int64), exclusive)
        places = Where(mask, real_before, padded_before + ReduceSum(real, keepdims))
        order = ScatterElements(places, places, real_before + padded_before)   (the inverse)

    No sort (TopK): every node is exact on integers and runs from operator set 11."""
    steps_axis = emit.constant("steps_axis", np.asarray(1, np.int64))
    real = emit("Cast", [mask], {"to": TensorProto.INT64}, suffix="real")
    padded = emit("Cast", [emit("Not", [mask], suffix="padding")], {"to": TensorProto.INT64},
                  suffix="padded")
    real_before = emit("CumSum", [real, steps_axis], {"exclusive": 1}, suffix="real_before")
    padded_before = emit("CumSum", [padded, steps_axis], {"exclusive": 1}, suffix="padded_before")
    count = emit("ReduceSum", [real], {"axes": [1], "keepdims": 1}, suffix="real_count")
    after = emit("Add", [padded_before, count], suffix="padded_places")
    places = emit("Where", [mask, real_before, after], suffix="places")
    position = emit("Add", [real_before, padded_before], suffix="position")
    order = emit("ScatterElements", [places, places, position], {"axis": 1}, suffix="order")
    return places, order


def along_steps_nodes(emit: Emit, x: str, index: str, suffix: str) -> str:
    """x (batch, steps, ...) reordered along the steps: out[b, k] = x[b, index[b, k]], one
    GatherND per series (batch_dims=1) by the index as a column: whole steps are copied (five
    times faster in ONNX Runtime than a GatherElements by the index spread over the channels)."""
    column = emit("Unsqueeze", [index], {"axes": [2]}, suffix=f"{suffix}_index")
    return emit("GatherND", [x, column], {"batch_dims": 1}, suffix=suffix)


# -- recurrent -----------------------------------------------------------------------------------------
def recurrent_arrays(kind: str, directions: Sequence[Sequence[np.ndarray]]
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """ONNX's W, R and B, (directions, G*H, in), (directions, G*H, H), (directions, 2*G*H), from
    our (weight_ih, weight_hh, bias_ih, bias_hh) of each direction, forward first."""
    _, kernel_to_onnx, biases_to_onnx = ONNX_RECURRENT[kind]
    w = np.stack([kernel_to_onnx(d[0]) for d in directions])
    r = np.stack([kernel_to_onnx(d[1]) for d in directions])
    b = np.stack([biases_to_onnx(d[2], d[3]) for d in directions])
    return w, r, b


def recurrent_node(emit: Emit, kind: str, x_time_major: str, w: str, r: str, b: str,
                   lengths: str | None, *, hidden: int, direction: str, outputs: int,
                   suffix: str | None = None) -> list[str]:
    """One LSTM/GRU node on x (steps, batch, in); initial states zero. Returns its outputs."""
    op_type = ONNX_RECURRENT[kind][0]
    attrs = {"hidden_size": hidden, "direction": direction}
    if kind == "gru":
        attrs["linear_before_reset"] = 1
    return emit(op_type, [x_time_major, w, r, b] + ([lengths] if lengths else []), attrs,
                suffix=suffix, outputs=outputs)


def _recurrent(kind: str):
    def write(emit: Emit, inputs: Sequence[str], attrs: dict, ranks: Sequence[int]) -> list[str]:
        arrays = []
        for name in inputs[1:5]:
            if name not in emit.tape.initializers:
                raise ValueError(f"{kind}: the weights must be constants to be written as ONNX's "
                                 f"{ONNX_RECURRENT[kind][0]} (which orders the gates its own way); "
                                 f"{name!r} is computed in the graph")
            arrays.append(emit.tape.initializers[name])
        w, r, b = recurrent_arrays(kind, [arrays])
        lengths = None
        if len(inputs) > 5:
            lengths = emit("Cast", [inputs[5]], {"to": TensorProto.INT32}, suffix="lengths")
        x = emit("Transpose", [inputs[0]], {"perm": [1, 0, 2]}, suffix="time_major")
        count = 3 if kind == "lstm" else 2
        results = recurrent_node(emit, kind, x, emit.constant("W", w, np.float32),
                                 emit.constant("R", r, np.float32), emit.constant("B", b, np.float32),
                                 lengths, hidden=arrays[1].shape[0],
                                 direction="reverse" if attrs["reverse"] else "forward",
                                 outputs=count, suffix="node")
        y = emit("Squeeze", [results[0]], {"axes": [1]}, suffix="y_time_major")
        names = [emit("Transpose", [y], {"perm": [1, 0, 2]}, suffix="y")]
        for index, label in enumerate(("h", "c")[:count - 1], start=1):
            names.append(emit("Squeeze", [results[index]], {"axes": [0]}, suffix=f"last_{label}"))
        return names

    return write


writes_primitive("lstm", dims=dims.recurrent)(_recurrent("lstm"))
writes_primitive("gru", dims=dims.recurrent)(_recurrent("gru"))
