"""Graphs whose weights go beside them (`<name>.onnx.data`): when asked, when the graph would pass
2 GiB (with the limit lowered here, and for real in the slow test), whole or not at all."""

from __future__ import annotations

import io
import os

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx.external_data_helper import ExternalDataInfo

from deepsharp import BinaryCrossEntropy, MeanSquaredError, RandomStream, Sequential, Shape
from deepsharp_export_onnx import ExportRefused, ImportRefused, OnnxExport, OnnxFile
from deepsharp_export_onnx.write import deploy, external

LOSS = BinaryCrossEntropy()
RNG = np.random.default_rng(7)


def _network(width: int = 300):
    return Sequential().dense(width).relu().dense(1).lower(Shape(50), RandomStream(0))


def _layout(path) -> dict[str, tuple[int, int]]:
    model = onnx.load(str(path), load_external_data=False)
    return {t.name: (ExternalDataInfo(t).offset, ExternalDataInfo(t).length)
            for t in model.graph.initializer if t.data_location == onnx.TensorProto.EXTERNAL}


def _answers(path, x) -> np.ndarray:
    return ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(
        None, {"input": x})[0]


def test_weights_beside_the_graph_when_asked(tmp_path):
    network, x = _network(), RNG.standard_normal((5, 50)).astype(np.float32)
    path = tmp_path / "model.onnx"
    export = OnnxExport(Shape(50), external_data=True, compare_on=x)
    export.write(network, LOSS, path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.onnx", "model.onnx.data"]
    layout = _layout(path)
    assert set(layout) == {"0.weight", "0.bias", "2.weight"}  # 2.bias: under 1 KiB, inside
    assert all(offset % 4096 == 0 for offset, _ in layout.values())
    assert layout["0.weight"][1] == 50 * 300 * 4
    onnx.checker.check_model(str(path), full_check=True)
    loaded = onnx.load(str(path))  # onnx reads the data file from the model's folder
    np.testing.assert_array_equal(onnx.numpy_helper.to_array(
        next(t for t in loaded.graph.initializer if t.name == "0.weight")),
        network.steps[0].weight._data)
    np.testing.assert_allclose(_answers(path, x), network.predict(x, LOSS), atol=1e-6)
    report = export.report
    assert report.graph_bytes == path.stat().st_size
    assert report.data_bytes == (tmp_path / "model.onnx.data").stat().st_size
    assert report.largest_difference <= 1e-6 and "external data" in str(report)


def test_the_importer_reads_the_weights_back_from_the_models_folder_only(tmp_path):
    network, x = _network(), RNG.standard_normal((4, 50)).astype(np.float32)
    path = tmp_path / "model.onnx"
    OnnxExport(Shape(50), external_data=True).write(network, LOSS, path)
    again = OnnxFile(LOSS).read(path)
    np.testing.assert_array_equal(again.steps[0].weight._data, network.steps[0].weight._data)
    np.testing.assert_allclose(again.predict(x, LOSS), network.predict(x, LOSS), atol=1e-6)
    with open(path, "rb") as stream, pytest.raises(ImportRefused, match="external data"):
        OnnxFile(LOSS).read(stream)  # a stream names no folder: its external data is refused
    with open(path, "rb") as stream:  # unless the caller names the folder
        np.testing.assert_allclose(OnnxFile(LOSS).read(stream, folder=tmp_path).predict(x, LOSS),
                                   network.predict(x, LOSS), atol=1e-6)


def test_a_graph_under_the_limit_is_one_file_with_the_bytes_of_to_bytes(tmp_path):
    network = _network()
    path = tmp_path / "model.onnx"
    OnnxExport(Shape(50), external_data=True).write(network, LOSS, path)
    OnnxExport(Shape(50)).write(network, LOSS, str(path))  # over the old one
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.onnx"]  # its old data gone
    assert path.read_bytes() == OnnxExport(Shape(50)).to_bytes(network, LOSS)


def test_past_the_limit_the_weights_go_beside_it_by_themselves(tmp_path, monkeypatch):
    monkeypatch.setattr(deploy, "LIMIT", 40_000)  # 0.weight alone is 60,000 bytes
    network, x = _network(), RNG.standard_normal((3, 50)).astype(np.float32)
    OnnxExport(Shape(50)).write(network, LOSS, tmp_path / "big.onnx")
    assert (tmp_path / "big.onnx.data").exists() and "0.weight" in _layout(tmp_path / "big.onnx")
    np.testing.assert_allclose(_answers(tmp_path / "big.onnx", x), network.predict(x, LOSS),
                               atol=1e-6)


@pytest.mark.parametrize("options, limit, message", [
    ({"external_data": True}, None, "external_data=True puts the weights beside the graph, which "
                                    "needs a path: write(network, loss, 'model.onnx')"),
    ({}, 40_000, "the weights take 62,404 bytes, past protobuf's limit of 40,000: they go beside "
                 "the graph as external data, which needs a path"),
    ({"quantize": "dynamic"}, 40_000, "past protobuf's limit of 40,000: quantize='dynamic' takes "
                                      "graphs under that limit"),
])
def test_a_stream_cannot_take_external_data(options, limit, message, monkeypatch):
    if limit:
        monkeypatch.setattr(deploy, "LIMIT", limit)
    stream = io.BytesIO()
    with pytest.raises(ExportRefused) as refused:
        OnnxExport(Shape(50), **options).write(_network(), LOSS, stream)
    assert message in str(refused.value) and stream.getvalue() == b""


def test_external_data_false_refuses_past_the_limit_and_writes_nothing(tmp_path, monkeypatch):
    monkeypatch.setattr(deploy, "LIMIT", 40_000)
    with pytest.raises(ExportRefused) as refused:
        OnnxExport(Shape(50), external_data=False).write(_network(), LOSS, tmp_path / "m.onnx")
    assert "past protobuf's limit of 40,000: external_data=False refuses it" in str(refused.value)
    assert list(tmp_path.iterdir()) == []


def test_a_refused_export_writes_no_byte(tmp_path):
    network = Sequential().dense(4).gelu().dense(1).lower(Shape(3), RandomStream(0))
    with pytest.raises(ExportRefused):
        OnnxExport(Shape(3), max_opset=17, external_data=True).write(network, LOSS,
                                                                     tmp_path / "m.onnx")
    assert list(tmp_path.iterdir()) == []


def test_a_failed_write_leaves_the_old_files_whole_and_no_partial_data(tmp_path, monkeypatch):
    network, path = _network(), tmp_path / "model.onnx"
    OnnxExport(Shape(50), external_data=True).write(network, LOSS, path)
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}

    def fail_midway(self, stream):
        stream.write(b"\0" * 5000)
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(external.ExternalData, "write", fail_midway)
    with pytest.raises(ExportRefused) as refused:
        OnnxExport(Shape(50), external_data=True).write(_network(400), LOSS, path)
    assert "No space left on device" in str(refused.value)
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before


