"""A Transpose to time-major, then one LSTM/GRU node per layer -> lstm/gru, in the forms the
exporter writes and the forms PyTorch's two exporters write (after normalising: zero initial
states dropped, Gather of one state turned into Squeeze).

Between layers the series stays time-major: (steps, directions, batch, units) becomes
(steps, batch, directions * units) by Squeeze of the directions axis (one direction) or by
Transpose [0, 2, 1, 3] and a Reshape joining the last two axes. The stack is read out as
- a series: the same, then Transpose [1, 0, 2] to batch-major (or the exporter's Transpose
  [2, 0, 1, 3] and Reshape [0, 0, -1]);
- its last states (directions, batch, units): Squeeze of axis 0 (one direction), Gather 0 and 1
  joined by a Concat on the last axis (both), or the exporter's Transpose [1, 0, 2] and
  Reshape [0, -1];
- the series' last step, Gather of index -1 on the steps axis: the last state, for one direction
  (for two, the reverse direction's last state is at the first step, and the form is refused).

The exporter writes a masked series' stack between two reorderings (`real_first_nodes`): a
GatherND by the order putting the real steps first before the Transpose, and, for a returned
series, a GatherND by the places after the readout. Graphs without them (written
before, for padding at the end) read as the same layer.
"""

from __future__ import annotations

import numpy as np
import onnx

from deepsharp.layers.recurrent import DIRECTIONS, Gru, Lstm
from deepsharp_export_onnx.read.readers.base import Read, Reading, reads, reads_pattern
from deepsharp_export_onnx.read.readers.masked import (
    RealFirst, read_along_steps, read_order,
)
from deepsharp_export_onnx.read.readers.patterns import (
    attrs, axes_of, constant_list, consumer, consumers, perm_of, producer, reshaped_dims, scalar,
)
from layout import (
    onnx_to_gru_biases, onnx_to_gru_kernel, onnx_to_lstm_biases, onnx_to_lstm_kernel,
)

RECURRENT = {"LSTM": (Lstm, 4, onnx_to_lstm_kernel, onnx_to_lstm_biases),
             "GRU": (Gru, 3, onnx_to_gru_kernel, onnx_to_gru_biases)}
# attributes that may be written at their defaults
DEFAULTS = {"layout": 0, "input_forget": 0, "direction": "forward",
            "activations": {"LSTM": ["Sigmoid", "Tanh", "Tanh"], "GRU": ["Sigmoid", "Tanh"]}}
READ = {"hidden_size", "direction", "linear_before_reset", "layout", "input_forget", "activations"}


def _lengths(r: Reading, node: onnx.NodeProto, name: str) -> list[onnx.NodeProto]:
    """The nodes making `sequence_lens` from the series' mask: ReduceSum(Cast(mask, int32))."""
    total = producer(r, name, "ReduceSum")
    count = producer(r, total.input[0], "Cast") if total is not None else None
    if count is None or axes_of(r, total) != [1] or attrs(total).get("keepdims", 1) != 0:
        raise r.unreadable(node, "its sequence_lens must be the count of the series' mask, "
                                 "ReduceSum(Cast(mask, int32), axes=[1])")
    if count.input[0] != r.extra.get("mask"):
        raise r.unreadable(node, f"its sequence_lens count {count.input[0]!r}, which is not the "
                                 f"mask of the series it reads")
    return [count, total]


def _refused_attributes(node: onnx.NodeProto) -> list[str]:
    found = attrs(node)
    refused = [f"{name}={found[name]!r}" for name in sorted(set(found) - READ)]
    for name in ("layout", "input_forget"):
        if found.get(name, DEFAULTS[name]) != DEFAULTS[name]:
            refused.append(f"{name}={found[name]!r}")
    activations = found.get("activations")
    if activations is not None and [a.decode() if isinstance(a, bytes) else a
                                    for a in activations] != DEFAULTS["activations"][node.op_type]:
        refused.append(f"activations={list(activations)!r}")
    if found.get("direction", "forward") not in ("forward", "bidirectional"):
        refused.append(f"direction={found['direction']!r}")
    if node.op_type == "GRU" and found.get("linear_before_reset", 0) != 1:
        refused.append("linear_before_reset=0 (PyTorch's GRU, and ours, reset after the product)")
    return refused


