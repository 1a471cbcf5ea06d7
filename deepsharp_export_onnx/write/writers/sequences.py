"""Series layers -> ONNX.

- embedding -> Gather of the table's rows; a padding index makes the mask, Cast(ids - pad, bool);
- periodic embedding -> Unsqueeze, Mul by 2 pi c, Sin and Cos, Concat, and the per-feature dense as
  one batched MatMul between two Transposes, then Add of the bias;
- sine positions -> Add of the table's first rows, sliced by the series' length read from the
  input's Shape (the table holds `max_length` rows: a longer series is refused by the layer and
  would be by the Slice too); for a masked series, Add of the table's rows gathered by each
  step's place among the real steps (`real_first_nodes`), so padding may be anywhere;
- masking -> Abs(x - value) reduced by ReduceMax over the channels: nonzero where a step is real;
  the steps are multiplied by it (as 0/1) and it is the mask;
- lstm / gru -> one LSTM / GRU node per layer, both directions in one node, weights and gates
  ordered by `layout`; the mask becomes `sequence_lens` (ReduceSum of the mask as int32); initial
  states zero. The series goes in time-major (one Transpose) and comes back batch-first. A masked
  series is first reordered with its real steps in front (GatherND by `real_first_nodes`' order:
  padding may be anywhere, as in the network) and a returned series put back at the steps' own
  places (GatherND by the places); the graph cannot branch, so it always
  reorders, which is the identity for padding at the end.
"""

from __future__ import annotations

import numpy as np
from onnx import TensorProto

from deepsharp.layers.embedding import (
    TWO_PI, EmbeddingStep, PeriodicEmbeddingStep, SinePositionsStep,
)
from deepsharp.layers.recurrent import DIRECTIONS, RecurrentStep
from deepsharp.layers.series import MaskingStep
from deepsharp_export_onnx.write.nodes import Emit
from deepsharp_export_onnx.write.sequence_nodes import (
    along_steps_nodes, real_first_nodes, recurrent_arrays, recurrent_node,
)
from deepsharp_export_onnx.values import Value
from deepsharp_export_onnx.write.writers.base import Writing, writes

FLOAT, BOOL, INT32 = TensorProto.FLOAT, TensorProto.BOOL, TensorProto.INT32


@writes(EmbeddingStep)
def write_embedding(step: EmbeddingStep, x: Value, w: Writing) -> Value:
    pad = step.spec.padding_index
    y = w.primitive("embedding", [w.slot("weight", step.weight._data), x.name],
                    {"padding_index": -1 if pad is None else pad}, [2, x.rank])
    mask = None
    if pad is not None:
        shifted = w.node("Sub", [x.name, w.constant("padding_index", np.asarray(pad, np.int64))],
                         suffix="shifted")
        mask = w.node("Cast", [shifted], {"to": BOOL}, suffix="mask")
        w.tape.annotate(mask, x.dims, BOOL)
    return w.value(y, x.dims + (step.spec.width,), x, mask=mask, elem_type=FLOAT)


@writes(PeriodicEmbeddingStep)
def write_periodic_embedding(step: PeriodicEmbeddingStep, x: Value, w: Writing) -> Value:
    x3 = w.node("Unsqueeze", [x.name], {"axes": [2]}, suffix="column")
    turns = w.node("Mul", [w.slot("frequencies", step.frequencies._data),
                           w.constant("two_pi", np.asarray(TWO_PI, np.float32), np.float32)],
                   suffix="turns")
    v = w.node("Mul", [x3, turns], suffix="angles")
    v = w.node("Concat", [w.node("Sin", [v], suffix="sin"), w.node("Cos", [v], suffix="cos")],
               {"axis": 2}, suffix="periodic")
    by_feature = w.node("Transpose", [v], {"perm": [1, 0, 2]}, suffix="by_feature")
    dense = w.node("MatMul", [by_feature, w.slot("weight", step.weight._data)], suffix="dense")
    back = w.node("Transpose", [dense], {"perm": [1, 0, 2]}, suffix="by_row")
    y = w.node("Add", [back, w.slot("bias", step.bias._data)])
    return w.value(y, x.dims + (step.spec.width,), x)


