"""The normalising pass: each form a graph may take reads as the one form its reader knows, and
the graph computes the same numbers after it (checked in ONNX Runtime)."""

from __future__ import annotations

import math

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from deepsharp import BinaryCrossEntropy, MeanSquaredError
from deepsharp_export_onnx import OnnxFile
from deepsharp_export_onnx.read.normalise import normalise
from tests.support.foreign import run_graph

RNG = np.random.default_rng(4)
W = RNG.standard_normal((3, 2)).astype(np.float32)
B = RNG.standard_normal(2).astype(np.float32)


def graph(nodes, initializers=(), opset=13, out_dims=("batch", 2), in_dims=("batch", 3),
          outputs=None) -> onnx.ModelProto:
    g = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(in_dims))],
        outputs or [helper.make_tensor_value_info("y", TensorProto.FLOAT, list(out_dims))],
        initializer=[numpy_helper.from_array(a, n) for n, a in initializers])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)


def constant(name: str, **form) -> onnx.NodeProto:
    return helper.make_node("Constant", [], [name], name=name, **form)


def reads_as(model: onnx.ModelProto, expected: str, loss=MeanSquaredError()):
    onnx.checker.check_model(model)
    network = OnnxFile(loss).read(model)
    assert str(network.spec) == expected
    x = RNG.standard_normal((4, *[d for d in _dims(model.graph.input[0])[1:]])).astype(np.float32)
    np.testing.assert_allclose(network.predict(x, loss), run_graph(model, x), rtol=0, atol=1e-5)
    return network


def _dims(info):
    return [d.dim_value or 1 for d in info.type.tensor_type.shape.dim]


def test_constants_in_every_attribute_form():
    sparse = helper.make_sparse_tensor(
        numpy_helper.from_array(W.reshape(-1)), numpy_helper.from_array(np.arange(6, dtype=np.int64)),
        [3, 2])
    nodes = [constant("w", sparse_value=sparse), constant("b", value_floats=B.tolist()),
             constant("shape", value_ints=[-1, 2]), constant("half", value_float=0.5),
             constant("one", value_int=1), constant("t", value=numpy_helper.from_array(W)),
             helper.make_node("MatMul", ["x", "w"], ["h"], name="dense"),
             helper.make_node("Add", ["h", "b"], ["z"], name="bias"),
             helper.make_node("Reshape", ["z", "shape"], ["y0"], name="same_shape"),
             helper.make_node("Cast", ["one"], ["one_float"], to=TensorProto.FLOAT),
             helper.make_node("Mul", ["half", "one_float"], ["scale"]),
             helper.make_node("LeakyRelu", ["y0"], ["y"], alpha=0.1)]
    reads_as(graph(nodes), "Sequential().dense(2).leaky_relu(slope=0.1)")


def test_no_ops_are_dropped():
    nodes = [helper.make_node("Identity", ["x"], ["a"]),
             helper.make_node("Cast", ["a"], ["b"], to=TensorProto.FLOAT),
             helper.make_node("MatMul", ["b", "w"], ["c"]),
             helper.make_node("Dropout", ["c", "ratio", "training"], ["d", "mask"]),
             helper.make_node("Transpose", ["d"], ["e"], perm=[0, 1]),
             helper.make_node("Tanh", ["e"], ["y"])]
    inits = [("w", W), ("ratio", np.array(0.3, np.float32)), ("training", np.array(False))]
    reads_as(graph(nodes, inits), "Sequential().dense(2, bias=False).tanh()")


def test_a_dropout_in_training_form_is_not_a_no_op():
    nodes = [helper.make_node("MatMul", ["x", "w"], ["c"]),
             helper.make_node("Dropout", ["c", "ratio", "training"], ["y"], name="drop")]
    inits = [("w", W), ("ratio", np.array(0.3, np.float32)), ("training", np.array(True))]
    with pytest.raises(Exception, match="node 'drop' \\(Dropout\\): no reader for op type Dropout"):
        OnnxFile(MeanSquaredError()).read(graph(nodes, inits))


@pytest.mark.parametrize("form", ["torchscript", "dynamo", "scaled-by-reciprocal-root"])
def test_decomposed_gelu_is_one_node(form):
    root, half, one = (np.array(v, np.float32) for v in (math.sqrt(2.0), 0.5, 1.0))
    inits = [("w", W), ("root", root), ("half", half), ("one", one),
             ("inverse", np.array(1 / math.sqrt(2.0), np.float32))]
    scaled = (helper.make_node("Mul", ["h", "inverse"], ["s"]) if form.startswith("scaled")
              else helper.make_node("Div", ["h", "root"], ["s"]))
    nodes = [helper.make_node("MatMul", ["x", "w"], ["h"]), scaled,
             helper.make_node("Erf", ["s"], ["e"]), helper.make_node("Add", ["e", "one"], ["p"])]
    if form == "dynamo":
        nodes += [helper.make_node("Mul", ["half", "p"], ["q"]),
                  helper.make_node("Mul", ["h", "q"], ["y"])]
    else:
        nodes += [helper.make_node("Mul", ["h", "p"], ["q"]),
                  helper.make_node("Mul", ["q", "half"], ["y"])]
    reads_as(graph(nodes, inits), "Sequential().dense(2, bias=False).gelu()")


