"""Networks that take series and images channels-first (from_channels_first / to_channels_first):
the layers, their export (no node of their own), and graphs from PyTorch read that way or, when
asked, channels-last."""

from __future__ import annotations

import numpy as np
import onnx
import pytest

from deepsharp import CrossEntropy, MeanSquaredError, RandomStream, Sequential, Shape
from deepsharp.errors import ShapeError
from deepsharp_export_onnx import ImportRefused, OnnxExport, OnnxFile
from tests.support.foreign import Foreign, run_graph, tolerance
from tests.support.layers import check_layer

IMAGE = Shape(2, 6, 5)  # channels, height, width


def test_the_turns_by_hand():
    x = np.arange(2 * 2 * 3, dtype=np.float32).reshape(1, 2, 2, 3)  # (batch, C, H, W)
    network = Sequential().from_channels_first().lower(Shape(2, 2, 3), RandomStream(0))
    np.testing.assert_array_equal(network(x), np.moveaxis(x, 1, -1))
    assert network.output_shape == Shape(2, 3, 2)
    back = Sequential().from_channels_first().to_channels_first().lower(Shape(2, 2, 3))
    np.testing.assert_array_equal(back(x), x)


def test_an_image_network_taking_channels_first():
    report = check_layer(Sequential().from_channels_first().conv2d(4, 3, padding=1).relu()
                         .to_channels_first(), IMAGE)
    assert [n.op_type for n in report.model.graph.node] == ["Conv", "Relu"]  # PyTorch's own
    assert report.imported.data_format == "channels_first"


def test_training_only_layers_keep_their_places_between_the_turns():
    report = check_layer(Sequential().from_channels_first().conv2d(3, 3).dropout(0.2).relu()
                         .to_channels_first().spatial_dropout(0.1), IMAGE, gradients=False)
    assert str(report.imported.spec) == ("Sequential().from_channels_first().conv2d(3, 3)"
                                         ".dropout(0.2).relu().to_channels_first()"
                                         ".spatial_dropout(0.1)")


def test_a_series_network_taking_channels_first_turns_once_for_its_dense():
    report = check_layer(Sequential().from_channels_first().conv1d(3, 3).relu().dense(2),
                         Shape(4, 9))
    x = report.model.graph.input[0].type.tensor_type.shape.dim
    assert [d.dim_param or d.dim_value for d in x] == ["batch", 4, "steps"]
    assert report.count("Transpose") == 1


def test_the_summary_says_so():
    network = Sequential().from_channels_first().conv2d(4, 3).lower(IMAGE, RandomStream(0))
    assert network.data_format == "channels_first"
    assert "data format: channels_first: takes (batch, 2, 6, 5)" in network.summary()
    assert "data format" not in Sequential().dense(2).lower(Shape(3)).summary()


def test_a_batch_with_other_channels_is_refused():
    network = Sequential().from_channels_first().conv2d(4, 3).lower(IMAGE, RandomStream(0))
    with pytest.raises(ShapeError, match="expected a batch of examples of shape 2x6x5"):
        network(np.zeros((1, 3, 6, 5), np.float32))


def test_a_turn_needs_places():
    with pytest.raises(ShapeError, match="from_channels_first\\(\\) at place 0 cannot take an "
                                         "input of shape 4: needs a series or an image"):
        Sequential().from_channels_first().lower(Shape(4))


def test_a_pytorch_cnn_read_as_the_graph_takes_it():
    case = Foreign.load("cnn.ts17")
    network = case.read()
    assert network.data_format == "channels_first"
    assert str(network.spec).startswith("Sequential().from_channels_first().conv2d(6, 3")
    assert network.input_shape == Shape(3, 12, 12)