def _layer_weights(r: Reading, node: onnx.NodeProto, k: int) -> tuple[dict, int, int]:
    cls, gates, to_kernel, to_biases = RECURRENT[node.op_type]
    inputs = list(node.input) + [""] * (8 - len(node.input))
    refused = _refused_attributes(node)
    if inputs[5] or inputs[6]:
        refused.append("initial states that are not zeros")
    if inputs[7]:
        refused.append("peephole weights")
    if refused or len(inputs) > 8:
        raise r.unreadable(node, f"{cls.kind} reads a node with its default activations, zero "
                                 f"initial states and no peepholes, forward or bidirectional; "
                                 f"this one has {', '.join(refused)}")
    w, rr = r.need_constant(node, 1, "W"), r.need_constant(node, 2, "R")
    directions = 2 if attrs(node).get("direction") == "bidirectional" else 1
    hidden = int(attrs(node).get("hidden_size", rr.shape[-1]))
    if w.ndim != 3 or rr.shape != (directions, gates * hidden, hidden) or w.shape[:2] != rr.shape[:2]:
        raise r.unreadable(node, f"W {w.shape} and R {rr.shape} are not the weights of "
                                 f"{directions} direction(s) of {hidden} units")
    if inputs[3]:
        b = r.need_constant(node, 3, "B")
    else:  # no B: zero biases (the layer keeps them, to train)
        b = np.zeros((directions, 2 * gates * hidden), np.float32)
    slots = {}
    for d, suffix in enumerate(DIRECTIONS[:directions]):
        slots[f"weight_ih_l{k}{suffix}"] = to_kernel(w[d])
        slots[f"weight_hh_l{k}{suffix}"] = to_kernel(rr[d])
        slots[f"bias_ih_l{k}{suffix}"], slots[f"bias_hh_l{k}{suffix}"] = to_biases(b[d])
    return slots, hidden, directions


# -- how the outputs are read ------------------------------------------------------------------------
def _same(a, b) -> bool:
    return a is not None and b is not None and a == b


def _time_major(r: Reading, rnn: onnx.NodeProto, directions: int, hidden: int):
    """Y (steps, directions, batch, units) to (steps, batch, directions * units): (nodes, value),
    or (nodes, value, batch_major=True) for the exporter's own readout, or None."""
    y = rnn.output[0]
    dims = r.view.dims(y) or (None,) * 4
    squeeze = consumer(r, y, "Squeeze")
    if squeeze is not None and directions == 1 and axes_of(r, squeeze) in ([1], [-3]):
        return [squeeze], squeeze.output[0], False
    turn = consumer(r, y, "Transpose")
    join = consumer(r, turn.output[0], "Reshape") if turn is not None else None
    if join is None:
        return None
    out = reshaped_dims(r, join)
    if out is None or len(out) != 3 or out[2] != directions * hidden:
        return None
    # the first two axes kept: the same sizes, or copied (0) where a size is unknown (the steps
    # after a pool over a symbolic length)
    copied = constant_list(r, join.input[1]) in ([0, 0, -1], [0, 0, directions * hidden]) \
        and not attrs(join).get("allowzero", 0)
    if perm_of(turn) == [0, 2, 1, 3] and (copied or (_same(out[0], dims[0])
                                                     and _same(out[1], dims[2]))):
        return [turn, join], join.output[0], False
    if perm_of(turn) == [2, 0, 1, 3] and (copied or (_same(out[0], dims[2])
                                                     and _same(out[1], dims[0]))):
        return [turn, join], join.output[0], True
    return None


