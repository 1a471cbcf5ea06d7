"""`deepsharp check` and `deepsharp inspect`, called as the CLI calls them."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from tests.export_onnx.annotation_corpus import T, h, hidden, ir3, loop_model, mlp, model, ones, tv

from deepsharp.cli import main as deepsharp_main
from deepsharp_export_onnx.commands import check_main, inspect_main, make_feeds


@pytest.fixture
def save(tmp_path):
    def saved(made: onnx.ModelProto, name: str = "model.onnx", **options) -> str:
        path = str(tmp_path / name)
        onnx.save(made, path, **options)
        return path

    return saved


# --- check ------------------------------------------------------------------------------------


def test_check_prints_the_binding_map(save, capsys):
    path = save(mlp()[0])
    assert check_main([path, "--dim", "batch=3"]) == 0
    assert capsys.readouterr().out == (
        f"model: {path}\n"
        "inputs (made from the annotations, seed 0; batch=3):\n"
        "  x  float32  (3, 4)\n"
        "engine: onnxruntime (3 annotation checks)\n"
        "bindings: batch=3\n"
        "ok: every shape annotation held in this run\n"
    )


def test_check_a_worked_violation(save, capsys):
    path = save(hidden(("batch", "hidden"))[0])  # y is declared [batch, hidden] but is (batch, 2)
    assert check_main([path, "--dim", "batch=3"]) == 1
    out = capsys.readouterr().out
    assert out.endswith(
        "engine: onnxruntime\n"
        "violation: value 'y' (graph output), axis 1: declared 'hidden', which value 'h' (value_info) "
        "bound to 6 at axis 1; the run produced 2 (shape (3, 2))\n"
    )


def test_check_names_the_bodies_run_on_the_reference_evaluator(save, capsys):
    assert check_main([save(loop_model()[0]), "--dim", "n=4"]) == 0  # seed 0 makes steps 1
    out = capsys.readouterr().out
    assert "engine: onnxruntime+reference (12 annotation checks; bodies of Loop 'repeat' on the reference evaluator)" in out
    assert "bindings: n=4, twice=8, steps=1\n" in out


def test_check_reads_inputs_from_an_npz(save, tmp_path, capsys):
    feeds = tmp_path / "feeds.npz"
    np.savez(feeds, x=ones(7, 4))
    assert check_main([save(mlp()[0]), "--inputs", str(feeds)]) == 0
    out = capsys.readouterr().out
    assert f"inputs (read from {feeds}):\n  x  float32  (7, 4)\n" in out
    assert "bindings: batch=7\n" in out


def test_check_sizes_symbols_an_initializer_decides(save, capsys):
    # w [in, units] is an IR 3 input with a 4x3 default, so x must be made with in = 4.
    assert check_main([save(ir3()[0])]) == 0
    assert "  x  float32  (2, 4)\n" in capsys.readouterr().out


def test_made_inputs_follow_their_annotations_and_the_seed():
    gather = model(
        [h.make_node("Gather", ["data", "idx"], ["y"], axis=0), h.make_node("Not", ["flag"], ["nflag"])],
        [tv("data", ["n", 3]), tv("idx", ["k"], T.INT64), tv("flag", [None], T.BOOL)],
        [tv("y", ["k", 3]), tv("nflag", [None], T.BOOL)],
    )
    feeds = make_feeds(gather.graph, {"k": 50}, np.random.default_rng(4))
    assert {name: (a.dtype, a.shape) for name, a in feeds.items()} == {
        "data": (np.float32, (2, 3)), "idx": (np.int64, (50,)), "flag": (np.bool_, (2,)),
    }
    assert set(np.unique(feeds["idx"])) == {0, 1}  # small, non-negative: valid rows of data
    again = make_feeds(gather.graph, {"k": 50}, np.random.default_rng(4))
    assert all(np.array_equal(feeds[name], again[name]) for name in feeds)


USAGE_ERRORS = {
    "bad_dim": (["--dim", "batch"], "--dim expects SYMBOL=SIZE with a non-negative integer size; received 'batch'"),
    "negative_dim": (["--dim", "batch=-1"], "received 'batch=-1'"),
    "unknown_symbol": (["--dim", "bacth=3"], "--dim bacth: no graph input declares this symbol; input symbols: batch"),
    "dim_and_inputs": (["--dim", "batch=3", "--inputs", "feeds.npz"], "it cannot be combined with --inputs"),
    "missing_npz": (["--inputs", "nowhere.npz"], "cannot read the inputs 'nowhere.npz'"),
    "runtime_only": (["--engine", "onnxruntime"], None),
}


@pytest.mark.parametrize("case", USAGE_ERRORS, ids=list(USAGE_ERRORS))
def test_check_usage_errors_exit_2(case, save, capsys):
    extra, message = USAGE_ERRORS[case]
    path = save(mlp()[0] if case != "runtime_only" else loop_model()[0])
    assert check_main([path, *extra]) == 2
    err = capsys.readouterr().err
    assert (message or "cannot see values inside subgraph bodies") in err


def test_check_an_npz_that_does_not_match_the_inputs(save, tmp_path, capsys):
    feeds = tmp_path / "feeds.npz"
    np.savez(feeds, q=ones(2, 4))
    assert check_main([save(mlp()[0]), "--inputs", str(feeds)]) == 2
    assert "missing graph input 'x' (float [batch, 4]); 'q' is not a graph input" in capsys.readouterr().err


def test_check_an_input_without_a_shape_needs_npz(save, capsys):
    made = model([h.make_node("Relu", ["x"], ["y"])], [tv("x", None)], [tv("y", None)])
    assert check_main([save(made)]) == 2
    assert "input 'x' declares no shape to make a value from; pass --inputs feeds.npz" in capsys.readouterr().err


def test_check_makes_no_input_past_its_size_limit(save, capsys):
    made = model([h.make_node("Relu", ["x"], ["y"])], [tv("x", [2, 2 ** 31])], [tv("y", [2, 2 ** 31])])
    assert check_main([save(made)]) == 2
    assert "input 'x' would be made of 4,294,967,296 values (shape (2, 2147483648)), more than " \
           "check makes (16,777,216)" in capsys.readouterr().err


def test_check_unreadable_model_and_bad_options(tmp_path, capsys):
    assert check_main([str(tmp_path / "none.onnx")]) == 2
    assert "cannot read the model" in capsys.readouterr().err
    assert check_main(["--no-such-option"]) == 2
    assert check_main(["--help"]) == 0
    assert "Run an ONNX file and check its shape annotations." in capsys.readouterr().out


def test_check_a_model_that_does_not_run(save, capsys):
    node = h.make_node("Mystery", ["x"], ["y"], domain="example.unknown")
    mystery = model([node], [tv("x", [2])], [tv("y", [2])])
    mystery.opset_import.append(h.make_opsetid("example.unknown", 1))
    assert check_main([save(mystery), "--engine", "onnxruntime"]) == 1
    assert "error: ONNX Runtime could not run the model" in capsys.readouterr().out


def test_the_deepsharp_command_dispatches_check_and_inspect(save, capsys):
    path = save(mlp(y_shape=("batch", 5))[0])
    assert deepsharp_main(["check", path]) == 1
    assert deepsharp_main(["inspect", path]) == 0
    assert "value 'y' (graph output), axis 1: declared 5, inference gives 3" in capsys.readouterr().out


# --- inspect ----------------------------------------------------------------------------------


def test_inspect_prints_what_the_file_declares(save, capsys):
    made = mlp()[0]
    made.producer_name, made.producer_version = "deepsharp", "0.1.0"
    path = save(made)
    assert inspect_main([path]) == 0
    assert capsys.readouterr().out == (
        f"model: {path}\n"
        "IR version: 10, producer 'deepsharp' 0.1.0\n"
        "opset imports: ai.onnx 21\n"
        "inputs:\n"
        "  x  float  [batch, 4]\n"
        "outputs:\n"
        "  y  float  [batch, 3]\n"
        "value_info annotations: 1\n"
        "nodes (3): Add 1, MatMul 1, Relu 1\n"
        "initializers: 2, 60 bytes\n"
        "shape inference (strict, data propagation): no conflict with the declared annotations\n"
    )


def test_inspect_reports_each_conflict_with_inference(save, capsys):
    assert inspect_main([save(mlp(y_shape=("batch", 5), h_shape=("batch", 3, 1))[0])]) == 0
    assert capsys.readouterr().out.endswith(
        "shape inference (strict, data propagation) contradicts 2 declared annotation(s):\n"
        "  value 'h' (value_info): declared rank 3 [batch, 3, 1], inference gives rank 2 [batch, 3]\n"
        "  value 'y' (graph output), axis 1: declared 5, inference gives 3\n"
    )


def test_inspect_reports_a_symbol_inference_gives_two_sizes(save, capsys):
    assert inspect_main([save(hidden(("batch", "hidden"))[0])]) == 0
    assert "  symbol 'hidden': inference gives 2 at value 'y' axis 1 and 6 at value 'h' axis 1\n" in capsys.readouterr().out


def test_inspect_reports_when_strict_inference_fails(save, capsys):
    assert inspect_main([save(ir3((4, 5))[0])]) == 0
    out = capsys.readouterr().out
    assert "IR version: 3\nopset imports: ai.onnx 8\n" in out
    assert "  w  float  [4, 5]\n" in out
    assert "shape inference (strict, data propagation) failed: [ShapeInferenceError]" in out


def test_inspect_counts_body_nodes_and_external_bytes(save, capsys):
    assert inspect_main([save(loop_model()[0])]) == 0
    assert "nodes (5, 4 of them in subgraph bodies): Concat 1, Identity 1, Loop 1, Neg 1, Relu 1\n" in capsys.readouterr().out
    path = save(mlp()[0], "external.onnx", save_as_external_data=True, location="external.bin", size_threshold=0)
    assert inspect_main([path]) == 0
    assert "initializers: 2, 60 bytes\n" in capsys.readouterr().out


def test_inspect_a_missing_file(tmp_path, capsys):
    assert inspect_main([str(tmp_path / "none.onnx")]) == 2
    assert "no such file" in capsys.readouterr().err