def test_a_pytorch_cnn_read_channels_last_when_asked():
    case = Foreign.load("cnn.dynamo18")
    network = OnnxFile(CrossEntropy(), data_format="channels_last").read(case.model)
    assert network.data_format == "channels_last" and network.input_shape == Shape(12, 12, 3)
    turned = np.ascontiguousarray(np.moveaxis(case.x, 1, -1))
    np.testing.assert_allclose(network.predict(turned, case.loss), case.y, rtol=0,
                               atol=tolerance(case.y))
    again = OnnxExport(network.input_shape).to_model(network, case.loss)
    np.testing.assert_allclose(run_graph(again, turned), case.y, rtol=0, atol=tolerance(case.y))


def test_a_series_output_is_given_back_channels_first():
    case = Foreign.load("conv1d_series.ts17")
    network = case.read()
    assert str(network.spec).endswith(".to_channels_first()")
    assert network.output_shape == Shape(3, 6)
    last = OnnxFile(MeanSquaredError(), data_format="channels_last").read(case.model)
    np.testing.assert_allclose(last.predict(np.moveaxis(case.x, 1, -1), case.loss),
                               np.moveaxis(case.y, 1, -1), rtol=0, atol=tolerance(case.y))


def test_a_channels_last_graph_read_channels_first_when_asked():
    spec = Sequential().conv2d(3, 3).relu().global_avg_pool().dense(2)
    network = spec.lower(Shape(6, 5, 2), RandomStream(1))
    data = OnnxExport(Shape(6, 5, 2)).to_bytes(network, MeanSquaredError())
    first = OnnxFile(MeanSquaredError(), data_format="channels_first").read(data)
    assert first.input_shape == Shape(2, 6, 5)
    x = np.random.default_rng(0).standard_normal((3, 6, 5, 2)).astype(np.float32)
    np.testing.assert_allclose(first.predict(np.moveaxis(x, -1, 1), MeanSquaredError()),
                               network.predict(x, MeanSquaredError()), rtol=0, atol=1e-6)


def test_the_choices_are_checked():
    with pytest.raises(ImportRefused, match="data_format must be None or one of"):
        OnnxFile(MeanSquaredError(), data_format="NCHW")
    with pytest.raises(ImportRefused, match="output must be the name of a graph output"):
        OnnxFile(MeanSquaredError(), output=1)


def test_a_pytorch_cnn_read_saves_and_loads_as_it_was(tmp_path):
    from deepsharp import load

    case = Foreign.load("cnn.dynamo17")
    network = case.read()
    network.save(tmp_path / "cnn.deepsharp")
    again = load(tmp_path / "cnn.deepsharp")
    assert again.data_format == "channels_first" and again.spec == network.spec
    np.testing.assert_array_equal(again.predict(case.x, case.loss), network.predict(case.x, case.loss))


# -- a flatten of a series: its steps fixed -------------------------------------------------------
# (found by a fuzz of export round trips: the graph said a series of any length, its flatten's
# product had no annotation, and the importer refused our own graph)
@pytest.mark.parametrize("spec, shape, dims", [
    (Sequential().conv1d(4, 3).relu().flatten().dense(3), Shape(8, 2), ["batch", 8, 2]),
    (Sequential().layer_norm().conv1d(4, 1).relu().flatten().dense(3), Shape(8, 2),
     ["batch", 8, 2]),
    (Sequential().conv1d(4, 3).max_pool1d(2).flatten().dense(3), Shape(8, 2), ["batch", 8, 2]),
    (Sequential().dense(4).reshape((16,)).dense(3), Shape(4, 2), ["batch", 4, 2]),
    (Sequential().from_channels_first().conv1d(4, 3).flatten().dense(3), Shape(2, 7),
     ["batch", 2, 7]),
    (Sequential().conv1d(4, 3).relu().global_avg_pool().dense(3), Shape(8, 2),
     ["batch", "steps", 2]),
    (Sequential().conv1d(4, 3).adaptive_avg_pool(3).flatten().dense(3), Shape(8, 2),
     ["batch", "steps", 2]),
    # a conv's channels-first value of fixed dims: its turn is read before the attention
    (Sequential().conv1d(4, 2).multi_head_attention(2, 4).flatten().dense(3), Shape(5, 1),
     ["batch", 5, 1]),
    # one channel, flattened channels-first (the same order, so no turn back), after sine
    # positions, whose Slice of the table hides the channel axis from ONNX's inference: the
    # kernel's rows give it (found by the fuzz of export round trips, seeds 400475 and 401881)
    (Sequential().sine_positions().avg_pool1d(2, padding="same").flatten().dense(3), Shape(3, 1),
     ["batch", 3, 1]),
    (Sequential().sine_positions().instance_norm().flatten().dense(3), Shape(6, 1),
     ["batch", 6, 1])], ids=str)