@pytest.mark.parametrize("square", ["Pow", "Mul"])
def test_decomposed_layer_norm_is_one_node(square):
    inits = [("w", W), ("two", np.array(2.0, np.float32)), ("eps", np.array(1e-5, np.float32)),
             ("scale", (B + 1).astype(np.float32)), ("shift", B)]
    squared = (helper.make_node("Pow", ["d", "two"], ["d2"]) if square == "Pow"
               else helper.make_node("Mul", ["d", "d"], ["d2"]))
    nodes = [helper.make_node("MatMul", ["x", "w"], ["h"]),
             helper.make_node("ReduceMean", ["h"], ["m"], axes=[-1]),
             helper.make_node("Sub", ["h", "m"], ["d"]), squared,
             helper.make_node("ReduceMean", ["d2"], ["v"], axes=[-1]),
             helper.make_node("Add", ["v", "eps"], ["ve"]), helper.make_node("Sqrt", ["ve"], ["s"]),
             helper.make_node("Div", ["d", "s"], ["n"]), helper.make_node("Mul", ["n", "scale"], ["a"]),
             helper.make_node("Add", ["a", "shift"], ["y"])]
    reads_as(graph(nodes, inits), "Sequential().dense(2, bias=False).layer_norm()")


def test_a_flatten_computed_from_the_shape():
    """x.view(x.size(0), -1) after a global pool: Shape, Gather, Unsqueeze, Concat, Reshape."""
    kernel = RNG.standard_normal((4, 2, 3, 3)).astype(np.float32)
    nodes = [helper.make_node("Conv", ["x", "k"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("GlobalAveragePool", ["c"], ["p"]),
             helper.make_node("Shape", ["p"], ["s"]),
             helper.make_node("Gather", ["s", "zero"], ["n"], axis=0),
             helper.make_node("Unsqueeze", ["n", "axes"], ["n1"]),
             helper.make_node("Concat", ["n1", "rest"], ["shape"], axis=0),
             helper.make_node("Reshape", ["p", "shape"], ["f"]),
             helper.make_node("Gemm", ["f", "w", "b"], ["y"], transB=1)]
    inits = [("k", kernel), ("zero", np.array(0, np.int64)), ("axes", np.array([0], np.int64)),
             ("rest", np.array([-1], np.int64)),
             ("w", RNG.standard_normal((2, 4)).astype(np.float32)), ("b", B)]
    model = graph(nodes, inits, in_dims=("batch", 2, 5, 5))
    reads_as(model, "Sequential().from_channels_first().conv2d(4, 3, padding=1, bias=False)"
                    ".global_avg_pool(keep_axes=True).flatten().dense(2)")


def test_the_output_read_is_chosen():
    nodes = [helper.make_node("MatMul", ["x", "w"], ["z"]),
             helper.make_node("Sigmoid", ["z"], ["probability"]),
             helper.make_node("Greater", ["probability", "half"], ["label"])]
    outputs = [helper.make_tensor_value_info("label", TensorProto.BOOL, ["batch", 2]),
               helper.make_tensor_value_info("probability", TensorProto.FLOAT, ["batch", 2])]
    model = graph(nodes, [("w", W), ("half", np.array(0.5, np.float32))], outputs=outputs)
    with pytest.raises(Exception, match="the graph has 2 outputs \\['label', 'probability'\\]: "
                                        "choose the one to read, OnnxFile\\(loss, "
                                        "output='probability'\\)"):
        OnnxFile(BinaryCrossEntropy()).read(model)
    with pytest.raises(Exception, match="output='proba': the graph's outputs are"):
        OnnxFile(BinaryCrossEntropy(), output="proba").read(model)
    network = OnnxFile(BinaryCrossEntropy(), output="probability").read(model)
    assert str(network.spec) == "Sequential().dense(2, bias=False)"  # the Sigmoid is the loss's


def test_normalising_keeps_the_numbers_of_every_pytorch_fixture():
    """The normalised graph of each foreign fixture answers as the graph did (ONNX Runtime; the
    fused nodes evaluated at opset 20, where Gelu exists)."""
    from tests.support.foreign import FOREIGN, Foreign

    for name in ("layer_norm.ts13", "cnn_view.ts17", "lstm2.dynamo18", "encoder.ts17",
                 "attention_fast.dynamo18", "crnn.ts17", "cnn_groupnorm.ts13"):
        case = Foreign.load(name)
        normalised = normalise(case.model)
        _at_opset(normalised, 20)
        np.testing.assert_allclose(run_graph(normalised, case.x), run_graph(case.model, case.x),
                                   rtol=0, atol=1e-5)
    assert FOREIGN.exists()


def _at_opset(model: onnx.ModelProto, opset: int) -> None:
    """Axes as inputs wherever an older form had them as attributes, for the newer set."""
    for node in model.graph.node:
        axes = next((a for a in node.attribute if a.name == "axes"), None)
        if axes is not None and node.op_type in ("ReduceMean", "ReduceMax", "Squeeze", "Unsqueeze"):
            name = f"{node.name or node.output[0]}/axes_input"
            model.graph.initializer.append(numpy_helper.from_array(np.array(axes.ints, np.int64), name))
            node.attribute.remove(axes)
            node.input.append(name)
    del model.opset_import[:]
    model.opset_import.append(helper.make_opsetid("", opset))
    model.ir_version = 9


def _shape(name: str, start: int, end: int) -> onnx.NodeProto:
    return helper.make_node("Shape", ["x"], [name], start=start, end=end)


@pytest.mark.parametrize("turned", [True, False])
def test_a_turn_of_the_last_two_axes_written_through_three_dimensions(turned):
    """torch.export writes k.transpose(-2, -1) of (batch, heads, steps, width) as Reshape to
    [-1, steps, width], Transpose [0, 2, 1], Reshape to [batch, heads, width, steps]: one
    Transpose. Reshaping back in the first order is a reinterpretation, left as it is."""
    last = [_shape("bh", 0, 2), _shape("w", 3, 4), _shape("t", 2, 3)]
    back = ["bh", "w", "t"] if turned else ["bh", "t", "w"]
    nodes = [_shape("tw", 2, 4), helper.make_node("Concat", ["minus", "tw"], ["into"], axis=0),
             helper.make_node("Reshape", ["x", "into"], ["flat"]),
             helper.make_node("Transpose", ["flat"], ["turned"], perm=[0, 2, 1]), *last,
             helper.make_node("Concat", back, ["back"], axis=0),
             helper.make_node("Reshape", ["turned", "back"], ["r"]),
             helper.make_node("Tanh", ["r"], ["y"])]
    out = ("batch", 2, 4, "steps") if turned else ("batch", 2, "steps", 4)
    model = graph(nodes, [("minus", np.array([-1], np.int64))], opset=18,
                  in_dims=("batch", 2, "steps", 4), out_dims=out)
    normalised = normalise(model)
    ops = [(n.op_type, [list(a.ints) for a in n.attribute]) for n in normalised.graph.node]
    if turned:
        assert ops == [("Transpose", [[0, 1, 3, 2]]), ("Tanh", [])]
    else:
        assert [op for op, _ in ops].count("Reshape") == 2
    for size in ((1, 2, 3, 4), (3, 2, 5, 4)):
        x = RNG.standard_normal(size).astype(np.float32)
        np.testing.assert_allclose(run_graph(normalised, x), run_graph(model, x), rtol=0, atol=0)


def test_a_shape_is_read_after_the_projection_that_keeps_its_axes():
    """Shape(x) of (batch, steps) reads x's projection (MatMul by a constant, Add of a bias)
    instead, where a reader starting at the projection finds it; Shape(x) of the last axis,
    which the MatMul changes, stays on x. The Reshape the shapes make (allowzero=1, its entries
    copies of axes) becomes a constant one."""
    from deepsharp_export_onnx.read.normalise import annotate
    from deepsharp_export_onnx.read.normalise.graph import Graph
    from deepsharp_export_onnx.read.normalise.shapes import late_shapes, resolve_reshapes

    nodes = [_shape("bt", 0, 2), helper.make_node("Squeeze", ["width", "zero"], ["w0"]),
             helper.make_node("MatMul", ["x", "w"], ["h"]), helper.make_node("Add", ["h", "b"], ["z"]),
             helper.make_node("Concat", ["bt", "two"], ["shape"], axis=0),
             helper.make_node("Reshape", ["z", "shape"], ["y"], allowzero=1), _shape("width", 2, 3)]
    ints = TensorProto.INT64
    outputs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", "steps", 2]),
               helper.make_tensor_value_info("w0", ints, [])]
    inits = [("w", W), ("b", B), ("two", np.array([2], np.int64)), ("zero", np.array([0], np.int64))]
    model = graph(nodes, inits, opset=18, in_dims=("batch", "steps", 3), outputs=outputs)
    g = Graph(model, outputs)
    annotate(g)
    assert late_shapes(g) and resolve_reshapes(g)
    shapes = {n.output[0]: n.input[0] for n in g.nodes if n.op_type == "Shape"}
    assert shapes == {"bt": "z", "width": "x"}
    reshape = next(n for n in g.nodes if n.op_type == "Reshape")
    assert g.constant(reshape.input[1]).tolist() == [0, 0, 2]
    g.prune()
    after = g.to_model()
    onnx.checker.check_model(after)
    assert sorted(n.op_type for n in after.graph.node) == ["Add", "MatMul", "Reshape", "Shape",
                                                           "Squeeze"]
    for size in ((1, 1, 3), (4, 5, 3)):
        x = RNG.standard_normal(size).astype(np.float32)
        for ours, theirs in zip(_every_output(after, x), _every_output(model, x)):
            np.testing.assert_array_equal(ours, theirs)


def _every_output(model: onnx.ModelProto, x: np.ndarray) -> list[np.ndarray]:
    import onnxruntime as ort

    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, {"x": x})


