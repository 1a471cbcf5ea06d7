"""The importer's refusals for sequence graphs it cannot read as the layers they look like: one
test each, on a graph the exporter wrote and then edited."""

from __future__ import annotations

from typing import Callable

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from deepsharp import MeanSquaredError, RandomStream, Sequential, Shape
from deepsharp_export_onnx import ImportRefused, OnnxExport, OnnxFile
from tests.support.graph_edits import set_attr

LOSS = MeanSquaredError()


def _exported(spec: Sequential, shape: Shape) -> onnx.ModelProto:
    network = spec.lower(shape, RandomStream(0))
    return onnx.load_from_string(OnnxExport(shape).to_bytes(network, LOSS))


def _node(model: onnx.ModelProto, op_type: str) -> onnx.NodeProto:
    return next(n for n in model.graph.node if n.op_type == op_type)


def _initializer(model: onnx.ModelProto, name: str) -> onnx.TensorProto:
    return next(t for t in model.graph.initializer if t.name == name)


def _replace_initializer(model: onnx.ModelProto, name: str, array: np.ndarray) -> None:
    _initializer(model, name).CopyFrom(numpy_helper.from_array(array, name))


def _peepholes(model):
    lstm = _node(model, "LSTM")
    model.graph.initializer.append(numpy_helper.from_array(np.zeros((1, 9), np.float32), "P"))
    while len(lstm.input) < 8:
        lstm.input.append("")
    lstm.input[7] = "P"


def _lengths_from_a_constant(model):
    lstm = _node(model, "LSTM")
    model.graph.initializer.append(numpy_helper.from_array(np.full(1, 7, np.int32), "fixed"))
    lstm.input.append("fixed")


def _scaled_otherwise(model):
    name = next(t.name for t in model.graph.initializer if t.name.endswith("/scale"))
    _replace_initializer(model, name, np.asarray(0.3, np.float32))


def _table_otherwise(model):
    name = next(t.name for t in model.graph.initializer if t.name.endswith("/table"))
    table = numpy_helper.to_array(_initializer(model, name)).copy()
    table[3, 1] += 0.5
    _replace_initializer(model, name, table)


CASES: list[tuple[str, Sequential, Shape, Callable, str]] = [
    ("lstm-peepholes", Sequential().lstm(3), Shape(7, 2), _peepholes,
     "lstm reads a node with its default activations, zero initial states and no peepholes, "
     "forward or bidirectional; this one has peephole weights"),
    ("lstm-activations", Sequential().lstm(3), Shape(7, 2),
     lambda m: set_attr(_node(m, "LSTM"), "activations", ["Relu", "Tanh", "Tanh"]),
     "this one has activations=[b'Relu', b'Tanh', b'Tanh']"),
    ("lstm-reverse-only", Sequential().lstm(3), Shape(7, 2),
     lambda m: set_attr(_node(m, "LSTM"), "direction", "reverse"),
     "forward or bidirectional"),
    ("gru-reset-before", Sequential().gru(3), Shape(7, 2),
     lambda m: set_attr(_node(m, "GRU"), "linear_before_reset", 0),
     "this one has linear_before_reset=0 (PyTorch's GRU, and ours, reset after the product)"),
    ("lstm-lengths-not-from-a-mask", Sequential().lstm(3), Shape(7, 2), _lengths_from_a_constant,
     "its sequence_lens must be the count of the series' mask"),
    ("attention-scale", Sequential().multi_head_attention(2, 4), Shape(7, 4), _scaled_otherwise,
     "the scores are scaled by 1/sqrt(head width) = 0.70710677"),
    ("sine-table", Sequential().sine_positions(max_length=16), Shape(7, 4), _table_otherwise,
     "the table added is not the sinusoidal positions' table"),
    ("embedding-axis", Sequential().embedding(10, 3), Shape(7),
     lambda m: set_attr(_node(m, "Gather"), "axis", 1),
     "an embedding looks rows up: the Gather's axis must be 0"),
    ("recurrent-output", Sequential().lstm(3, return_sequences=True), Shape(7, 2),
     lambda m: _initializer(m, "0.lstm/join_directions").CopyFrom(
         numpy_helper.from_array(np.array([0, -1, 6], np.int64), "0.lstm/join_directions")),
     "its outputs are read as neither a series (steps, batch, directions * units) nor its last "
     "states"),
]


@pytest.mark.parametrize("spec, shape, edit, message", [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])
def test_refused(spec, shape, edit, message):
    model = _exported(spec, shape)
    edit(model)
    with pytest.raises(ImportRefused) as caught:
        OnnxFile(LOSS).read(model)
    assert message in str(caught.value)


def test_lengths_from_another_mask_are_refused():
    """An LSTM counting a mask that is not the one riding with its series (a constant one: its
    count is folded to a constant, which is not the count of the series' mask)."""
    spec = Sequential().masking(0.0).lstm(3)
    model = _exported(spec, Shape(7, 2))
    cast = next(n for n in model.graph.node if n.op_type == "Cast" and n.name.endswith("real_steps"))
    model.graph.initializer.append(numpy_helper.from_array(np.ones((1, 7), bool), "other_mask"))
    cast.input[0] = "other_mask"
    with pytest.raises(ImportRefused) as caught:
        OnnxFile(LOSS).read(model)
    assert "node '1.lstm/layer0' (LSTM): its sequence_lens must be the count of the series' " \
        "mask" in str(caught.value)


def test_a_training_only_place_beyond_a_branch_is_refused():
    spec = Sequential().residual(Sequential().dense(2).dropout(0.1))
    model = _exported(spec, Shape(2))
    entry = next(p for p in model.metadata_props if p.key == "deepsharp.training_only")
    entry.value = entry.value.replace('"0.branch.1"', '"0.branch.5"')
    with pytest.raises(ImportRefused) as caught:
        OnnxFile(LOSS).read(model)
    assert "place '0.branch.5' is beyond the 1 layers there" in str(caught.value)


def test_int64_series_input_is_symbolic_in_steps():
    model = _exported(Sequential().embedding(10, 3), Shape(7))
    dims = model.graph.input[0].type.tensor_type.shape.dim
    assert [d.dim_param for d in dims] == ["batch", "steps"]
    assert model.graph.input[0].type.tensor_type.elem_type == TensorProto.INT64
