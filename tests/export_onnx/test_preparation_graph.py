"""Preparation in the graph: the graph takes raw rows and answers what `prepare` +
`network.predict` answer (1e-6, in ONNX Runtime and the reference evaluator), NaN and unknown
categories alike; read back as the same preparation objects; refusals by name."""

from __future__ import annotations

from functools import partial

import numpy as np
import onnx
import pytest
from onnx.reference import ReferenceEvaluator

from deepsharp import BinaryCrossEntropy, CrossEntropy, RandomStream, Sequential, Shape
from deepsharp.preparation import (
    Chain, Columns, FillMissing, IndexEncoder, MinMaxScaler, OneHot, SelectColumns, Standardizer,
)
from deepsharp_export_onnx import ExportRefused, ImportRefused, OnnxExport, OnnxFile
from tests.support import assert_valid
from tests.support.onnx_check import ort_session

RNG = np.random.default_rng(3)
N = 24
LOSS = BinaryCrossEntropy()


def _numbers(width: int = 3) -> np.ndarray:
    x = RNG.normal(5.0, 3.0, (N, width)).astype(np.float32)
    x[[2, 7], [0, width - 1]] = np.nan
    return x


def _table() -> dict:
    return {"age": _numbers(1)[:, 0], "fare": _numbers(2),
            "sex": RNG.choice(["female", "male"], N), "port": RNG.integers(0, 3, N),
            "colours": np.stack([RNG.choice(["red", "green", "blue"], N),
                                 RNG.choice(["light", "dark"], N)], axis=1),
            "deck": RNG.integers(1, 5, (N, 2))}


def _unseen(table: dict) -> dict:
    """The same columns with categories never fitted, and NaN where the fit had numbers."""
    table = {k: v.copy() for k, v in table.items()}
    table["sex"][:3] = ["other", "", "FEMALE"]
    table["port"][:2] = [7, -1]
    table["colours"][0] = ["purple", "dark"]
    table["deck"][1] = [0, 9]
    table["age"][5] = np.nan
    table["fare"][6] = np.nan
    return table


def _answers(data: bytes, feeds: dict) -> tuple[np.ndarray, np.ndarray]:
    model = onnx.load_from_string(data)
    return (ort_session(data).run(None, feeds)[0],
            ReferenceEvaluator(model).run(None, feeds)[0])


def _export(prepare, hidden=(8,), loss=LOSS, out=1, **options):
    spec = Sequential()
    for units in hidden:
        spec = spec.dense(units).relu()
    network = spec.dense(out).lower(Shape(prepare.width_out), RandomStream(1))
    data = OnnxExport(Shape(prepare.width_out), prepare=prepare, **options).to_bytes(network, loss)
    return network, data


def _hold(data, network, prepare, rows, feeds, loss=LOSS):
    expected = network.predict(prepare(rows), loss)
    for got in _answers(data, feeds):
        np.testing.assert_allclose(got, expected, rtol=0, atol=1e-6)
        assert np.array_equal(np.isnan(got), np.isnan(expected))


STEPS = {
    "standardizer": lambda x: Standardizer.fit(x),
    "min_max": lambda x: MinMaxScaler.fit(x, feature_range=(-2, 3)),
    "fill": lambda x: FillMissing.fit(x, strategy="median"),
    "fill_then_scale": lambda x: Chain((FillMissing.fit(x),
                                        Standardizer.fit(FillMissing.fit(x)(x)))),
    "select": lambda x: SelectColumns([2, 0], width=3),
}


@pytest.mark.parametrize("name", sorted(STEPS))
def test_a_numeric_step_in_front_answers_raw_rows(name):
    x = _numbers()
    prepare = STEPS[name](x)
    network, data = _export(prepare)
    model = onnx.load_from_string(data)
    assert_valid(model)
    assert [i.name for i in model.graph.input][:1] == ["input"]
    for rows in (x, x[:1], x[:7]):
        _hold(data, network, prepare, rows, {"input": rows})
    back = OnnxFile(LOSS).read(data)
    assert back.preparation == prepare
    assert OnnxExport(back.input_shape).to_bytes(back, LOSS) == data


@pytest.mark.parametrize("encoder", [OneHot, IndexEncoder, partial(IndexEncoder.fit, unknown=7)])
@pytest.mark.parametrize("column", ["sex", "port", "colours", "deck"])
def test_an_encoder_in_front_answers_raw_categories_and_unknown_ones(encoder, column):
    table = _table()
    prepare = Columns.fit(table, {column: encoder})
    network, data = _export(prepare)
    for rows in (table, _unseen(table)):
        _hold(data, network, prepare, rows, prepare.inputs(rows))
    back = OnnxFile(LOSS).read(data)
    assert back.preparation == prepare


