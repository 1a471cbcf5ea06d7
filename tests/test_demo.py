"""`deepsharp demo` (what `make demo` runs) trains, exports, and checks the graph in ONNX Runtime."""

import re

import onnx

from deepsharp.cli import main


def test_demo_end_to_end(tmp_path, capsys):
    out, digits = tmp_path / "cancer.onnx", tmp_path / "digits.onnx"
    assert main(["demo", "--out", str(out), "--digits-out", str(digits)]) == 0
    text = capsys.readouterr().out
    accuracy = float(re.search(r"held-out accuracy: ([0-9.]+)", text).group(1))
    differences = [float(d) for d in re.findall(r"largest difference from network.predict: "
                                                r"([0-9.e+-]+)", text)]
    assert accuracy >= 0.95 and len(differences) == 2 and max(differences) <= 1e-5
    model = onnx.load(str(out))
    assert model.opset_import[0].version == 7 and len(model.metadata_props) >= 2
    # the standardisation is inside: the graph answers raw measurements
    assert "raw rows answered by the graph" in text
    assert [n.op_type for n in model.graph.node[:2]] == ["Sub", "Div"]
    assert "deepsharp.preparation" in {p.key for p in model.metadata_props}
    assert re.search(r"int8 weights \(dynamic\): [0-9,]+ bytes; largest difference", text)
    # the digits: a validation split, macro F1 beside accuracy, the best epoch's weights kept
    found = re.search(r"digits held-out accuracy: ([0-9.]+), macro F1: ([0-9.]+)", text)
    assert float(found.group(1)) >= 0.93 and float(found.group(2)) >= 0.93
    assert "the best validation F1" in text and "answers as the restored network: True" in text
    assert (tmp_path / "digits.best.ds").exists() and onnx.load(str(digits)).graph.node


def test_unknown_command_is_named(capsys):
    assert main(["teleport"]) == 2
    assert "unknown command 'teleport'" in capsys.readouterr().err