@pytest.mark.slow
@pytest.mark.heavy  # about 75 s and 2.7 GB resident: `make test-slow`
def test_a_network_just_past_two_gib(tmp_path):
    """8 dense layers of 8192 x 8192 float32: 2,147,745,792 bytes of weights, past the
    2,147,483,647 a protobuf message holds. Written beside its graph; ONNX Runtime answers as the
    network does. (About 2.2 GB of memory for the network, 2.2 GB more for ONNX Runtime's copy,
    and 2.2 GB of disk.)"""
    width = 8192
    spec = Sequential()
    for _ in range(8):
        spec = spec.dense(width)
    network = spec.lower(Shape(width), RandomStream(0))
    payload = sum(p.size * 4 for p in network.parameters())
    assert payload > external.LIMIT
    path = tmp_path / "big.onnx"
    OnnxExport(Shape(width)).write(network, MeanSquaredError(), path)
    data = tmp_path / "big.onnx.data"
    assert path.stat().st_size < 10_000 and data.stat().st_size >= payload
    layout = _layout(path)
    assert len(layout) == 16 and all(offset % 4096 == 0 for offset, _ in layout.values())
    x = RNG.standard_normal((2, width)).astype(np.float32)
    expected = network.predict(x, MeanSquaredError())
    del network  # make room for ONNX Runtime's copy
    options = ort.SessionOptions()
    options.add_session_config_entry("session.disable_prepacking", "1")  # no third copy
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    got = session.run(None, {"input": x})[0]
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)
    os.remove(data)
