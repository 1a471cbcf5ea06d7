"""The importer's boundary: where the bytes come from (a path, bytes, a stream, a ModelProto), the
external data a graph names (confined to the model's folder), and the validation run before any
reader. Every refusal is an ImportRefused naming the offender."""

from __future__ import annotations

import io
import os
import threading
import tracemalloc

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from deepsharp import CrossEntropy, RandomStream, Sequential, Shape
from deepsharp_export_onnx import ImportRefused, OnnxExport, OnnxFile
from deepsharp_export_onnx.read import file as read_file
from deepsharp_export_onnx.read.readers import READERS

LOSS = CrossEntropy()
X = np.random.default_rng(3).standard_normal((5, 4)).astype(np.float32)


def _network():
    return Sequential().dense(6).relu().dense(3).lower(Shape(4), RandomStream(1))


def _model():
    return OnnxExport(Shape(4)).to_model(_network(), LOSS)


def _external(model, folder, location="weights.bin"):
    """Write every initializer of `model` to `folder/location` and point the model at it."""
    onnx.save_model(model, str(folder / "model.onnx"), save_as_external_data=True,
                    all_tensors_to_one_file=True, location=location, size_threshold=0)
    return onnx.load(str(folder / "model.onnx"), load_external_data=False)


def _read(source, **options):
    return OnnxFile(LOSS).read(source, **options)


# -- sources -----------------------------------------------------------------------------------
def test_a_path_reads_external_data_from_the_model_folder(tmp_path):
    _external(_model(), tmp_path)
    network = _read(tmp_path / "model.onnx")
    np.testing.assert_allclose(network.predict(X, LOSS), _network().predict(X, LOSS), atol=1e-6)
    assert _read(str(tmp_path / "model.onnx")).spec == _network().spec


@pytest.mark.parametrize("form", ["bytes", "stream", "proto"])
def test_bytes_a_stream_or_a_proto_with_external_data_are_refused_without_a_folder(tmp_path, form):
    model = _external(_model(), tmp_path)
    source = {"bytes": model.SerializeToString(), "stream": io.BytesIO(model.SerializeToString()),
              "proto": model}[form]
    with pytest.raises(ImportRefused, match="stored as external data .*'weights.bin'.* pass its "
                                            "path, or name the folder"):
        _read(source)
    again = {"bytes": model.SerializeToString(), "stream": io.BytesIO(model.SerializeToString()),
             "proto": model}[form]
    network = _read(again, folder=tmp_path)
    np.testing.assert_allclose(network.predict(X, LOSS), _network().predict(X, LOSS), atol=1e-6)
    assert model.graph.initializer[0].data_location == TensorProto.EXTERNAL  # the caller's proto is untouched


def test_a_stream_cannot_make_the_importer_read_the_working_folder(tmp_path, monkeypatch):
    """The finding: a stream's external data resolved against the working folder."""
    secret = np.arange(24, dtype=np.float32).reshape(4, 6)
    (tmp_path / "settings.env").write_bytes(secret.tobytes())
    model = _model()
    weight = next(t for t in model.graph.initializer if tuple(t.dims) == (4, 6))
    weight.ClearField("raw_data")
    weight.data_location = TensorProto.EXTERNAL
    weight.external_data.add(key="location", value="settings.env")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ImportRefused, match="may not read files"):
        _read(model.SerializeToString())


@pytest.mark.parametrize("location, says", [
    ("../weights.bin", "leads out of the model's folder"),
    ("sub/../../weights.bin", "leads out of the model's folder"),
    ("/etc/passwd", "is absolute"),
    ("C:\\weights.bin", "is absolute"),
    ("missing.bin", "is not in the model's folder"),
    ("", "is not a file name"),
])
def test_external_locations_outside_the_folder_are_refused(tmp_path, location, says):
    folder = tmp_path / "model"
    folder.mkdir()
    model = _external(_model(), folder)
    (tmp_path / "weights.bin").write_bytes((folder / "weights.bin").read_bytes())
    for tensor in model.graph.initializer:
        for entry in tensor.external_data:
            if entry.key == "location":
                entry.value = location
    with pytest.raises(ImportRefused, match=says):
        _read(model.SerializeToString(), folder=folder)


