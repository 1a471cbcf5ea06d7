"""The dense slice through export: opsets, annotations, names, metadata, determinism, refusals."""

from __future__ import annotations

import io
import json

import numpy as np
import onnx
import pytest

from deepsharp import BinaryCrossEntropy, CrossEntropy, MeanSquaredError, RandomStream, Sequential, Shape
from deepsharp.layers.base import SPEC_KINDS, LayerSpec, Step, layer
from deepsharp_export_onnx import ExportRefused, OnnxExport
from tests.support import assert_graph_matches


def _model(spec, shape=Shape(14), loss=BinaryCrossEntropy(), **options):
    network = spec.lower(shape, RandomStream(1))
    data = OnnxExport(shape, **options).to_bytes(network, loss)
    return network, data, onnx.load_from_string(data)


def _dims(value_info):
    return [d.dim_param or d.dim_value for d in value_info.type.tensor_type.shape.dim]


@pytest.mark.parametrize("spec, opset, ir", [
    (Sequential().dense(16).relu().dense(1), 7, 3),
    (Sequential().dense(16).tanh().dense(1).sigmoid(), 7, 3),
    (Sequential().dense(16).gelu().dense(1), 20, 9),
    (Sequential().dense(16).gelu(approximate="tanh").dense(1), 20, 9),
])
def test_oldest_opset_that_holds_every_node(spec, opset, ir):
    network, data, model = _model(spec)
    assert model.opset_import[0].version == opset and model.ir_version == ir
    x = np.random.default_rng(0).standard_normal((64, 14)).astype(np.float32)
    assert_graph_matches(data, network, BinaryCrossEntropy(), [x[:1], x[:7], x])


def test_dense_is_matmul_and_add_named_by_slot_path():
    _, _, model = _model(Sequential().dense(16).relu().dense(1))
    assert [n.op_type for n in model.graph.node] == ["MatMul", "Add", "Relu", "MatMul", "Add", "Sigmoid"]
    assert [t.name for t in model.graph.initializer] == ["0.weight", "0.bias", "2.weight", "2.bias"]
    assert model.graph.node[-1].output[0] == "output"


def test_batch_is_symbolic_on_input_output_and_every_step():
    _, _, model = _model(Sequential().dense(16).relu().dense(3), loss=CrossEntropy())
    assert _dims(model.graph.input[0]) == ["batch", 14]
    assert _dims(model.graph.output[0]) == ["batch", 3]
    annotated = {v.name: _dims(v) for v in model.graph.value_info}
    assert annotated == {"0.dense": ["batch", 16], "1.relu": ["batch", 16], "2.dense": ["batch", 3],
                         "0.dense/matmul": ["batch", 16], "2.dense/matmul": ["batch", 3]}


def test_features_and_example_shape_are_metadata():
    names = [f"f{i}" for i in range(14)]
    _, _, model = _model(Sequential().dense(1), features=names)
    meta = {p.key: p.value for p in model.metadata_props}
    assert json.loads(meta["features"]) == names and meta["deepsharp.example_shape"] == "14"
    assert model.producer_name == "deepsharp"


def test_the_same_network_gives_the_same_bytes():
    spec = Sequential().dense(8).silu().dropout(0.5).dense(1)
    assert _model(spec)[1] == _model(spec)[1]


def test_mean_squared_error_answers_the_last_step_itself():
    _, _, model = _model(Sequential().dense(4).relu().dense(2), loss=MeanSquaredError())
    assert model.graph.node[-1].op_type == "Add" and model.graph.output[0].name == "output"


def test_max_opset_refuses_naming_the_step_and_writes_nothing():
    network = Sequential().dense(4).gelu().dense(1).lower(Shape(14), RandomStream(1))
    stream = io.BytesIO()
    with pytest.raises(ExportRefused) as caught:
        OnnxExport(Shape(14), max_opset=17).write(network, BinaryCrossEntropy(), stream)
    assert "step 1 (gelu): node '1.gelu' (Gelu) needs operator set 20, above max_opset 17" in str(caught.value)
    assert stream.getvalue() == b""


@pytest.fixture
def unwritable():
    """A layer kind no writer knows (registered for the test only)."""

    @layer("test_cube")
    class Cube(LayerSpec):
        def build(self, shape, at):
            return CubeStep(self, at.place, shape, shape)

    class CubeStep(Step):
        def forward(self, x):
            return x * x * x

    yield Cube
    del SPEC_KINDS["test_cube"]
    from deepsharp.sequential import Sequential as S

    delattr(S, "test_cube")


def test_every_unwritable_step_is_named_in_one_refusal(unwritable):
    spec = Sequential(layers=(SPEC_KINDS["dense"](units=4), unwritable(), SPEC_KINDS["relu"](),
                              unwritable()))
    network = spec.lower(Shape(3), RandomStream(0))
    stream = io.BytesIO()
    with pytest.raises(ExportRefused) as caught:
        OnnxExport(Shape(3)).write(network, MeanSquaredError(), stream)
    message = str(caught.value)
    assert "step 1 (test_cube()): no ONNX writer for CubeStep" in message
    assert "step 3 (test_cube()): no ONNX writer for CubeStep" in message
    assert len(caught.value.faults) == 2 and stream.getvalue() == b""


def test_a_shape_other_than_the_network_is_refused():
    network = Sequential().dense(2).lower(Shape(14), RandomStream(0))
    with pytest.raises(ExportRefused, match="the network takes examples of shape 14, the export was asked for 15"):
        OnnxExport(Shape(15)).to_bytes(network, MeanSquaredError())
