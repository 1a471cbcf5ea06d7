"""Reading spatial graphs back: graphs the exporter did not write that way are refused by node,
naming what was found and what the layers read."""

from __future__ import annotations

from typing import Callable

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper

from deepsharp import MeanSquaredError, RandomStream, Sequential, Shape
from deepsharp_export_onnx import ImportRefused, OnnxExport, OnnxFile


def exported(spec: Sequential, shape: Shape) -> onnx.ModelProto:
    network = spec.lower(shape, RandomStream(0))
    return OnnxExport(shape).to_model(network, MeanSquaredError())


def node(model: onnx.ModelProto, op_type: str) -> onnx.NodeProto:
    return next(n for n in model.graph.node if n.op_type == op_type)


def set_attr(model: onnx.ModelProto, op_type: str, name: str, value) -> None:
    target = node(model, op_type)
    for a in list(target.attribute):
        if a.name == name:
            target.attribute.remove(a)
    target.attribute.append(helper.make_attribute(name, value))


def set_constant(model: onnx.ModelProto, name: str, array: np.ndarray) -> None:
    for index, tensor in enumerate(model.graph.initializer):
        if tensor.name == name:
            model.graph.initializer[index].CopyFrom(numpy_helper.from_array(array, name))


def perm_of(model):
    set_attr(model, "Transpose", "perm", [0, 2, 1, 3])


def conv_reads_channels_last(model):
    """Drop the turn: the Conv then reads the graph's channels-last input."""
    turn = node(model, "Transpose")
    conv = node(model, "Conv")
    conv.input[0] = turn.input[0]
    model.graph.node.remove(turn)


def reshape_then_relu(model):
    """A Reshape of a channels-first value that is not an adaptive pool's row."""
    relu = node(model, "Relu")
    reshape = helper.make_node("Reshape", [relu.input[0], "odd_shape"], ["odd"], name="odd")
    model.graph.initializer.append(numpy_helper.from_array(np.array([0, 3, -1, 1], np.int64),
                                                           "odd_shape"))
    relu.input[0] = "odd"
    index = list(model.graph.node).index(relu)
    model.graph.node.insert(index, reshape)


def add_before_dense(model):
    """An Add of a row of constants between the Flatten and the dense layer's MatMul."""
    matmul = node(model, "MatMul")
    add = helper.make_node("Add", [matmul.input[0], "shift"], ["shifted"], name="shift")
    model.graph.initializer.append(numpy_helper.from_array(np.arange(50, dtype=np.float32),
                                                           "shift"))
    matmul.input[0] = "shifted"
    model.graph.node.insert(list(model.graph.node).index(matmul), add)


IMAGE = Shape(6, 6, 2)
CASES: list[tuple[str, Sequential, Shape, Callable, str]] = [
    ("resize-cubic", Sequential().upsample(scale=2), IMAGE,
     lambda m: set_attr(m, "Resize", "mode", "cubic"),
     "node '0.upsample' (Resize): mode 'cubic' with 'asymmetric' coordinates"),
    ("resize-down", Sequential().upsample(scale=2), IMAGE,
     lambda m: set_constant(m, "0.upsample/scales", np.array([1, 1, 0.5, 1], np.float32)),
     "scales [1.0, 1.0, 0.5, 1.0]: upsample scales the places only, up"),
    ("conv-same-lower", Sequential().conv2d(2, 3), IMAGE,
     lambda m: (set_attr(m, "Conv", "auto_pad", "SAME_LOWER"),
                node(m, "Conv").attribute.remove(
                    next(a for a in node(m, "Conv").attribute if a.name == "pads"))),
     "auto_pad 'SAME_LOWER': no padding of ours puts the extra place of an odd border first"),
    ("conv-channels-last", Sequential().conv2d(2, 3), IMAGE, conv_reads_channels_last,
     "node '0.conv2d' (Conv): its kernel reads 2 channels, the value 'input' (dims ['batch', 6, "
     "6, 2]) has 6 on its channel axis"),
    ("odd-transpose", Sequential().conv2d(2, 3), IMAGE, perm_of,
     "perm [0, 2, 1, 3] of a rank-4 channels_last value is not a turn between channels-last and "
     "channels-first"),
    ("conv-transpose-groups", Sequential().conv_transpose2d(2, 3), IMAGE,
     lambda m: set_attr(m, "ConvTranspose", "group", 2),
     "group != 1 and output_shape have no conv_transpose argument"),
    ("batch-norm-training", Sequential().batch_norm(), IMAGE,
     lambda m: set_attr(m, "BatchNormalization", "training_mode", 1),
     "training mode: a network's graph normalises by running statistics"),
    ("layer-norm-axis", Sequential().layer_norm(), IMAGE,
     lambda m: set_attr(m, "LayerNormalization", "axis", 1),
     "axis 1 of a rank-4 channels_last value: the layer normalises the channels"),
    ("flatten-axis", Sequential().flatten(), IMAGE,
     lambda m: set_attr(m, "Flatten", "axis", 2),
     "axis 2: flatten keeps the batch axis (axis 1)"),
    ("pad-channels", Sequential().dense(3).pad(1), Shape(5, 2),
     lambda m: set_attr(m, "Pad", "pads", [0, 1, 1, 0, 1, 1]),
     "pads [0, 1, 1, 0, 1, 1]: the pad layer pads the place axes [1] of a rank-3 channels_last "
     "value"),
    ("reshape-channels-first", Sequential().conv2d(3, 3).relu(), IMAGE, reshape_then_relu,
     "a Reshape of a channels-first value is read only as the row of places of an adaptive pool"),
    ("free-length-composition", Sequential().adaptive_avg_pool(3), Shape(8, 2),
     lambda m: set_constant(m, "0.adaptive_avg_pool/next_bins", np.array([1, 2, 4], np.int64)),
     "node '0.adaptive_avg_pool/shape' (Shape): the nodes named '0.adaptive_avg_pool' are not the "
     "composition the exporter writes for adaptive_avg_pool over a series' length"),
    ("flatten-then-add", Sequential().conv2d(2, 2).flatten().dense(3), IMAGE, add_before_dense,
     "node '1.flatten' (Flatten): its channel-by-channel row is read by node 'shift' (Add); the "
     "network's flatten holds the values place by place"),
    ("adaptive-bins", Sequential().adaptive_avg_pool((4, 5)), IMAGE,
     lambda m: set_constant(m, "0.adaptive_avg_pool/bins_matrix",
                            np.ones((36, 20), np.float32)),
     "its constant is not the bins of an adaptive pool of (6, 6) places to [4, 5]"),
]


@pytest.mark.parametrize("spec, shape, mutate, message", [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])
def test_unreadable_graphs_are_refused_by_node(spec, shape, mutate, message):
    model = exported(spec, shape)
    mutate(model)
    with pytest.raises(ImportRefused) as caught:
        OnnxFile(MeanSquaredError()).read(model)
    assert message in str(caught.value)


def test_a_graph_read_back_keeps_the_layer_it_was_written_for():
    """An adaptive pool whose bins are all as wide is written as a pool of that window, and read
    back as the adaptive pool (the node's name tells them apart)."""
    model = exported(Sequential().adaptive_max_pool(3).flatten().dense(2), IMAGE)
    assert [n.op_type for n in model.graph.node][:2] == ["Transpose", "MaxPool"]
    network = OnnxFile(MeanSquaredError()).read(model)
    assert network.spec.layers[0].kind == "adaptive_max_pool"
