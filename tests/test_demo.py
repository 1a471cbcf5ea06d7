"""`deepsharp demo` (what `make demo` runs) trains, exports, and checks the graph in ONNX Runtime."""

import re

import onnx

from deepsharp.cli import main


def test_demo_end_to_end(tmp_path, capsys):
    out = tmp_path / "cancer.onnx"
    assert main(["demo", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    accuracy = float(re.search(r"held-out accuracy: ([0-9.]+)", text).group(1))
    difference = float(re.search(r"largest difference from network.predict: ([0-9.e+-]+)", text).group(1))
    assert accuracy >= 0.95 and difference <= 1e-5
    model = onnx.load(str(out))
    assert model.opset_import[0].version == 7 and len(model.metadata_props) >= 2
    # the standardisation is inside: the graph answers raw measurements
    assert "raw rows answered by the graph" in text
    assert [n.op_type for n in model.graph.node[:2]] == ["Sub", "Div"]
    assert "deepsharp.preparation" in {p.key for p in model.metadata_props}
    assert re.search(r"int8 weights \(dynamic\): [0-9,]+ bytes; largest difference", text)


def test_unknown_command_is_named(capsys):
    assert main(["teleport"]) == 2
    assert "unknown command 'teleport'" in capsys.readouterr().err