def test_a_symbolic_link_leading_out_is_refused(tmp_path):
    folder = tmp_path / "model"
    folder.mkdir()
    _external(_model(), tmp_path)
    os.symlink(tmp_path / "weights.bin", folder / "weights.bin")
    (folder / "model.onnx").write_bytes((tmp_path / "model.onnx").read_bytes())
    with pytest.raises(ImportRefused, match="through a symbolic link"):
        _read(folder / "model.onnx")


@pytest.mark.parametrize("key, value, says", [
    ("length", "twelve", "length must be a decimal integer, received 'twelve'"),
    ("length", "-4", "length must be a decimal integer"),
    ("length", "8", "external data length 8 bytes, but its shape"),
    ("offset", "1000000", "pass the end of weights.bin"),
    ("colour", "red", "unknown external-data keys"),
])
def test_external_offsets_and_lengths_are_checked_before_reading(tmp_path, key, value, says):
    model = _external(_model(), tmp_path)
    _set_entry(model.graph.initializer[0].external_data, key, value)
    with pytest.raises(ImportRefused, match=says):
        _read(model.SerializeToString(), folder=tmp_path)


def _set_entry(entries, key, value):
    """Set `key` in a repeated key/value field (external data, metadata), adding it if absent."""
    found = {e.key: e for e in entries}
    if key in found:
        found[key].value = value
    else:
        entries.add(key=key, value=value)


def test_a_fifo_path_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "model.onnx"
    os.mkfifo(fifo)
    caught = []
    thread = threading.Thread(target=lambda: caught.append(pytest.raises(ImportRefused, _read, fifo)),
                              daemon=True)
    thread.start()
    thread.join(10)
    assert not thread.is_alive() and "FIFO" in str(caught[0].value)


@pytest.mark.parametrize("source, says", [
    (b"", "empty, not an ONNX model"), (b"\x08\x07garbage\xff", "not an ONNX model"),
    (io.StringIO("text"), "not bytes"), (42, "read takes a path, bytes, a binary stream"),
    ("/nonexistent/model.onnx", "no such file"),
])
def test_sources_that_are_not_models_are_refused(source, says):
    with pytest.raises(ImportRefused, match=says):
        _read(source)


def test_a_loss_the_importer_cannot_read_is_refused():
    with pytest.raises(ImportRefused, match="OnnxFile: bad arguments"):
        OnnxFile("cross entropy")


# -- validation --------------------------------------------------------------------------------
def _with(change):
    model = _model()
    change(model)
    return model.SerializeToString()


def _node(model, op_type):
    return next(n for n in model.graph.node if n.op_type == op_type)


@pytest.mark.parametrize("change, says", [
    (lambda m: m.graph.initializer.append(m.graph.initializer[0]), "initializer '.*' is named twice"),
    (lambda m: _node(m, "Relu").output.__setitem__(0, m.graph.initializer[0].name),
     "is produced by node '.*' \\(Relu\\) but is also a graph input or initializer"),
    (lambda m: _node(m, "Softmax").attribute[0].__setattr__("i", 5),
     "node '.*' \\(Softmax\\): axis 5 is outside \\[-2, 2\\) for an input of rank 2"),
    (lambda m: _node(m, "Softmax").attribute[0].__setattr__("i", -3), "axis -3 is outside"),
    (lambda m: m.graph.node.append(helper.make_node("ReduceMean", ["output"], ["r"], keepdims=2, name="mean")),
     "node 'mean' \\(ReduceMean\\): keepdims must be 0 or 1, received 2"),
    (lambda m: m.graph.node.append(helper.make_node("Transpose", ["output"], ["t"], perm=[0, 0], name="t")),
     "node 't' \\(Transpose\\): perm \\[0, 0\\] is not an order of the 2 axes"),
    (lambda m: m.graph.initializer[0].dims.__setitem__(0, 1000000),
     "needs 24,000,000 bytes, the file holds 96"),
    (lambda m: m.graph.initializer[0].__setattr__("data_type", 999), "element type 999"),
    (lambda m: m.graph.initializer[0].dims.__setitem__(0, -4), "is outside the limits"),
])
def test_graphs_runtime_refuses_or_reads_differently_are_refused(change, says):
    with pytest.raises(ImportRefused, match=says):
        _read(_with(change))