def _last_states(r: Reading, rnn: onnx.NodeProto, directions: int, hidden: int):
    """Y_h (directions, batch, units) read as (batch, directions * units): (nodes, value)."""
    y_h = rnn.output[1]
    readers = consumers(r, y_h)
    if directions == 1 and len(readers) == 1 and readers[0].op_type == "Squeeze" \
            and axes_of(r, readers[0]) in ([0], [-3]):
        return readers, readers[0].output[0]
    picks = {scalar(r, n.input[1]): n for n in readers if n.op_type == "Gather"
             and attrs(n).get("axis", 0) == 0}
    if directions == 2 and len(readers) == 1 and len(picks) == 1:
        which = "reverse" if next(iter(picks)) in (1, -1) else "forward"
        raise r.unreadable(readers[0], f"h_n[{next(iter(picks))}] of a bidirectional layer is the "
                                       f"{which} direction's last state alone: no layer gives one "
                                       f"direction's state (torch.cat((h_n[-2], h_n[-1]), dim=1) "
                                       f"reads as the layer's last states)")
    if directions == 2 and len(readers) == 2 and set(picks) in ({0, 1}, {-2, -1}):
        first, second = picks.get(0, picks.get(-2)), picks.get(1, picks.get(-1))
        concat = consumer(r, first.output[0], "Concat")
        rank = len(r.view.dims(concat.output[0]) or ()) if concat is not None else 0
        if concat is not None and list(concat.input) == [first.output[0], second.output[0]] \
                and rank == 2 and attrs(concat).get("axis") % rank == 1:
            return [first, second, concat], concat.output[0]
    turn = consumer(r, y_h, "Transpose")
    join = consumer(r, turn.output[0], "Reshape") if turn is not None else None
    if join is not None and perm_of(turn) == [1, 0, 2]:
        out = reshaped_dims(r, join)
        if out is not None and len(out) == 2 and out[1] == directions * hidden:
            return [turn, join], join.output[0]
    return None


def _last_step(r: Reading, value: str, directions: int) -> onnx.NodeProto | None:
    """Gather of the last step (index -1, or steps - 1 of a fixed length) on axis 1."""
    gather = consumer(r, value, "Gather")
    if gather is None or attrs(gather).get("axis", 0) != 1:
        return None
    index = scalar(r, gather.input[1])
    steps = (r.view.dims(value) or (None, None))[1]
    if index != -1 and not (isinstance(steps, int) and index == steps - 1):
        raise r.unreadable(gather, f"step {index} of the series: only the last step reads as "
                                   f"the layer's last state")
    if directions != 1:
        raise r.unreadable(gather, "the last step of a bidirectional series is not the layer's "
                                   "last state (the reverse direction's is at the first step); "
                                   "read h_n, or the whole series")
    return gather


@reads_pattern("GatherND")
def read_real_first_recurrent(node: onnx.NodeProto, r: Reading) -> Read | None:
    """A masked series with its real steps gathered to the front, then the stack; a returned
    series gathered back to the steps' own places."""
    if node.input[0] != r.value or r.extra.get("mask") is None:
        return None
    order, gather_nodes = read_along_steps(r, node)
    moved = read_order(r, node, order)
    turn = consumer(r, node.output[0], "Transpose")
    read = _read_stack(turn, r, moved) if turn is not None else None
    if read is None:
        raise r.unreadable(node, "a masked series with its real steps gathered to the front is "
                                 "read by an LSTM or GRU stack: Transpose [1, 0, 2], then the node")
    read.nodes[:0] = moved.nodes + gather_nodes
    return read


@reads_pattern("Transpose")
def read_recurrent(node: onnx.NodeProto, r: Reading) -> Read | None:
    """Transpose to time-major, then one LSTM/GRU node per layer."""
    return _read_stack(node, r, None)


