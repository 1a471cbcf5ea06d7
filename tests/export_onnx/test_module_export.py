"""Modules written as code through OnnxExport: several inputs and outputs (run on numpy, exported
with every name), the caller's example, the symbolic axes chosen, names that collide, and every
refusal by its message. ONNX Runtime answers at two batch sizes, within 1e-5."""

from __future__ import annotations

import numpy as np
import onnx
import pytest

from deepsharp import (
    BinaryCrossEntropy, CrossEntropy, MeanSquaredError, Module, Parameter, RandomStream,
    Sequential, Shape, functional as F,
)
from deepsharp_export_onnx import ExportRefused, OnnxExport, check_annotations
from tests.support.onnx_check import assert_valid, ort_session

_rng = np.random.default_rng(21)


def normal(*shape):
    return _rng.standard_normal(shape).astype(np.float32)


class TwoHeads(Module):
    """forward(a, b) -> a tuple or a dict of two tensors."""

    def __init__(self, as_dict: bool):
        super().__init__()
        object.__setattr__(self, "as_dict", as_dict)
        self.wa, self.wb = Parameter(normal(4, 6) * 0.5), Parameter(normal(2, 6) * 0.5)
        self.head = Parameter(normal(6, 3) * 0.5)

    def forward(self, a, b):
        h = (a @ self.wa + b @ self.wb).tanh()
        scores, gate = h @ self.head, h.mean(axis=1, keepdims=True)
        return {"scores": scores, "gate": gate} if self.as_dict else (scores, gate)


def batches(*sizes):
    return [(normal(n, 4), normal(n, 2)) for n in sizes]


def answers(data, feeds):
    model = onnx.load_from_string(data)
    assert_valid(model)
    session = ort_session(data)
    names = [o.name for o in model.graph.output]
    return model, names, dict(zip(names, session.run(None, feeds)))


@pytest.mark.parametrize("as_dict", [False, True])
def test_several_inputs_and_outputs_run_on_numpy_in_forwards_structure(as_dict):
    module = TwoHeads(as_dict)
    (a, b), = batches(5)
    out = module(a, b)
    assert isinstance(out, dict if as_dict else tuple)
    scores, gate = (out["scores"], out["gate"]) if as_dict else out
    assert isinstance(scores, np.ndarray) and scores.shape == (5, 3) and gate.shape == (5, 1)
    named = module.evaluate(a=a, b=b)
    np.testing.assert_array_equal(named["scores"] if as_dict else named[0], scores)


@pytest.mark.parametrize("as_dict, options, inputs, outputs", [
    (True, {}, ["a", "b"], ["scores", "gate"]),                      # a mapping's and dict's keys
    (False, {"input_names": ["left", "right"], "output_names": ["p", "g"]}, ["left", "right"],
     ["p", "g"]),
    (False, {}, ["input_0", "input_1"], ["output_0", "output_1"]),
])
def test_several_inputs_and_outputs_export_with_every_name(as_dict, options, inputs, outputs):
    module = TwoHeads(as_dict)
    (a, b), = batches(5)
    example = {"a": a, "b": b} if as_dict else (a, b)
    losses = {"scores": CrossEntropy(), "gate": None} if as_dict else [CrossEntropy(), None]
    data = OnnxExport(example=example, **options).to_bytes(module, losses)
    for x, y in batches(5, 9):
        feeds = dict(zip(inputs, (x, y)))
        model, names, got = answers(data, feeds)
        assert [i.name for i in model.graph.input][:2] == inputs and names == outputs
        expected = module(x, y)
        expected = list(expected.values()) if as_dict else list(expected)
        np.testing.assert_allclose(got[outputs[0]], CrossEntropy().output(expected[0]), atol=1e-5)
        np.testing.assert_allclose(got[outputs[1]], expected[1], atol=1e-5)
        assert check_annotations(model, feeds)["batch"] == len(x)


def test_an_example_of_category_ids_in_float_columns_exports():
    class Categories(Module):
        def __init__(self):
            super().__init__()
            self.table = Parameter(normal(5, 3))
            self.out = Parameter(normal(4, 1))

        def forward(self, x):                        # x: (batch, 2): a category id, a number
            ids = x[:, 0].astype(np.int64)
            return F.concat([F.embedding(ids, self.table), x[:, 1:]], axis=1) @ self.out

    module = Categories()
    with pytest.raises(ExportRefused, match="embedding: id -?[0-9]+ is outside the vocabulary"):
        OnnxExport(Shape(2)).to_bytes(module, BinaryCrossEntropy())   # random normal columns
    example = np.stack([_rng.integers(0, 5, 6), normal(6)], axis=1).astype(np.float32)
    data = OnnxExport(Shape(2), example=example).to_bytes(module, BinaryCrossEntropy())
    for n in (6, 11):
        x = np.stack([_rng.integers(0, 5, n), normal(n)], axis=1).astype(np.float32)
        _, _, got = answers(data, {"input": x})
        np.testing.assert_allclose(got["output"], module.predict(x, BinaryCrossEntropy()),
                                   atol=1e-5)


class Flat(Module):
    """Flattens the steps into the features: only a fixed number of steps fits its weight."""

    def __init__(self):
        super().__init__()
        self.w = Parameter(normal(7 * 4, 2))

    def forward(self, x):
        return x.reshape(x.shape[0], 7 * 4) @ self.w


