"""float16 and int8 graphs: smaller, run in ONNX Runtime, their difference from the float32 network
reported and bounded; what a form cannot hold refused by name."""

from __future__ import annotations

import sys

import numpy as np
import onnx
import pytest

from deepsharp import (
    BinaryCrossEntropy, CrossEntropy, MeanSquaredError, Module, Parameter, RandomStream,
    Sequential, Shape,
)
from deepsharp_export_onnx import ExportRefused, OnnxExport
from tests.support import assert_valid, run_reference

RNG = np.random.default_rng(5)
MLP = (Sequential().dense(64).relu().dense(64).relu().dense(1), Shape(14), BinaryCrossEntropy())
CNN = (Sequential().conv2d(8, 3).relu().max_pool2d(2).flatten().dense(10), Shape(12, 12, 1),
       CrossEntropy())
LSTM = (Sequential().lstm(16).dense(1), Shape(9, 4), MeanSquaredError())
ENCODER = (Sequential().embedding(50, 16)
           .residual(Sequential().layer_norm().multi_head_attention(2, 16, causal=True))
           .global_avg_pool().dense(2), Shape(6), CrossEntropy())
# (network, largest difference allowed from the float32 network, for float16 and for int8)
CASES = {"mlp": (MLP, 2e-3, 5e-2), "cnn": (CNN, 2e-3, 5e-2), "lstm": (LSTM, 5e-3, 5e-2),
         "encoder": (ENCODER, 2e-3, 5e-2)}


def _rows(shape: Shape, count: int = 32) -> np.ndarray:
    if shape.rank == 1 and shape[0] == 6:  # token ids
        return RNG.integers(0, 50, (count, *shape))
    return RNG.standard_normal((count, *shape)).astype(np.float32)


def _export(case: str, **options):
    """The case's network, loss and rows; the export asked and its bytes; the float32 bytes."""
    (spec, shape, loss), *_ = CASES[case]
    network = spec.lower(shape, RandomStream(2))
    rows = _rows(shape)
    export = OnnxExport(shape, compare_on=rows, **options)
    data = export.to_bytes(network, loss)
    return network, loss, rows, export, data, OnnxExport(shape).to_bytes(network, loss)


def _weight_bytes(data: bytes, slots: set[str]) -> int:
    return sum(len(t.raw_data) for t in onnx.load_from_string(data).graph.initializer
               if t.name in slots)


@pytest.mark.parametrize("case", sorted(CASES))
def test_float16_weights_halve_the_graph_within_the_bound(case):
    _, half, _ = CASES[case]
    network, loss, rows, export, data, full = _export(case, weights="float16")
    model = onnx.load_from_string(data)
    assert_valid(model)
    halves = {t.name for t in model.graph.initializer if t.data_type == onnx.TensorProto.FLOAT16}
    written = {t.name for t in onnx.load_from_string(full).graph.initializer}
    assert set(network.state_dict()) & written <= halves  # every slot written as it is
    weights = {t.name for t in model.graph.initializer}
    casts = [n for n in model.graph.node if n.op_type == "Cast" and n.input[0] in weights]
    assert {n.output[0] for n in casts} == {f"{n.input[0]}/float32" for n in casts}
    assert len(data) < len(full)
    assert 2 * _weight_bytes(data, halves) == _weight_bytes(full, halves)
    report = export.report
    assert report.form == "float16 weights" and report.size == len(data) and report.rows == 32
    assert 0 < report.largest_difference <= half
    reference = run_reference(model, rows)  # the reference evaluator agrees with ONNX Runtime
    np.testing.assert_allclose(reference, network.predict(rows, loss), atol=half)


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_float16_graph_reads_back_as_the_network_it_runs(case):
    """Its weights widen exactly (float16 -> float32): the network read answers what ONNX Runtime
    answers for the float16 graph, and exports the float32 graph of those weights again."""
    from deepsharp_export_onnx import OnnxFile
    from tests.support.onnx_check import run_ort

    network, loss, rows, _, data, _ = _export(case, weights="float16")
    back = OnnxFile(loss).read(data)
    assert set(back.state_dict()) == set(network.state_dict())
    runtime = run_ort(data, rows)
    np.testing.assert_allclose(back.predict(rows, loss), runtime, rtol=0, atol=1e-5)
    for name, value in back.state_dict().items():  # every weight on float16's grid
        assert value.dtype == np.float32
        np.testing.assert_array_equal(value, value.astype(np.float16).astype(np.float32), name)


def test_an_int8_graph_is_refused_by_name_when_read():
    """Its activations are quantized at run time: a float32 network of the dequantized weights
    would answer otherwise than the graph, so it is refused, naming the node."""
    from deepsharp_export_onnx import ImportRefused, OnnxFile

    *_, data, _ = _export("mlp", quantize="dynamic")
    with pytest.raises(ImportRefused, match="DynamicQuantizeLinear"):
        OnnxFile(BinaryCrossEntropy()).read(data)


def test_float16_keeps_the_graphs_own_constants_float32():
    *_, data, _ = _export("encoder", weights="float16")
    model = onnx.load_from_string(data)
    left_out = [t for t in model.graph.initializer if t.name.endswith("left_out")]
    assert left_out and all(t.data_type == onnx.TensorProto.FLOAT for t in left_out)  # -1e9


