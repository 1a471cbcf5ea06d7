"""The activations read from the forms exporters write: Clip (attributes before set 11, inputs
from it) as hardtanh, relu6 or relu; HardSigmoid with PyTorch's constants; the refusals by name."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from deepsharp import MeanSquaredError
from deepsharp_export_onnx.errors import ImportRefused
from deepsharp_export_onnx import OnnxFile
from tests.support.foreign import run_graph

RNG = np.random.default_rng(11)
W = (RNG.standard_normal((3, 4)) * 4).astype(np.float32)


def graph(last: list, inits=(), opset: int = 13):
    nodes = [helper.make_node("MatMul", ["x", "w"], ["h"], name="dense"), *last]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 3])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 4])],
                          initializer=[numpy_helper.from_array(W, "w"),
                                       *[numpy_helper.from_array(np.array(v, np.float32), k)
                                         for k, v in inits]])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)


def reads_as(model, expected: str) -> None:
    network = OnnxFile(MeanSquaredError()).read(model)
    assert str(network.spec) == expected
    for n in (1, 5):
        x = RNG.standard_normal((n, 3)).astype(np.float32)
        np.testing.assert_allclose(network.predict(x, MeanSquaredError()), run_graph(model, x),
                                   rtol=0, atol=1e-6)


@pytest.mark.parametrize("opset", [10, 13])
@pytest.mark.parametrize("low, high, expected", [
    (0.0, 6.0, "relu6()"), (-0.5, 2.0, "hardtanh(low=-0.5, high=2.0)"), (0.0, None, "relu()"),
])
def test_a_clip_by_constants(opset, low, high, expected):
    if opset < 11:
        attrs = {"min": low, **({} if high is None else {"max": high})}
        clip, inits = helper.make_node("Clip", ["h"], ["y"], name="clip", **attrs), []
    else:
        bounds = ["low"] + ([] if high is None else ["high"])
        clip = helper.make_node("Clip", ["h", *bounds], ["y"], name="clip")
        inits = [("low", low)] + ([] if high is None else [("high", high)])
    reads_as(graph([clip], inits, opset), f"Sequential().dense(4, bias=False).{expected}")


@pytest.mark.parametrize("bounds, inits, message", [
    (["", "high"], [("high", 1.0)], "a Clip to \\[None, 1.0\\]: hardtanh takes two finite bounds"),
    (["low"], [("low", 0.5)], "a Clip to \\[0.5, None\\]"),
    (["low", "high"], [("low", 1.0), ("high", -1.0)], "a Clip to \\[1.0, -1.0\\]"),
    (["low", "high"], [("low", [0.0, 1.0]), ("high", 2.0)], "its bound \\(input 1\\) must be one "
                                                             "number, received shape \\(2,\\)"),
])
def test_a_clip_no_layer_computes_is_refused_by_name(bounds, inits, message):
    model = graph([helper.make_node("Clip", ["h", *bounds], ["y"], name="clip")], inits)
    with pytest.raises(ImportRefused, match=f"node 'clip' \\(Clip\\): {message}"):
        OnnxFile(MeanSquaredError()).read(model)


def test_a_clip_by_a_computed_bound_is_refused_by_name():
    nodes = [helper.make_node("ReduceMax", ["h"], ["top"], keepdims=0, axes=[0, 1], name="top"),
             helper.make_node("Clip", ["h", "low", "top"], ["y"], name="clip")]
    with pytest.raises(ImportRefused, match="node 'clip' \\(Clip\\): its max \\(input 2\\) must "
                                             "be a constant"):
        OnnxFile(MeanSquaredError()).read(graph(nodes, [("low", 0.0)]))


def test_hard_sigmoid_with_pytorchs_constants_and_not_keras_twos():
    ours = helper.make_node("HardSigmoid", ["h"], ["y"], name="gate", alpha=1 / 6)
    reads_as(graph([ours]), "Sequential().dense(4, bias=False).hard_sigmoid()")
    keras2 = helper.make_node("HardSigmoid", ["h"], ["y"], name="gate")
    with pytest.raises(ImportRefused, match="node 'gate' \\(HardSigmoid\\): HardSigmoid with "
                                             "alpha 0.2 and beta 0.5: hard_sigmoid is PyTorch's"):
        OnnxFile(MeanSquaredError()).read(graph([keras2]))


def test_mish_and_hard_swish_as_one_node_and_as_their_products():
    reads_as(graph([helper.make_node("Mish", ["h"], ["y"])], opset=18),
             "Sequential().dense(4, bias=False).mish()")
    reads_as(graph([helper.make_node("HardSwish", ["h"], ["y"])], opset=14),
             "Sequential().dense(4, bias=False).hard_swish()")
    gate = [helper.make_node("HardSigmoid", ["h"], ["g"], alpha=1 / 6),
            helper.make_node("Mul", ["g", "h"], ["y"])]
    reads_as(graph(gate), "Sequential().dense(4, bias=False).hard_swish()")
    soft = [helper.make_node("Softplus", ["h"], ["s"]), helper.make_node("Tanh", ["s"], ["t"]),
            helper.make_node("Mul", ["h", "t"], ["y"])]
    reads_as(graph(soft), "Sequential().dense(4, bias=False).mish()")


@pytest.mark.parametrize("slope, expected", [
    ([0.2], "prelu()"), ([0.1, -0.2, 0.3, 0.4], "prelu(per_channel=True)"),
    ([[0.1, -0.2, 0.3, 0.4]], "prelu(per_channel=True)"),
])
def test_a_prelu_by_a_constant_slope(slope, expected):
    model = graph([helper.make_node("PRelu", ["h", "s"], ["y"], name="p")], [("s", slope)])
    reads_as(model, f"Sequential().dense(4, bias=False).{expected}")


@pytest.mark.parametrize("slope, message", [
    ([[0.1], [0.2], [0.3], [0.4]], "a slope of shape \\(4, 1\\): prelu takes one value or one per "
                                   "channel, along axis 1 of this rank-2 value"),
    ([0.1, 0.2], "2 slopes for 4 channels"),
])
def test_a_prelu_slope_off_the_channels_is_refused_by_name(slope, message):
    model = graph([helper.make_node("PRelu", ["h", "s"], ["y"], name="p")], [("s", slope)])
    with pytest.raises(ImportRefused, match=f"node 'p' \\(PRelu\\): {message}"):
        OnnxFile(MeanSquaredError()).read(model)


def test_softplus_at_another_beta_and_threshold():
    """nn.Softplus(beta=2, threshold=10) as torch.export writes it, and nn.Softplus(beta=0.5) as
    TorchScript writes it (without its threshold)."""
    nodes = [helper.make_node("Mul", ["h", "beta"], ["scaled"]),
             helper.make_node("Softplus", ["scaled"], ["soft"]),
             helper.make_node("Div", ["soft", "beta"], ["back"]),
             helper.make_node("Greater", ["scaled", "limit"], ["big"]),
             helper.make_node("Where", ["big", "h", "back"], ["y"], name="pick")]
    reads_as(graph(nodes, [("beta", 2.0), ("limit", 10.0)]),
             "Sequential().dense(4, bias=False).softplus(beta=2.0, threshold=10.0)")
    scripted = [*nodes[:2], helper.make_node("Div", ["soft", "beta"], ["y"])]
    reads_as(graph(scripted, [("beta", 0.5)]),
             "Sequential().dense(4, bias=False).softplus(beta=0.5, threshold=None)")
    by_two = [nodes[0], nodes[1], helper.make_node("Div", ["soft", "two"], ["y"], name="d")]
    with pytest.raises(ImportRefused, match="node 'd' \\(Div\\): no reader for op type Div"):
        OnnxFile(MeanSquaredError()).read(graph(by_two, [("beta", 0.5), ("two", 2.0)]))