def _put_back(r: Reading, rnn: onnx.NodeProto, value: str, moved: RealFirst
              ) -> tuple[str, list[onnx.NodeProto]]:
    """The returned series gathered back to the steps' own places (by the order's places)."""
    gather = consumer(r, value, "GatherND")
    index, nodes = read_along_steps(r, gather) if gather is not None else (None, [])
    if index is None or gather.input[0] != value:
        raise r.unreadable(rnn, "a series returned from the real steps gathered to the front is "
                                "gathered back to the steps' own places (GatherND by the places)")
    if index != moved.places:
        raise r.unreadable(gather, "the series is put back by other places than those it was "
                                   "gathered by")
    return gather.output[0], nodes


def _read_stack(node: onnx.NodeProto, r: Reading, moved: RealFirst | None) -> Read | None:
    """Transpose to time-major, then one LSTM/GRU node per layer (the input reordered by
    `moved`, when given: the series returned is put back)."""
    rnn = consumer(r, node.output[0], "LSTM", "GRU")
    if perm_of(node) != [1, 0, 2] or rnn is None or rnn.input[0] != node.output[0]:
        return None
    nodes, slots, lengths, k = [node], {}, None, 0
    while True:
        layer_slots, hidden, directions = _layer_weights(r, rnn, k)
        slots.update(layer_slots)
        given = rnn.input[4] if len(rnn.input) > 4 and rnn.input[4] else None
        if k == 0 and given is not None:
            nodes += _lengths(r, rnn, given)
            lengths = given
        if given != lengths:
            raise r.unreadable(rnn, "every layer of a stack reads the same sequence_lens")
        nodes.append(rnn)
        states = _last_states(r, rnn, directions, hidden) if len(rnn.output) > 1 and \
            rnn.output[1] and consumers(r, rnn.output[1]) else None
        series = _time_major(r, rnn, directions, hidden) if consumers(r, rnn.output[0]) else None
        if states is not None and series is None:
            nodes += states[0]
            value, return_sequences = states[1], False
            break
        if series is None:
            raise r.unreadable(rnn, "its outputs are read as neither a series (steps, batch, "
                                    "directions * units) nor its last states (batch, "
                                    "directions * units), nor both read at once")
        nodes += series[0]
        value = series[1]
        following = consumer(r, value, rnn.op_type)
        if not series[2] and following is not None and following.input[0] == value:
            rnn, k = following, k + 1
            continue
        if not series[2]:
            turn = consumer(r, value, "Transpose")
            if turn is None or perm_of(turn) != [1, 0, 2]:
                raise r.unreadable(rnn, "its series is read batch-major again by Transpose "
                                        "[1, 0, 2], or by the next layer of the stack")
            nodes.append(turn)
            value = turn.output[0]
        last = _last_step(r, value, directions)
        if last is not None:
            nodes.append(last)
            value = last.output[0]
        return_sequences = last is None
        break
    if moved is not None and lengths is None:
        raise r.unreadable(rnn, "a series with its real steps gathered to the front is read with "
                                "its lengths (sequence_lens)")
    if moved is not None and return_sequences:
        value, back = _put_back(r, rnn, value, moved)
        nodes += back
    if not return_sequences:
        r.rank = 2
        r.extra.pop("mask", None)
    cls = RECURRENT[rnn.op_type][0]
    spec = cls(units=hidden, return_sequences=return_sequences, bidirectional=directions == 2,
               layers=k + 1)
    return Read(value, nodes, [spec], [slots])


@reads("LSTM", "GRU")
def read_lone_recurrent(node: onnx.NodeProto, r: Reading) -> Read:
    """A recurrent node met without the Transpose to time-major before it."""
    kind = RECURRENT[node.op_type][0].kind
    raise r.unreadable(node, f"{kind} reads a batch-major series (batch, steps, channels) turned "
                             f"time-major by Transpose [1, 0, 2] just before the node; this one "
                             f"reads {node.input[0]!r} as it is (a graph taking its series "
                             f"time-major, as nn.{node.op_type}(batch_first=False) is exported, "
                             f"is read as a network taking them batch-first when asked: "
                             f"OnnxFile(loss, series='batch_first'))")
