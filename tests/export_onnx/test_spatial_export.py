"""Every spatial layer through `check_layer`: gradients, ONNX Runtime and the reference evaluator
(annotations checked) at batches 1, 5 and 32 and other series lengths, check_model, the round
trip with byte-identical re-export, and training again."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from deepsharp import MeanSquaredError, Sequential, Shape
from deepsharp_export_onnx import OnnxExport
from tests.support import assert_round_trip, check_layer, run_ort

IMAGE = Shape(6, 6, 2)
SERIES = Shape(7, 2)
VOLUME = Shape(3, 4, 4, 2)
LENGTHS = (1, 4, 12)

CASES = [
    # (id, spec, example shape, series lengths)
    ("conv2d", Sequential().conv2d(3, 3), IMAGE, ()),
    ("conv2d-same-stride-groups", Sequential().conv2d(4, 3, stride=2, padding="same", groups=2),
     IMAGE, ()),
    ("conv2d-pairs-dilation", Sequential().conv2d(3, (2, 3), padding=((0, 1), (1, 0)),
                                                  dilation=(2, 1), bias=False), IMAGE, ()),
    ("conv1d-causal", Sequential().conv1d(3, 3, padding="causal", dilation=2), SERIES, LENGTHS),
    ("conv1d-same-stride", Sequential().conv1d(4, 3, stride=2, padding="same"), SERIES, LENGTHS),
    ("conv1d-valid", Sequential().conv1d(3, 2), SERIES, (2, 4, 12)),
    ("conv3d", Sequential().conv3d(2, 2, padding=1), VOLUME, ()),
    ("conv_transpose2d", Sequential().conv_transpose2d(3, 3, stride=2, padding=1,
                                                       output_padding=1), IMAGE, ()),
    ("conv_transpose1d-same", Sequential().conv_transpose1d(2, 3, stride=2, padding="same"),
     SERIES, LENGTHS),
    ("conv_transpose3d", Sequential().conv_transpose3d(2, 2, stride=2), VOLUME, ()),
    ("max_pool2d", Sequential().max_pool2d(2), IMAGE, ()),
    ("max_pool2d-padded", Sequential().max_pool2d(3, stride=2, padding=1), IMAGE, ()),
    ("max_pool2d-dilated", Sequential().max_pool2d(2, stride=1, dilation=2), IMAGE, ()),
    ("max_pool1d-same", Sequential().max_pool1d(2, padding="same"), SERIES, LENGTHS),
    ("max_pool3d", Sequential().max_pool3d(2), VOLUME, ()),
    ("avg_pool2d", Sequential().avg_pool2d(3, stride=2, padding=1), IMAGE, ()),
    ("avg_pool2d-including", Sequential().avg_pool2d(3, stride=2, padding=1,
                                                     count_include_pad=True), IMAGE, ()),
    ("avg_pool1d-same", Sequential().avg_pool1d(3, stride=2, padding="same"), SERIES, LENGTHS),
    # ceil_mode (6 -> 3 and 6 -> 4 places where floor gives 2 and 3); over a series' free length
    ("max_pool2d-ceil", Sequential().max_pool2d(3, stride=2, ceil_mode=True), IMAGE, ()),
    ("max_pool2d-ceil-stride-1", Sequential().max_pool2d(3, stride=1, padding=1, ceil_mode=True),
     IMAGE, ()),  # (written without ceil_mode: the count is the same)
    ("avg_pool2d-ceil-including", Sequential().avg_pool2d(3, stride=2, padding=1, ceil_mode=True,
                                                          count_include_pad=True), IMAGE, ()),
    ("max_pool1d-ceil-series", Sequential().max_pool1d(3, stride=2, padding=1, ceil_mode=True),
     SERIES, LENGTHS),
    ("avg_pool1d-ceil-series", Sequential().avg_pool1d(2, padding=1, ceil_mode=True), SERIES,
     LENGTHS),
    ("avg_pool3d", Sequential().avg_pool3d(2), VOLUME, ()),
    ("global_avg_pool", Sequential().conv2d(3, 3).global_avg_pool(), IMAGE, ()),
    ("prelu-per-channel", Sequential().conv2d(4, 3).prelu(per_channel=True).conv2d(2, 1)
     .prelu(), IMAGE, ()),
    ("squeeze-and-excitation", Sequential().conv2d(4, 3, padding="same").hard_swish().gate(
        Sequential().global_avg_pool(keep_axes=True).conv2d(2, 1).relu().conv2d(4, 1)
        .hard_sigmoid()).conv2d(3, 1).relu6(), IMAGE, ()),
    ("global_max_pool-keep", Sequential().global_max_pool(keep_axes=True), IMAGE, ()),
    ("global_avg_pool-series", Sequential().global_avg_pool(), SERIES, LENGTHS),
    ("adaptive_avg_pool-equal", Sequential().adaptive_avg_pool((2, 3)), IMAGE, ()),
    ("adaptive_avg_pool-unequal", Sequential().adaptive_avg_pool((4, 5)), IMAGE, ()),
    ("adaptive_max_pool-equal", Sequential().adaptive_max_pool(3), IMAGE, ()),
    ("adaptive_max_pool-unequal", Sequential().adaptive_max_pool((4, 3)), IMAGE, ()),
    ("adaptive_max_pool3d-unequal", Sequential().adaptive_max_pool((2, 3, 3)), VOLUME, ()),
    ("pad-constant", Sequential().pad(1, value=0.5), IMAGE, ()),
    ("pad-reflect", Sequential().pad(((1, 0), (0, 2)), mode="reflect"), IMAGE, ()),
    ("pad-edge-series", Sequential().pad(2, mode="edge"), SERIES, LENGTHS),
    ("pad-after-dense", Sequential().dense(3).pad(((1, 2),)), SERIES, LENGTHS),
    ("upsample-nearest", Sequential().upsample(scale=2), IMAGE, ()),
    ("upsample-bilinear-size", Sequential().upsample(size=(9, 8), mode="bilinear"), IMAGE, ()),
    ("upsample-bilinear-corners", Sequential().upsample(scale=(2, 3), mode="bilinear",
                                                        align_corners=True), IMAGE, ()),
    ("upsample-size-multiple", Sequential().upsample(size=12), IMAGE, ()),
    ("upsample-series", Sequential().upsample(scale=3, mode="bilinear"), SERIES, LENGTHS),
    ("flatten-dense", Sequential().conv2d(3, 3).flatten().relu().dense(4), IMAGE, ()),
    ("flatten-ends", Sequential().conv2d(2, 3).flatten(), IMAGE, ()),
    ("flatten-silu-dropout-dense", Sequential().conv2d(2, 3).flatten().silu().dropout(0.2)
     .dense(3), IMAGE, ()),
    ("flatten-softmax-dense", Sequential().max_pool2d(2).flatten().softmax().dense(3), IMAGE, ()),
    ("reshape", Sequential().flatten().dense(12).reshape(Shape(2, 3, 2)).conv2d(2, 2), IMAGE, ()),
    ("layer_norm-image", Sequential().conv2d(3, 3).layer_norm().conv2d(2, 2), IMAGE, ()),
    ("layer_norm-series", Sequential().layer_norm(eps=1e-3), SERIES, LENGTHS),
    ("rms_norm-image", Sequential().conv2d(3, 3).rms_norm(), IMAGE, ()),
    ("rms_norm-row", Sequential().dense(4).rms_norm(eps=1e-6), Shape(3), ()),
    ("batch_norm-image", Sequential().conv2d(3, 3).batch_norm(momentum=0.3), IMAGE, ()),
    ("batch_norm-series", Sequential().batch_norm(), SERIES, LENGTHS),
    ("batch_norm-rows", Sequential().dense(4).batch_norm(eps=1e-3).relu(), Shape(3), ()),
    ("group_norm", Sequential().conv2d(4, 3).group_norm(2), IMAGE, ()),
    # onnx's inference gives GroupNormalization no shape: the importer carries its input's on
    # (found by scripts/fuzz_numbers.py: the flatten after it was refused)
    ("group_norm-flatten-dense", Sequential().conv2d(4, 3).group_norm(2).flatten().dense(3),
     IMAGE, ()),
    ("instance_norm-series", Sequential().conv1d(3, 2, padding="same").instance_norm(), SERIES,
     LENGTHS),
    ("spatial_dropout", Sequential().conv2d(3, 3).spatial_dropout(0.3).max_pool2d(2), IMAGE, ()),
]


@pytest.mark.parametrize("spec, shape, lengths", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_layer_everywhere(spec, shape, lengths):
    trainable = spec.lower(shape).parameter_count() > 0  # a pool alone has nothing to train
    check_layer(spec, shape, lengths=lengths, train_again=trainable)


@pytest.mark.parametrize("spec", [Sequential().global_avg_pool(),
                                  Sequential().dense(4).global_avg_pool(keep_axes=True)],
                         ids=["dropped", "kept"])
def test_a_global_mean_over_a_series_of_no_steps_is_nan_in_the_graph_as_in_the_network(spec):
    """ONNX Runtime's ReduceMean over an empty axis gives 0, numpy's mean NaN (0 / 0): over a
    series' free length the writer divides the sum by the count read from the shape, and the
    importer reads that back as the global pool."""
    network = spec.lower(SERIES)
    data = OnnxExport(SERIES).to_bytes(network, MeanSquaredError())
    empty = np.zeros((2, 0, SERIES[-1]), np.float32)
    with np.errstate(invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        expected = network.predict(empty, MeanSquaredError())
    assert np.isnan(expected).all()
    assert np.isnan(run_ort(data, empty)).all()
    series = np.random.default_rng(0).standard_normal((3, 7, SERIES[-1])).astype(np.float32)
    assert_round_trip(data, network, MeanSquaredError(), series)