@pytest.mark.parametrize("key, value, says", [
    ("features", "not json", "metadata 'features' is damaged"),
    ("features", '[1, 2]', "metadata 'features' is damaged: expected a JSON list of names"),
    ("deepsharp.example_shape", "4xfour", "metadata 'deepsharp.example_shape' is damaged"),
    ("deepsharp.example_shape", "9" * 5000, "metadata 'deepsharp.example_shape' is damaged"),
    ("deepsharp.training_only", '[{"place": "x"}]', "metadata 'deepsharp.training_only' is damaged"),
    ("deepsharp.training_only", '[{"place": "1", "layer": {"kind": "nope"}}]', "unknown layer kind"),
    ("deepsharp.training_only", "[" * 100000, "metadata 'deepsharp.training_only' is damaged"),
    ("deepsharp.training_settings", '{"0": 5}', "metadata 'deepsharp.training_settings' is damaged"),
])
def test_damaged_deepsharp_metadata_is_refused(key, value, says):
    with pytest.raises(ImportRefused, match=says):
        _read(_with(lambda model: _set_entry(model.metadata_props, key, value)))


def test_a_tiny_graph_declaring_a_huge_example_is_refused_before_allocating():
    model = _model()
    next(p for p in model.metadata_props if p.key == "deepsharp.example_shape").value = "4000000000"
    data = model.SerializeToString()
    tracemalloc.start()
    try:
        with pytest.raises(ImportRefused, match="cannot be built .* more than the .* left in the budget"):
            _read(data)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 64 << 20


def test_a_reader_failing_on_a_node_is_an_import_refused_naming_it(monkeypatch):
    def broken(node, reading):
        raise IndexError("list index out of range")

    monkeypatch.setitem(READERS, "Relu", broken)
    with pytest.raises(ImportRefused, match=r"node '1.relu' \(Relu\): the reader failed on it "
                                            r"\(IndexError: list index out of range\)"):
        _read(_model())


def test_a_failure_after_the_readers_is_an_import_refused(monkeypatch):
    def broken(*args, **kwargs):
        raise KeyError("slot")

    monkeypatch.setattr(read_file.OnnxFile, "_training_only", staticmethod(broken))
    with pytest.raises(ImportRefused, match="the importer failed on this graph \\(KeyError"):
        _read(_model())


def test_an_initializer_with_typed_data_of_the_wrong_count_is_refused():
    model = _model()
    tensor = model.graph.initializer[0]
    tensor.ClearField("raw_data")
    tensor.float_data.extend([1.0, 2.0])
    with pytest.raises(ImportRefused, match="declares 24 values, the file holds 2"):
        _read(model)


def test_numpy_helper_is_never_reached_with_a_lying_constant():
    model = _model()
    constant = helper.make_node("Constant", [], ["c"], name="c",
                                value=numpy_helper.from_array(np.zeros(3, np.float32)))
    constant.attribute[0].t.dims[0] = 10 ** 9
    model.graph.node.insert(0, constant)
    with pytest.raises(ImportRefused, match="node 'c' \\(Constant\\) attribute 'value': shape"):
        _read(model)


def test_names_that_are_not_utf8_text_are_refused():
    """Found while fuzzing: a graph name of invalid UTF-8 reached a copy as bytes."""
    model = _model()
    model.graph.name = "GRAPHNAME"
    data = model.SerializeToString().replace(b"GRAPHNAME", b"GRAPH\xffAME")
    with pytest.raises(ImportRefused, match="graph name b'GRAPH\\\\xffAME' is not UTF-8 text"):
        _read(data)