def test_mixed_columns_are_inputs_of_their_own_types():
    table = _table()
    prepare = Columns.fit(table, {
        "age": [FillMissing, Standardizer], "fare": [partial(FillMissing.fit, strategy="median"),
                                                     MinMaxScaler],
        "sex": OneHot, "port": IndexEncoder, "colours": OneHot, "deck": [IndexEncoder],
    })
    network, data = _export(prepare, hidden=(16, 8), loss=CrossEntropy(), out=3)
    model = onnx.load_from_string(data)
    assert_valid(model)
    types = {i.name: (i.type.tensor_type.elem_type,
                      [d.dim_param or d.dim_value for d in i.type.tensor_type.shape.dim])
             for i in model.graph.input}
    assert types == {"age": (onnx.TensorProto.FLOAT, ["batch"]),
                     "fare": (onnx.TensorProto.FLOAT, ["batch", 2]),
                     "sex": (onnx.TensorProto.STRING, ["batch"]),
                     "port": (onnx.TensorProto.INT64, ["batch"]),
                     "colours": (onnx.TensorProto.STRING, ["batch", 2]),
                     "deck": (onnx.TensorProto.INT64, ["batch", 2])}
    for rows in (table, _unseen(table), {k: v[:1] for k, v in table.items()}):
        _hold(data, network, prepare, rows, prepare.inputs(rows), CrossEntropy())
    back = OnnxFile(CrossEntropy()).read(data)
    assert back.preparation == prepare
    assert OnnxExport(back.input_shape).to_bytes(back, CrossEntropy()) == data


def test_the_standardized_breast_cancer_network_takes_raw_measurements():
    from deepsharp.datasets import load_breast_cancer

    rows = load_breast_cancer().x
    scale = Standardizer.fit(rows)
    network, data = _export(scale, hidden=(16,))
    model = onnx.load_from_string(data)
    assert model.opset_import[0].version == 7  # Sub and Div: nothing newer than the network
    _hold(data, network, scale, rows, {"input": rows})


@pytest.mark.parametrize("prepare, shape, message", [
    (Standardizer.fit(np.ones((3, 4))), Shape(5), "prepare gives rows of 4 features; the network "
                                                  "takes rows of 5 features"),
    (Standardizer.fit(np.ones((3, 4))), Shape(2, 4), "the network takes examples that are not rows"),
    ("scale", Shape(4), "prepare must be a deepsharp.preparation step"),
])
def test_a_preparation_that_does_not_fit_the_network_is_refused(prepare, shape, message):
    network = Sequential().dense(2).lower(shape, RandomStream(0))
    with pytest.raises(ExportRefused) as refused:
        OnnxExport(shape, prepare=prepare).to_bytes(network, LOSS)
    assert message in str(refused.value)


def test_a_column_named_as_a_value_of_the_graph_is_refused():
    table = {"0.dense": np.ones(3), "output": np.ones(3)}
    prepare = Columns.fit(table, {"0.dense": Standardizer, "output": Standardizer})
    network = Sequential().dense(1).lower(Shape(2), RandomStream(0))
    with pytest.raises(ExportRefused) as refused:
        OnnxExport(Shape(2), prepare=prepare).to_bytes(network, LOSS)
    assert "input name '0.dense' is also the name of a value inside the graph" in str(refused.value)
    assert "the name 'output' is given to more than one graph input or output" in str(refused.value)


def test_a_network_written_as_code_takes_raw_rows_too():
    from deepsharp import Module, Parameter

    table = _table()
    prepare = Columns.fit(table, {"age": [FillMissing, Standardizer], "colours": OneHot})

    class Affine(Module):
        def __init__(self):
            super().__init__()
            self.weight = Parameter(RNG.standard_normal((prepare.width_out, 2)).astype(np.float32))

        def forward(self, x):
            return x @ self.weight

    module = Affine()
    data = OnnxExport(Shape(prepare.width_out), prepare=prepare).to_bytes(module, CrossEntropy())
    assert_valid(onnx.load_from_string(data))
    for rows in (table, _unseen(table)):
        _hold(data, module, prepare, rows, prepare.inputs(rows), CrossEntropy())


def test_a_module_with_several_inputs_takes_no_preparation():
    from deepsharp import Module

    class Pair(Module):
        def forward(self, a, b):
            return a + b

    x = _numbers()
    with pytest.raises(ExportRefused) as refused:
        OnnxExport(prepare=Standardizer.fit(x), example=(x, x)).to_bytes(Pair(), None)
    assert "prepare: a preparation goes in front of a network with one input; this module has 2 " \
           "(input_0, input_1)" in str(refused.value)


def test_a_preparation_the_nodes_do_not_hold_is_refused_on_import():
    x = _numbers()
    _, data = _export(Standardizer.fit(x))
    model = onnx.load_from_string(data)
    for prop in model.metadata_props:
        if prop.key == "deepsharp.preparation":
            prop.value = prop.value.replace("standardizer", "min_max_scaler")
    with pytest.raises(ImportRefused) as refused:
        OnnxFile(LOSS).read(model)
    assert "expected one Mul node reading it, found node 'prepare.input.0.standardizer/centred' " \
           "(Sub)" in str(refused.value)


def test_a_network_saved_with_its_preparation_exports_the_same_graph(tmp_path):
    """Saved to a network file and loaded, the network still carries its preparation: the graph
    it exports is byte for byte the one the network exported before it was saved."""
    import deepsharp

    table = _table()
    prepare = Columns.fit(table, {"age": [FillMissing, Standardizer], "sex": OneHot,
                                  "port": IndexEncoder, "colours": OneHot,
                                  "fare": [partial(FillMissing.fit, strategy="median"),
                                           MinMaxScaler, lambda x: SelectColumns([1], width=2)]})
    network, data = _export(prepare, hidden=(8,), loss=CrossEntropy(), out=3)
    network.with_preparation(prepare).save(tmp_path / "model.ds")
    loaded = deepsharp.load(tmp_path / "model.ds")
    assert loaded.preparation == prepare
    assert OnnxExport(loaded.input_shape).to_bytes(loaded, CrossEntropy()) == data