def test_a_computed_shape_reads_its_sizes_off_the_nearest_value_holding_them():
    """torch.export reads the batch and the steps once, at the input, for every later reshape;
    such a Reshape (not made constant: the value it reshapes has folded both into one axis)
    reads them off the nearest value it is computed from that holds them."""
    kernel = RNG.standard_normal((3, 4)).astype(np.float32)
    nodes = [_shape("bt", 0, 2), helper.make_node("Relu", ["x"], ["h"]),
             helper.make_node("MatMul", ["h", "k"], ["z"]),
             helper.make_node("Reshape", ["z", "rows"], ["r"]),
             helper.make_node("Tanh", ["r"], ["t"]),
             helper.make_node("Concat", ["bt", "four"], ["back"], axis=0),
             helper.make_node("Reshape", ["t", "back"], ["y"])]
    inits = [("k", kernel), ("rows", np.array([-1, 4], np.int64)), ("four", np.array([4], np.int64))]
    model = graph(nodes, inits, opset=18, in_dims=("batch", "steps", 3),
                  out_dims=("batch", "steps", 4))
    normalised = normalise(model)
    assert [n.input[0] for n in normalised.graph.node if n.op_type == "Shape"] == ["z"]
    assert [n.op_type for n in normalised.graph.node if "x" in n.input] == ["Relu"]
    for size in ((1, 2, 3), (4, 5, 3)):
        x = RNG.standard_normal(size).astype(np.float32)
        np.testing.assert_array_equal(run_graph(normalised, x), run_graph(model, x))


