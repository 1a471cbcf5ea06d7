"""What the exported graphs of spatial networks are made of: the turns between channels-last and
channels-first, the flatten before a dense layer, the operator set chosen, and the refusals."""

from __future__ import annotations

import numpy as np
import onnx
import pytest

from deepsharp import CrossEntropy, MeanSquaredError, RandomStream, Sequential, Shape
from deepsharp_export_onnx import ExportRefused, OnnxExport
from tests.support import check_layer

CNN = (Sequential().conv2d(4, 3).relu().max_pool2d(2).conv2d(6, 3).relu().max_pool2d(2)
       .flatten().dense(8).relu().dense(3))


def ops(model: onnx.ModelProto) -> list[str]:
    return [node.op_type for node in model.graph.node]


def test_a_conv_net_turns_once_and_permutes_the_dense_rows():
    """One Transpose where the image enters the spatial part; the flatten before the dense layer
    needs none, its kernel's rows are in ONNX's channel-by-channel order instead."""
    report = check_layer(CNN, Shape(14, 14, 1), loss=CrossEntropy())
    assert report.count("Transpose") == 1
    assert ops(report.model)[:2] == ["Transpose", "Conv"]
    assert "Flatten" in ops(report.model)
    assert report.opset == 9  # Flatten's set; Conv 1, MaxPool 8, Relu 6, MatMul 1, Add 7


def test_consecutive_spatial_steps_share_one_turn_in_and_one_out():
    spec = (Sequential().conv2d(4, 3, padding="same").batch_norm().relu().max_pool2d(2)
            .pad(1, mode="reflect").conv_transpose2d(3, 2, stride=2).upsample(scale=2)
            .avg_pool2d(2).group_norm(3).instance_norm().conv2d(2, 1))
    report = check_layer(spec, Shape(8, 8, 2))
    names = ops(report.model)
    assert names.count("Transpose") == 2
    assert names[0] == "Transpose" and names[-1] == "Transpose"


def test_a_channels_last_layer_between_spatial_steps_is_turned_round():
    """A layer norm normalises the channels of each place: the last axis, so the image is turned
    channels-last for it and back for the next convolution."""
    report = check_layer(Sequential().conv2d(3, 3).layer_norm().conv2d(2, 2), Shape(6, 6, 2))
    assert report.count("Transpose") == 4  # in, before and after the norm, out


def test_a_network_ending_in_a_flattened_image_flattens_it_channels_last():
    report = check_layer(Sequential().conv2d(2, 3).relu().flatten(), Shape(5, 5, 1))
    names = ops(report.model)
    assert names[-2:] == ["Transpose", "Flatten"]
    assert names.count("Transpose") == 2


def test_global_pooling_leaves_the_spatial_part_without_a_turn():
    report = check_layer(Sequential().conv2d(3, 3).relu().global_avg_pool().dense(2),
                         Shape(6, 6, 1))
    assert report.count("Transpose") == 1 and report.count("ReduceMean") == 1


@pytest.mark.parametrize("spec, shape, opset", [
    (Sequential().dense(4).relu().dense(1), Shape(3), 7),
    (Sequential().conv2d(3, 3).relu().avg_pool2d(2).global_avg_pool().dense(2), Shape(6, 6, 1), 7),
    (Sequential().conv2d(3, 3).relu().max_pool2d(2).global_max_pool().dense(2), Shape(6, 6, 1), 8),
    (CNN, Shape(14, 14, 1), 9),
    (Sequential().conv1d(3, 3, padding="causal").relu().max_pool1d(2).global_avg_pool().dense(1),
     Shape(8, 2), 8),
    (Sequential().conv2d(3, 3).max_pool2d(2, stride=1, dilation=2), Shape(7, 7, 1), 10),
    (Sequential().conv2d(3, 3).pad(1).upsample(scale=2), Shape(6, 6, 1), 11),
    (Sequential().conv2d(3, 3).batch_norm().relu(), Shape(6, 6, 1), 14),
    (Sequential().conv2d(3, 3).layer_norm(), Shape(6, 6, 1), 17),
    (Sequential().conv2d(4, 3).group_norm(2), Shape(6, 6, 1), 21),
    (Sequential().conv2d(3, 3).rms_norm(), Shape(6, 6, 1), 23),
], ids=["dense", "conv-avg", "conv-max", "cnn", "series", "dilated-max", "upsample", "batch_norm",
        "layer_norm", "group_norm", "rms_norm"])