@writes(SinePositionsStep)
def write_sine_positions(step: SinePositionsStep, x: Value, w: Writing) -> Value:
    table = w.constant("table", step.table, np.float32)
    if x.mask is not None:
        places, _ = real_first_nodes(Emit(w.tape, w.base), x.mask)
        rows = w.node("Gather", [table, places], {"axis": 0}, suffix="rows")
        return w.value(w.node("Add", [x.name, rows]), x.dims, x)
    shape = w.node("Shape", [x.name], suffix="shape")
    one = [w.constant("steps_axis", [1]), w.constant("steps_end", [2]), w.constant("axis0", [0])]
    length = w.node("Slice", [shape, *one], suffix="length")
    rows = w.node("Slice", [table, w.constant("first_row", [0]), length, w.constant("axis0", [0])],
                  suffix="rows")
    return w.value(w.node("Add", [x.name, rows]), x.dims, x)


@writes(MaskingStep)
def write_masking(step: MaskingStep, x: Value, w: Writing) -> Value:
    value = w.constant("value", np.asarray(step.spec.value, np.float32), np.float32)
    distance = w.node("Abs", [w.node("Sub", [x.name, value], suffix="difference")],
                      suffix="distance")
    largest = w.node("ReduceMax", [distance], {"axes": [2], "keepdims": 1}, suffix="largest")
    keep = w.node("Cast", [w.node("Cast", [largest], {"to": BOOL}, suffix="real")], {"to": FLOAT},
                  suffix="keep")
    y = w.node("Mul", [x.name, keep])
    per_step = w.node("ReduceMax", [distance], {"axes": [2], "keepdims": 0}, suffix="per_step")
    mask = w.node("Cast", [per_step], {"to": BOOL}, suffix="mask")
    w.tape.annotate(mask, x.dims[:2], BOOL)
    return w.value(y, x.dims, x, mask=mask)


@writes(RecurrentStep)
def write_recurrent(step: RecurrentStep, x: Value, w: Writing) -> Value:
    spec = step.spec
    directions = spec.directions
    lengths, source = None, x.name
    if x.mask is not None:
        count = w.node("Cast", [x.mask], {"to": INT32}, suffix="real_steps")
        lengths = w.node("ReduceSum", [count], {"axes": [1], "keepdims": 0}, suffix="lengths")
        places, order = real_first_nodes(Emit(w.tape, w.base), x.mask)
        source = along_steps_nodes(Emit(w.tape, w.base), x.name, order, "real_first")
    series = w.node("Transpose", [source], {"perm": [1, 0, 2]}, suffix="time_major")
    direction = "bidirectional" if directions == 2 else "forward"
    y = y_h = ""
    for k in range(spec.layers):
        if k:  # (steps, directions, batch, H) -> (steps, batch, directions * H)
            turned = w.node("Transpose", [y], {"perm": [0, 2, 1, 3]}, suffix=f"layer{k - 1}_out")
            series = w.node("Reshape", [turned, w.constant("join_directions", [0, 0, -1])],
                            suffix=f"layer{k - 1}_series")
        arrays = [[a._data for a in step.slots_of(k, suffix)] for suffix in DIRECTIONS[:directions]]
        onnx_w, onnx_r, onnx_b = recurrent_arrays(spec.kind, arrays)
        y, y_h = recurrent_node(Emit(w.tape, w.base), spec.kind, series,
                                w.slot(f"W_l{k}", onnx_w), w.slot(f"R_l{k}", onnx_r),
                                w.slot(f"B_l{k}", onnx_b), lengths, hidden=spec.units,
                                direction=direction, outputs=2, suffix=f"layer{k}")
    width = spec.units * directions
    if spec.return_sequences:  # (steps, directions, batch, H) -> (batch, steps, directions * H)
        turned = w.node("Transpose", [y], {"perm": [2, 0, 1, 3]}, suffix="batch_first")
        out = w.node("Reshape", [turned, w.constant("join_directions", [0, 0, -1])])
        if lengths is not None:  # each step's output back at the step's own place
            out = along_steps_nodes(Emit(w.tape, w.base), out, places, "own_places")
        return w.value(out, x.dims[:2] + (width,), x)
    # the last states (directions, batch, H) -> (batch, directions * H)
    turned = w.node("Transpose", [y_h], {"perm": [1, 0, 2]}, suffix="batch_first")
    out = w.node("Reshape", [turned, w.constant("join_states", [0, -1])])
    return w.value(out, (x.dims[0], width), x, mask=None)
