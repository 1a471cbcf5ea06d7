"""Graphs written by PyTorch's two exporters (TorchScript and dynamo, opsets 13 to 20) and by
scikit-learn's converter, read, checked against the answers they were written with, exported
again, and trained (tests/fixtures/import; scripts/make_import_fixtures.py makes them)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.support.foreign import (
    MODELS, OWN_OUTPUT, TIME_MAJOR, Foreign, fixture_names, loss_value, run_graph, same_signature, tolerance, train,
)

NAMES = fixture_names()


def test_every_model_has_its_graphs():
    families = {n.split(".")[0] for n in NAMES}
    assert len(NAMES) >= 100 and families == set(MODELS)


@pytest.mark.parametrize("name", NAMES)
def test_reads_matches_and_exports_again(name):
    case = Foreign.load(name)
    network = case.read()
    predicted = network.predict(case.x, case.loss)
    np.testing.assert_allclose(predicted, case.y, rtol=0, atol=tolerance(case.y))
    again = case.export(network)
    original, ours = case.signature(case.model, case.output), case.signature(again)
    own = OWN_OUTPUT.get(name.split(".")[0])
    if own is not None:  # the output differs by design; the input is the graph's
        assert ours[1][2] == own
        original, ours = original[:1], ours[:1]
    if name.split(".")[0] in TIME_MAJOR:  # the input taken batch-first, by request
        (x_name, elem, (steps, batch, width)), *rest = original
        original = [(x_name, elem, (batch, steps, width)), *rest]
    assert same_signature(original, ours) == []
    np.testing.assert_allclose(run_graph(again, case.x), case.y, rtol=0, atol=tolerance(case.y))


@pytest.mark.parametrize("name", NAMES)
def test_trains_at_two_batch_sizes_and_exports_the_trained_network(name):
    case = Foreign.load(name)
    x, y = case.training_data()
    for batch_size in (4, 7):
        network = case.read()
        before = loss_value(network, case.loss, x, y)
        train(network, case.loss, x, y, batch_size)
        after = loss_value(network, case.loss, x, y)
        assert after < before, f"batch size {batch_size}: loss {before} -> {after}"
    again = case.export(network)
    np.testing.assert_allclose(run_graph(again, x), network.predict(x, case.loss), rtol=0,
                               atol=tolerance(network.predict(x, case.loss)))


def test_a_graph_with_nothing_to_train_says_so():
    """A graph of activations only reads as a network with no parameter; fit refuses it by name
    (not with an error from inside the optimizer)."""
    import onnx
    from onnx import TensorProto, helper

    from deepsharp import SGD, MeanSquaredError
    from deepsharp.errors import TrainingError
    from deepsharp_export_onnx import OnnxFile

    nodes = [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Tanh", ["r"], ["y"])]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 3])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 3])])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    network = OnnxFile(MeanSquaredError()).read(model)
    assert "parameters: 0 (0 trainable)" in network.summary()
    x = np.zeros((6, 3), np.float32)
    with pytest.raises(TrainingError, match="fit: Network has nothing to train: every parameter "
                                            "is frozen, or it has none"):
        network.fit(x, x, loss=MeanSquaredError(), optimizer=SGD(0.1), epochs=1)
    assert onnx.checker.check_model(model) is None


def test_the_graphs_names_come_back_unless_the_exporter_is_told_others():
    """A network read from a graph remembers its input and output names (and keeps them
    through save and load); the exporter writes them again by default, and takes others when
    told."""
    import onnx

    from deepsharp_export_onnx import OnnxExport, OnnxFile

    case = Foreign.load("mlp.ts17")
    model = onnx.ModelProto()
    model.CopyFrom(case.model)
    renames = {model.graph.input[0].name: "pixels", model.graph.output[0].name: "scores"}
    for value in (*model.graph.input, *model.graph.output):
        value.name = renames.get(value.name, value.name)
    for node in model.graph.node:
        node.input[:] = [renames.get(n, n) for n in node.input]
        node.output[:] = [renames.get(n, n) for n in node.output]
    network = OnnxFile(case.loss).read(model)
    assert network.io_names == ("pixels", "scores")
    again = OnnxExport(network.input_shape).to_model(network, case.loss)
    assert [again.graph.input[0].name, again.graph.output[0].name] == ["pixels", "scores"]
    told = OnnxExport(network.input_shape, input_name="x").to_model(network, case.loss)
    assert [told.graph.input[0].name, told.graph.output[0].name] == ["x", "scores"]


def test_a_time_major_graph_is_read_only_when_asked_and_says_how():
    from deepsharp import MeanSquaredError
    from deepsharp_export_onnx import ImportRefused, OnnxFile

    case = Foreign.load("lstm_time_major.ts17")
    with pytest.raises(ImportRefused, match="OnnxFile\\(loss, series='batch_first'\\)"):
        OnnxFile(case.loss).read(case.model)
    with pytest.raises(ImportRefused, match="series must be None or 'batch_first'"):
        OnnxFile(MeanSquaredError(), series="time_major")
    network = case.read()
    assert network.predict(case.x, case.loss).shape == (case.x.shape[0], 2)  # batch-first
