"""OnnxExport's arguments: features of the wrong length or a bare string, names that collide with
values inside the graph, wrong types: each an ExportRefused naming it, and no byte written."""

from __future__ import annotations

import io

import pytest

from deepsharp import BinaryCrossEntropy, CrossEntropy, RandomStream, Sequential, Shape
from deepsharp_export_onnx import ExportRefused, OnnxExport


def _network():
    return Sequential().dense(4).relu().dense(2).lower(Shape(3), RandomStream(0))


@pytest.mark.parametrize("options, message", [
    ({"features": "abc"}, "features must be a list of names, received 'abc'"),
    ({"features": ["a", "b"]}, "features names 2 values, but an example of shape 3 has 3"),
    ({"features": ["a", "b", 3]}, "features must be a list of names"),
    ({"max_opset": "13"}, "max_opset must be an integer or None, received '13'"),
    ({"max_opset": True}, "max_opset must be an integer or None, received True"),
    ({"output_name": ""}, "output_name must be a non-empty string, received ''"),
    ({"input_name": ""}, "input_name must be a non-empty string, received ''"),
])
def test_bad_arguments_are_refused_when_made(options, message):
    with pytest.raises(ExportRefused, match="OnnxExport: bad arguments") as caught:
        OnnxExport(Shape(3), **options)
    assert message in str(caught.value)


def test_a_shape_that_is_not_a_shape_is_refused():
    with pytest.raises(ExportRefused, match=r"shape must be a Shape, received \(3,\)"):
        OnnxExport((3,))


@pytest.mark.parametrize("options, message", [
    ({"output_name": "2.dense"}, "output name '2.dense' is already the name of a value inside "
                                 "the graph (written for 2 (dense))"),
    ({"output_name": "0.weight"}, "output name '0.weight' is already the name"),
    ({"input_name": "0.dense"}, "input name '0.dense' is also the name of a value inside the graph"),
    ({"input_name": "y", "output_name": "y"}, "the name 'y' is given to more than one graph input"),
])
def test_names_colliding_with_values_inside_the_graph_are_refused_and_nothing_is_written(options, message):
    stream = io.BytesIO()
    with pytest.raises(ExportRefused) as caught:
        OnnxExport(Shape(3), **options).write(_network(), CrossEntropy(), stream)
    assert message in str(caught.value)
    assert stream.getvalue() == b""


def test_names_that_collide_with_nothing_are_written():
    exporter = OnnxExport(Shape(3), features=("a", "b", "c"), input_name="x", output_name="p")
    model = exporter.to_model(_network(), BinaryCrossEntropy())
    assert model.graph.input[0].name == "x" and [o.name for o in model.graph.output] == ["p"]