def test_a_causal_mask_of_fixed_steps_is_folded():
    """TorchScript's causal mask at a fixed length: Expand of 1 to (T, T), Trilu, Equal 0,
    Where -inf: one constant, exactly."""
    nodes = [helper.make_node("Expand", ["one", "square"], ["ones"]),
             helper.make_node("Trilu", ["ones"], ["lower"], upper=0),
             helper.make_node("Equal", ["lower", "zero"], ["above"]),
             helper.make_node("Where", ["above", "minus_inf", "zero"], ["mask"]),
             helper.make_node("Add", ["x", "mask"], ["y"])]
    inits = [("one", np.array(1.0, np.float32)), ("square", np.array([3, 3], np.int64)),
             ("zero", np.array([0.0], np.float32)), ("minus_inf", np.array([-np.inf], np.float32))]
    model = graph(nodes, inits, opset=18, in_dims=("batch", 3, 3), out_dims=("batch", 3, 3))
    normalised = normalise(model)
    assert [n.op_type for n in normalised.graph.node] == ["Add"]
    x = RNG.standard_normal((2, 3, 3)).astype(np.float32)
    np.testing.assert_array_equal(run_graph(normalised, x), run_graph(model, x))
    assert np.isneginf(run_graph(normalised, x)[:, 0, 1:]).all()


@pytest.mark.parametrize("threshold", [20.0, 10.0])
def test_softplus_with_pytorchs_threshold(threshold):
    """torch.export writes nn.Softplus() as Where(Greater(x, 20), x, Softplus(x)): in float32
    that is Softplus(x) exactly (above 20 log(1 + e^x) rounds to x). At threshold 10 it is not
    (x + 4.5e-5 near 10): the layer keeps its threshold."""
    nodes = [helper.make_node("MatMul", ["x", "w"], ["h"]),
             helper.make_node("Softplus", ["h"], ["s"]),
             helper.make_node("Greater", ["h", "t"], ["big"], name="big"),
             helper.make_node("Where", ["big", "h", "s"], ["y"], name="pick")]
    model = graph(nodes, [("w", W * 30), ("t", np.array(threshold, np.float32))])
    expected = "softplus()" if threshold >= 20 else "softplus(threshold=10.0)"
    network = reads_as(model, f"Sequential().dense(2, bias=False).{expected}")
    assert [n.op_type for n in normalise(model).graph.node].count("Where") == (threshold < 20)
    assert network is not None