def test_axis_names_choose_the_symbolic_axes():
    module, x = Flat(), normal(5, 7, 4)
    with pytest.raises(ExportRefused, match="SYMBOLIC_SHAPE"):
        OnnxExport(Shape(7, 4), example=x).to_bytes(module, MeanSquaredError())  # steps too
    data = OnnxExport(Shape(7, 4), example=x, axis_names={0: "batch"}).to_bytes(
        module, MeanSquaredError())
    model = onnx.load_from_string(data)
    dims = [d.dim_param or d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim]
    assert dims == ["batch", 7, 4]
    for n in (5, 8):
        batch = normal(n, 7, 4)
        _, _, got = answers(data, {"input": batch})
        np.testing.assert_allclose(got["output"], module(batch), atol=1e-5)


def test_axis_names_per_input_name():
    module = TwoHeads(True)
    (a, b), = batches(5)
    data = OnnxExport(example={"a": a, "b": b}, axis_names={"a": {0: "rows"}, "b": {0: "rows"}}
                      ).to_bytes(module, None)
    model = onnx.load_from_string(data)
    assert model.graph.input[0].type.tensor_type.shape.dim[0].dim_param == "rows"


def test_a_series_module_gets_symbolic_steps_by_default():
    class Pool(Module):
        def __init__(self):
            super().__init__()
            self.w = Parameter(normal(4, 2))

        def forward(self, x):
            return (x[:, 1:] - x[:, :-1]).mean(axis=1) @ self.w

    module = Pool()
    data = OnnxExport(Shape(6, 4)).to_bytes(module, MeanSquaredError())
    for n, steps in ((3, 6), (5, 13)):
        x = normal(n, steps, 4)
        _, _, got = answers(data, {"input": x})
        np.testing.assert_allclose(got["output"], module(x), atol=1e-5)


# -- names -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("options, fragment", [
    ({"output_names": ["wa", "gate"]}, "output name 'wa' is already the name of the constant "
                                       "'wa' \\(a parameter's path\\)"),
    ({"output_names": ["p", "p"]}, "output name 'p' is used twice"),
    ({"input_names": ["a", "b"], "output_names": ["a", "g"]},
     "the name 'a' is given to more than one graph input or output"),
    ({"input_names": ["head", "b"]}, "the name 'head' is used twice"),
])
def test_names_that_collide_are_refused_by_name(options, fragment):
    (a, b), = batches(5)
    with pytest.raises(ExportRefused, match=fragment):
        OnnxExport(example=(a, b), **options).to_bytes(TwoHeads(False), None)


def test_an_output_named_like_a_parameter_of_a_one_output_module_is_refused():
    module, x = Flat(), normal(5, 7, 4)
    with pytest.raises(ExportRefused, match="output name 'w' is already the name of the "
                                            "constant 'w'"):
        OnnxExport(Shape(7, 4), output_name="w", axis_names={0: "batch"}).to_bytes(
            module, MeanSquaredError())


# -- refusals ----------------------------------------------------------------------------------------

def test_what_cannot_be_exported_is_refused_by_name():
    module = TwoHeads(False)
    (a, b), = batches(5)
    cases = [
        (OnnxExport(example=(a, b)), CrossEntropy(), "loss CrossEntropy: the module has 2 "
                                                     "outputs \\(output_0, output_1\\)"),
        (OnnxExport(example=(a, b)), {"output_0": None, "other": None},
         "the mapping names \\['other'\\] and misses \\['output_1'\\]"),
        (OnnxExport(example=(a, b)), [None, "softmax"], "loss for output 'output_1': 'softmax' "
                                                        "is not a Loss"),
        (OnnxExport(Shape(4), input_names=["a", "b"]), None,
         "a module with several inputs needs example="),
        (OnnxExport(example=(a, b), input_names=["a"]), None, "1 names for 2 inputs"),
        (OnnxExport(example=(a, b), output_names=["a"]), None, "1 names for 2 outputs"),
        (OnnxExport(), None, "give shape= \\(one example's shape\\) or example="),
        (OnnxExport(Shape(3), example=a), None, "the example has shape \\(5, 4\\)"),
    ]
    for exporter, loss, fragment in cases:
        with pytest.raises(ExportRefused, match=fragment):
            exporter.to_bytes(module if exporter.example is not None or exporter.input_names
                              else Flat(), loss)


@pytest.mark.parametrize("result, fragment", [
    (lambda h: (h, (h, h)), "output 'output_1' is a tuple: forward may return a tensor, or a "
                            "tuple or dict of tensors \\(nested one level at most\\)"),
    (lambda h: {"a": h, "b": 3}, "output 'b' is a int"),
    (lambda h: "text", "forward returned str"),
])
def test_outputs_a_graph_cannot_name_are_refused(result, fragment):
    class Odd(Module):
        def forward(self, x):
            return result(x * 2.0)

    with pytest.raises(ExportRefused, match=fragment):
        OnnxExport(Shape(4)).to_bytes(Odd(), None)


def test_a_stack_takes_none_of_the_traced_options():
    network = Sequential().dense(2).lower(Shape(4), RandomStream(1))
    with pytest.raises(ExportRefused, match="example, axis_names: for modules written as code"):
        OnnxExport(Shape(4), example=normal(3, 4), axis_names={0: "batch"}).to_bytes(
            network, MeanSquaredError())