def test_a_series_network_that_flattens_its_steps_is_written_for_its_length(spec, shape, dims):
    report = check_layer(spec, shape, gradients=False)
    x = report.model.graph.input[0].type.tensor_type.shape.dim
    assert [d.dim_param or d.dim_value for d in x] == dims


def _conv1d_then_row(row: list, product: str = "Gemm", places=("T",)) -> onnx.ModelProto:
    """Conv1d (2 -> 4 channels, kernel 3) over a symbolic steps axis, relu, a row of one example
    each as PyTorch writes `x.view(x.size(0), -1)` (Reshape to `row`) or nn.Flatten (row None),
    then a product by a kernel of 4 x 11 rows: the kernel fixes the steps at 13 (a length the
    importer does not try first)."""
    from onnx import TensorProto, helper, numpy_helper

    generator = np.random.default_rng(0)
    arrays = {"W": generator.standard_normal((4, 2, *[3] * len(places))),
              "b": generator.standard_normal(4),
              "K": generator.standard_normal((4 * 11 ** len(places), 3)),
              "kb": generator.standard_normal(3)}
    inits = [numpy_helper.from_array(a.astype(np.float32), n) for n, a in arrays.items()]
    nodes = [helper.make_node("Conv", ["x", "W", "b"], ["c"], kernel_shape=[3] * len(places)),
             helper.make_node("Relu", ["c"], ["r"])]
    if row is None:
        nodes.append(helper.make_node("Flatten", ["r"], ["f"]))
    else:
        inits.append(numpy_helper.from_array(np.array(row, np.int64), "shape"))
        nodes.append(helper.make_node("Reshape", ["r", "shape"], ["f"]))
    if product == "Gemm":  # as PyTorch writes nn.Linear: the bias inside
        nodes.append(helper.make_node("Gemm", ["f", "K", "kb"], ["y"]))
    else:
        nodes += [helper.make_node("MatMul", ["f", "K"], ["p"]),
                  helper.make_node("Add", ["p", "kb"], ["y"])]
    graph = helper.make_graph(
        nodes, "conv1d_row", [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                            ["N", 2, *places])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 3])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)


@pytest.mark.parametrize("row, product", [([0, -1], "MatMul"), ([0, 44], "Gemm"),
                                          (None, "MatMul")])
def test_a_row_of_a_conv1d_over_symbolic_steps_as_pytorch_writes_it(row, product):
    """The Flatten's places from the kernel's rows, and the network built for the length that
    gives them (read/lengths.py)."""
    model = _conv1d_then_row(row, product)
    network = OnnxFile(MeanSquaredError()).read(model)
    assert network.input_shape == Shape(2, 13)
    x = np.random.default_rng(1).standard_normal((5, 2, 13)).astype(np.float32)
    reference = run_graph(model, x)
    np.testing.assert_allclose(network.predict(x, MeanSquaredError()), reference,
                               atol=tolerance(reference))


def test_a_flatten_of_two_symbolic_places_is_refused_by_name():
    model = _conv1d_then_row(None, "MatMul", places=("H", "W"))
    with pytest.raises(ImportRefused, match=r"node '' \(Flatten\): a Flatten of a channels-first "
                                            r"value of unknown places \(dims \['N', 4, None, "
                                            r"None\]; the kernel after it has 484 rows\)"):
        OnnxFile(MeanSquaredError()).read(model)