def test_the_oldest_operator_set_holding_every_node(spec, shape, opset):
    network = spec.lower(shape, RandomStream(0))
    model = OnnxExport(shape).to_model(network, MeanSquaredError())
    assert model.opset_import[0].version == opset
    assert model.ir_version == onnx.helper.find_min_ir_version_for(
        [onnx.helper.make_opsetid("", opset)])


def test_a_series_keeps_its_symbolic_length_through_the_spatial_part():
    report = check_layer(Sequential().conv1d(3, 3, padding="same").conv1d(2, 2, stride=2,
                                                                          padding="same"),
                         Shape(9, 2), lengths=(1, 2, 5, 20))
    dims = {v.name: [d.dim_param or d.dim_value for d in v.type.tensor_type.shape.dim]
            for v in report.model.graph.value_info}
    assert dims["0.conv1d"] == ["batch", 3, "steps"]  # "same" at stride 1 keeps the length
    assert dims["1.conv1d"] == ["batch", 2, "steps_1"]  # ceil(steps / 2): a name of its own


# -- refusals --------------------------------------------------------------------------------------
def refusal(spec: Sequential, shape: Shape, **options) -> str:
    network = spec.lower(shape, RandomStream(0))
    with pytest.raises(ExportRefused) as caught:
        OnnxExport(shape, **options).to_bytes(network, MeanSquaredError())
    return str(caught.value)


@pytest.mark.parametrize("spec", [
    Sequential().conv1d(2, 3, padding="same").adaptive_avg_pool(3).flatten().dense(1),
    Sequential().adaptive_max_pool(4),
    Sequential().upsample(size=12, mode="bilinear"),
    Sequential().upsample(size=5, mode="bilinear", align_corners=True),
    Sequential().upsample(size=11),
], ids=["adaptive_avg", "adaptive_max", "bilinear", "corners", "nearest"])
def test_a_series_of_free_length_is_pooled_or_resized_to_a_size_in_the_graph(spec):
    """The bins (the scale) depend on the length: the graph works them out from its Shape, so
    the series may have any length, shorter or longer than a bin count or size."""
    trainable = spec.lower(Shape(9, 2)).parameter_count() > 0
    report = check_layer(spec, Shape(9, 2), lengths=(1, 3, 4, 17, 30), train_again=trainable)
    assert report.count("Shape") == 1 and report.opset == 11


def test_max_opset_refuses_the_node_needing_a_newer_set():
    message = refusal(Sequential().conv2d(3, 3).rms_norm(), Shape(6, 6, 1), max_opset=17)
    assert ("step 1 (rms_norm): node '1.rms_norm' (RMSNormalization) needs operator set 23, above "
            "max_opset 17") in message


def test_training_only_spatial_dropout_writes_no_node():
    network = Sequential().conv2d(2, 3).spatial_dropout(0.5).lower(Shape(5, 5, 1), RandomStream(0))
    model = OnnxExport(Shape(5, 5, 1)).to_model(network, MeanSquaredError())
    assert "Dropout" not in ops(model) and len(model.graph.node) == 3
    x = np.ones((2, 5, 5, 1), np.float32)
    assert np.isfinite(network(x)).all()


def test_an_output_padding_runtime_refuses_is_refused_by_name():
    """PyTorch allows output_padding below the dilation; ONNX Runtime only below the stride."""
    network = (Sequential().conv_transpose1d(3, kernel=3, stride=1, dilation=2, output_padding=1)
               .lower(Shape(5, 2), RandomStream(0)))
    with pytest.raises(ExportRefused) as refused:
        OnnxExport(Shape(5, 2)).to_bytes(network, MeanSquaredError())
    assert "step 0 (conv_transpose1d(3, 3, output_padding=1, dilation=2)): output_padding (1,) " \
           "is not below the stride (1,)" in str(refused.value)