def test_float16_refuses_a_weight_beyond_its_range_by_name():
    network = Sequential().dense(3).relu().dense(1).lower(Shape(4), RandomStream(0))
    network.steps[2].weight._data[1, 0] = 7e4
    with pytest.raises(ExportRefused) as refused:
        OnnxExport(Shape(4), weights="float16").to_bytes(network, BinaryCrossEntropy())
    assert ("step 2 (dense): weight '2.weight' holds 70000, beyond float16's largest finite value "
            "(65504)") in str(refused.value)


def test_float16_weights_of_a_network_written_as_code():
    class Affine(Module):
        def __init__(self):
            super().__init__()
            self.weight = Parameter(RNG.standard_normal((5, 2)).astype(np.float32))

        def forward(self, x):
            return x @ self.weight

    module, rows = Affine(), _rows(Shape(5))
    export = OnnxExport(Shape(5), weights="float16", compare_on=rows)
    model = onnx.load_from_string(export.to_bytes(module, MeanSquaredError()))
    assert {t.name: t.data_type for t in model.graph.initializer}["weight"] == \
        onnx.TensorProto.FLOAT16
    assert export.report.largest_difference <= 5e-3


@pytest.mark.parametrize("case", sorted(CASES))
def test_int8_weights_through_onnx_runtime_within_the_bound(case):
    _, _, bound = CASES[case]
    *_, export, data, full = _export(case, quantize="dynamic")
    model = onnx.load_from_string(data)
    ops = {n.op_type for n in model.graph.node}
    assert ops & {"MatMulInteger", "ConvInteger", "DynamicQuantizeLSTM", "DequantizeLinear"}
    assert model.opset_import[0].version >= 11
    assert len(data) < len(full)
    assert export.report.form == "int8 weights (dynamic)"
    assert 0 < export.report.largest_difference <= bound


@pytest.mark.parametrize("spec, shape, node", [
    (Sequential().gru(8, bidirectional=True).dense(1), Shape(5, 3),
     "step 0 (gru): node '0.gru/layer0' (GRU)"),
    (Sequential().conv_transpose2d(2, 3).flatten().dense(1), Shape(4, 4, 1),
     "step 0 (conv_transpose2d): node '0.conv_transpose2d' (ConvTranspose)"),
])
def test_int8_refuses_weights_the_quantizer_has_no_kernel_for(spec, shape, node):
    network = spec.lower(shape, RandomStream(0))
    with pytest.raises(ExportRefused) as refused:
        OnnxExport(shape, quantize="dynamic").to_bytes(network, MeanSquaredError())
    assert node in str(refused.value) and "has no int8 form" in str(refused.value)


def test_int8_needs_onnx_runtime_and_says_so(monkeypatch):
    monkeypatch.setitem(sys.modules, "onnxruntime", None)
    monkeypatch.setitem(sys.modules, "onnxruntime.quantization", None)
    monkeypatch.setitem(sys.modules, "onnxruntime.quantization.registry", None)
    network = MLP[0].lower(MLP[1], RandomStream(0))
    with pytest.raises(ExportRefused) as refused:
        OnnxExport(MLP[1], quantize="dynamic").to_bytes(network, MLP[2])
    assert "quantize='dynamic' needs onnxruntime, which is not installed" in str(refused.value)


@pytest.mark.parametrize("options, message", [
    ({"weights": "bfloat16"}, "weights must be one of ('float32', 'float16'), received 'bfloat16'"),
    ({"quantize": "static"}, "quantize must be one of (None, 'dynamic'), received 'static'"),
    ({"weights": "float16", "quantize": "dynamic"}, "choose one smaller form"),
    ({"external_data": "yes"}, "external_data must be None (when over 2 GiB), True or False"),
    ({"quantize": "dynamic", "external_data": True}, "the int8 graph is written whole"),
])
def test_options_are_checked_when_made(options, message):
    with pytest.raises(ExportRefused) as refused:
        OnnxExport(Shape(3), **options)
    assert message in str(refused.value)


def test_int8_above_max_opset_is_refused():
    network = MLP[0].lower(MLP[1], RandomStream(0))
    with pytest.raises(ExportRefused) as refused:
        OnnxExport(MLP[1], quantize="dynamic", max_opset=9).to_bytes(network, MLP[2])
    assert "writes operator set 11 or newer, above max_opset 9" in str(refused.value)


def test_the_report_without_rows_gives_the_size_only():
    network = MLP[0].lower(MLP[1], RandomStream(0))
    export = OnnxExport(MLP[1])
    data = export.to_bytes(network, MLP[2])
    assert export.report.size == len(data) and export.report.largest_difference is None
    assert str(export.report) == f"float32: {len(data):,} bytes"


@pytest.mark.parametrize("options", [{"weights": "float16"}, {"quantize": "dynamic"}])
def test_the_preparation_in_front_stays_float32(options):
    from deepsharp.preparation import Columns, FillMissing, OneHot, Standardizer

    table = {"a": RNG.normal(size=40).astype(np.float32), "c": np.array(["x", "y"] * 20)}
    prepare = Columns.fit(table, {"a": [FillMissing, Standardizer], "c": OneHot})
    network = Sequential().dense(16).relu().dense(1).lower(Shape(3), RandomStream(0))
    export = OnnxExport(Shape(3), prepare=prepare, compare_on=table, **options)
    model = onnx.load_from_string(export.to_bytes(network, BinaryCrossEntropy()))
    kept = {t.name: t.data_type for t in model.graph.initializer if t.name.startswith("prepare")}
    assert kept["prepare.a.1.standardizer/mean"] == onnx.TensorProto.FLOAT
    assert export.report.largest_difference <= 5e-2
