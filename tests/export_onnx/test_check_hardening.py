"""The annotation checker and `deepsharp check | inspect` on models that cannot run, damaged
files and bad options: Runtime's error kept and named by node (exit 1), the reference
evaluator's own failures never a traceback, a clear error and a non-zero exit for the rest; and
Runtime given a copy whose start-up cost is the model's own."""

from __future__ import annotations

import os
import threading

import numpy as np
import onnx
import pytest
from onnx.reference.ops import op_relu
from tests.export_onnx.annotation_corpus import T, h, mlp, model, ones, tv

from deepsharp_export_onnx import check_annotations
from deepsharp_export_onnx.check import engines
from deepsharp_export_onnx.commands import check_main, inspect_main
from deepsharp_export_onnx.errors import ModelRunError, ModelUnreadable


@pytest.fixture
def save(tmp_path):
    def saved(made, name="model.onnx") -> str:
        path = str(tmp_path / name)
        onnx.save(made, path)
        return path

    return saved


def _unrunnable():
    """A Reshape to 3 values of a 2-value input: neither engine can run it."""
    target = onnx.numpy_helper.from_array(np.array([3], np.int64), "target")
    node = h.make_node("Reshape", ["x", "target"], ["y"], name="r")
    return model([node], [tv("x", [2])], [tv("y", [3])], initializers=[target], ir=8, opset=13)


def test_a_model_neither_engine_runs_keeps_runtimes_error_and_names_the_node():
    with pytest.raises(ModelRunError) as caught:
        check_annotations(_unrunnable(), {"x": ones(2)})
    error = caught.value
    assert error.node == "Reshape 'r'"
    assert str(error).startswith("ONNX Runtime could not run the model at Reshape 'r'")
    assert "the onnx reference evaluator could not run it either" in str(error)


def test_check_reports_a_model_that_cannot_run_with_exit_1_naming_the_node(save, capsys):
    assert check_main([save(_unrunnable())]) == 1
    out = capsys.readouterr().out
    assert "error: ONNX Runtime could not run the model at Reshape 'r'" in out
    assert "node: Reshape 'r'" in out


@pytest.mark.parametrize("failure", [TypeError("bad"), KeyError("k"), ZeroDivisionError("zero")])
def test_the_reference_evaluators_own_failures_are_model_run_errors(monkeypatch, failure):
    def broken(self, x):
        raise failure

    monkeypatch.setattr(op_relu.Relu, "_run", broken)
    relu = model([h.make_node("Relu", ["x"], ["y"], name="act")], [tv("x", [2])], [tv("y", [2])])
    with pytest.raises(ModelRunError, match=f"failed at Relu 'act': {type(failure).__name__}") as caught:
        check_annotations(relu, {"x": ones(2)}, engine="reference")
    assert caught.value.node == "Relu 'act'"


def test_runtime_is_given_the_models_ranks_so_start_up_stays_linear(monkeypatch):
    """The copy keeps each value's rank (axes anonymous); only a wrong rank falls back to the
    copy without annotations, whose start-up cost grows with the square of a shape chain."""
    seen = []
    real = engines._run_stripped

    def spy(model, feeds, expose, keep_rank):
        seen.append(keep_rank)
        return real(model, feeds, expose, keep_rank)

    monkeypatch.setattr(engines, "_run_stripped", spy)
    made, feeds = mlp()
    assert check_annotations(made, feeds) == {"batch": 5}
    assert seen == [True]


def test_a_wrong_declared_rank_still_gets_a_verdict(monkeypatch):
    made, feeds = mlp(h_shape=("batch", 3, 1))
    with pytest.raises(Exception) as caught:
        check_annotations(made, feeds)
    assert type(caught.value).__name__ == "AnnotationViolation"


@pytest.mark.parametrize("command", [check_main, inspect_main])
def test_empty_files_dev_null_and_fifos_are_refused_without_blocking(tmp_path, capsys, command):
    empty = tmp_path / "empty.onnx"
    empty.write_bytes(b"")
    fifo = tmp_path / "pipe.onnx"
    os.mkfifo(fifo)
    for path, says in ((empty, "empty, not an ONNX model"), ("/dev/null", "character device"),
                       (fifo, "FIFO")):
        codes = []
        thread = threading.Thread(target=lambda: codes.append(command([str(path)])), daemon=True)
        thread.start()
        thread.join(10)
        assert not thread.is_alive() and codes == [2]
        assert says in capsys.readouterr().err


def test_a_model_with_no_graph_is_refused(tmp_path, capsys):
    path = tmp_path / "blank.onnx"
    path.write_bytes(onnx.ModelProto(ir_version=8).SerializeToString())
    assert check_main([str(path)]) == 2 and inspect_main([str(path)]) == 2
    with pytest.raises(ModelUnreadable, match="holds no graph"):
        check_annotations(str(path), {})


def test_a_non_utf8_op_type_is_a_clear_error(save, capsys):
    made = model([h.make_node("Relu", ["x"], ["y"], name="r")], [tv("x", [2])], [tv("y", [2])], ir=8, opset=13)
    path = save(made)
    with open(path, "rb") as stream:
        data = stream.read().replace(b"Relu", b"R\xffl\xfe")
    with open(path, "wb") as stream:
        stream.write(data)
    assert inspect_main([path]) == 2 and check_main([path]) == 2
    assert "is not UTF-8 text" in capsys.readouterr().err


def test_inspect_states_sizes_it_cannot_know_instead_of_failing(save, capsys):
    made, _ = mlp()
    weight = made.graph.initializer[0]
    weight.data_location = onnx.TensorProto.EXTERNAL
    weight.ClearField("raw_data")
    weight.external_data.add(key="location", value="w.bin")
    weight.external_data.add(key="length", value="lots")
    odd = made.graph.initializer.add()
    odd.name, odd.data_type = "odd", 999
    odd.dims.append(3)
    assert inspect_main([save(made)]) == 0
    assert "(and 2 of a size the file does not state)" in capsys.readouterr().out


@pytest.mark.parametrize("seed", ["-1", "x", "1.5"])
def test_check_refuses_a_seed_numpy_cannot_take(save, capsys, seed):
    assert check_main([save(mlp()[0]), "--seed", seed]) == 2
    assert "argument --seed: must be a non-negative integer" in capsys.readouterr().err


def test_bytes_naming_external_data_are_not_run(tmp_path, monkeypatch):
    made, feeds = mlp()
    weight = made.graph.initializer[0]
    (tmp_path / "settings.env").write_bytes(onnx.numpy_helper.to_array(weight).tobytes())
    weight.ClearField("raw_data")
    weight.data_location = onnx.TensorProto.EXTERNAL
    weight.external_data.add(key="location", value="settings.env")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ModelUnreadable, match="may not read files"):
        check_annotations(made.SerializeToString(), feeds)
    assert T.FLOAT == weight.data_type
