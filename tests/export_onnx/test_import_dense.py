"""The importer on dense graphs: ours, PyTorch-style Gemm graphs, and the refusals."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from deepsharp import BinaryCrossEntropy, CrossEntropy, MeanSquaredError, RandomStream, Sequential, Shape, SGD
from deepsharp_export_onnx import ImportRefused, OnnxExport, OnnxFile
from layout import dense_kernel_to_gemm
from tests.support import run_ort


def _gemm_graph(last="Sigmoid", extra_node=None):
    """What torch.onnx writes for Linear(4, 3) -> ReLU -> Linear(3, 1) -> Sigmoid."""
    rng = np.random.default_rng(0)
    w1, b1 = rng.standard_normal((3, 4)).astype(np.float32), rng.standard_normal(3).astype(np.float32)
    w2, b2 = rng.standard_normal((1, 3)).astype(np.float32), rng.standard_normal(1).astype(np.float32)
    nodes = [helper.make_node("Gemm", ["x", "fc1.weight", "fc1.bias"], ["h"], transB=1, name="fc1"),
             helper.make_node("Relu", ["h"], ["r"], name="relu")]
    nodes += [extra_node] if extra_node is not None else []
    nodes += [helper.make_node("Gemm", ["r", "fc2.weight", "fc2.bias"], ["z"], transB=1, name="fc2"),
              helper.make_node(last, ["z"], ["p"], name="out")]
    graph = helper.make_graph(
        nodes, "torch", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])],
        [helper.make_tensor_value_info("p", TensorProto.FLOAT, ["N", 1])],
        initializer=[numpy_helper.from_array(a, n) for n, a in
                     [("fc1.weight", w1), ("fc1.bias", b1), ("fc2.weight", w2), ("fc2.bias", b2)]])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)


def test_a_pytorch_style_gemm_graph_reads_as_dense_layers():
    model = _gemm_graph()
    network = OnnxFile(BinaryCrossEntropy()).read(model.SerializeToString())
    assert str(network.spec) == "Sequential().dense(3).relu().dense(1)"
    x = np.random.default_rng(1).standard_normal((6, 4)).astype(np.float32)
    got = run_ort(model.SerializeToString(), x, input_name="x")
    np.testing.assert_allclose(network.predict(x, BinaryCrossEntropy()), got, atol=1e-6)
    # the kernel was turned round by layout: ours is (in, out)
    w = numpy_helper.to_array(model.graph.initializer[0])
    np.testing.assert_array_equal(dense_kernel_to_gemm(network.state_dict()["0.weight"]), w)


def test_an_imported_network_trains_again():
    network = OnnxFile(BinaryCrossEntropy()).read(_gemm_graph().SerializeToString())
    x = np.random.default_rng(2).standard_normal((32, 4)).astype(np.float32)
    y = (x[:, 0] > 0).astype(np.float32)
    history = network.fit(x, y, loss=BinaryCrossEntropy(), optimizer=SGD(0.5), epochs=30, batch_size=8)
    assert history["loss"][-1] < history["loss"][0]


def test_training_only_layers_come_back_from_the_metadata():
    spec = Sequential().dense(5).relu().dropout(0.3).dense(2).dropout(0.1)
    network = spec.lower(Shape(3), RandomStream(0))
    data = OnnxExport(Shape(3)).to_bytes(network, CrossEntropy())
    assert str(OnnxFile(CrossEntropy()).read(data).spec) == str(spec)


def test_the_output_activation_must_be_the_losses():
    with pytest.raises(ImportRefused, match="made by node 'out' \\(Tanh\\); BinaryCrossEntropy answers through a last Sigmoid"):
        OnnxFile(BinaryCrossEntropy()).read(_gemm_graph(last="Tanh").SerializeToString())
    network = OnnxFile(MeanSquaredError()).read(_gemm_graph(last="Tanh").SerializeToString())
    assert str(network.spec) == "Sequential().dense(3).relu().dense(1).tanh()"


def test_an_op_without_reader_is_named():
    hard = helper.make_node("Hardmax", ["r"], ["r2"], name="weird")
    model = _gemm_graph(extra_node=hard)
    model.graph.node[3].input[0] = "r2"
    with pytest.raises(ImportRefused) as caught:
        OnnxFile(BinaryCrossEntropy()).read(model.SerializeToString())
    assert "node 'weird' (Hardmax): no reader for op type Hardmax" in str(caught.value)


def test_a_fork_no_layer_makes_is_refused():
    model = _gemm_graph()
    # the second Gemm reads h (before the relu) as its bias input: a fork
    model.graph.node[2].input[2] = "h"
    with pytest.raises(ImportRefused, match="is also read by|must be a constant"):
        OnnxFile(BinaryCrossEntropy()).read(model.SerializeToString())


def test_not_onnx_is_refused():
    with pytest.raises(ImportRefused, match="not an ONNX model"):
        OnnxFile(MeanSquaredError()).read(b"\x00\x01garbage")


def test_features_come_back():
    network = Sequential().dense(1).lower(Shape(2), RandomStream(0))
    data = OnnxExport(Shape(2), features=["age", "fare"]).to_bytes(network, BinaryCrossEntropy())
    assert OnnxFile(BinaryCrossEntropy()).read(data).features == ("age", "fare")


def test_an_imported_network_holds_batches_to_the_input_annotation():
    from deepsharp_export_onnx import AnnotationViolation

    network = Sequential().dense(2).lower(Shape(3, 4), RandomStream(0))
    data = OnnxExport(Shape(3, 4)).to_bytes(network, MeanSquaredError())
    imported = OnnxFile(MeanSquaredError()).read(data)
    imported(np.zeros((2, 7, 4), np.float32))  # the series length is the symbol `steps`
    with pytest.raises(AnnotationViolation) as caught:
        imported(np.zeros((2, 3, 4, 1), np.float32)[..., 0][:, :, :3])
    assert "value 'input' (graph input), axis 2: declared 4; the run produced 3" in str(caught.value)


def test_training_settings_no_node_holds_come_back_from_the_metadata():
    spec = (Sequential().dense(4).batch_norm(momentum=0.02)
            .residual(Sequential().dense(4).batch_norm(momentum=0.3)).dense(1))
    network = spec.lower(Shape(3), RandomStream(0))
    data = OnnxExport(Shape(3)).to_bytes(network, MeanSquaredError())
    imported = OnnxFile(MeanSquaredError()).read(data)
    assert imported.spec == spec
    assert OnnxExport(Shape(3)).to_bytes(imported, MeanSquaredError()) == data
