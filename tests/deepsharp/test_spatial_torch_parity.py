"""The spatial layers against PyTorch's answers, fixed in tests/fixtures/spatial_torch.npz by
scripts/make_spatial_fixtures.py (PyTorch's weights turned into ours by `layout`)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from deepsharp import RandomStream, Sequential, Shape
from deepsharp.tensors import Tensor
from layout import torch_to_conv_kernel, torch_to_conv_transpose_kernel

FIXTURE = np.load(Path(__file__).resolve().parents[1] / "fixtures" / "spatial_torch.npz")

CONV = torch_to_conv_kernel
TRANSPOSE = torch_to_conv_transpose_kernel

CASES = {
    "conv1d": (Sequential().conv1d(4, 3, padding=2, dilation=2), CONV),
    "conv1d_causal": (Sequential().conv1d(2, 3, dilation=2, padding="causal"), CONV),
    "conv2d": (Sequential().conv2d(6, (3, 2), stride=2, padding=1, groups=2), CONV),
    "conv2d_same": (Sequential().conv2d(5, 4, padding="same", bias=False), CONV),
    "conv3d": (Sequential().conv3d(3, (2, 3, 2), stride=(1, 2, 1), padding=(1, 0, 1)), CONV),
    "conv_transpose1d": (Sequential().conv_transpose1d(2, 3, stride=3, dilation=2, padding=1,
                                                       output_padding=2), TRANSPOSE),
    "conv_transpose2d": (Sequential().conv_transpose2d(4, 3, stride=2, padding=1,
                                                       output_padding=1), TRANSPOSE),
    "conv_transpose3d": (Sequential().conv_transpose3d(3, (2, 3, 2), stride=(1, 2, 2),
                                                       padding=(0, 1, 0)), TRANSPOSE),
    "max_pool2d": (Sequential().max_pool2d(3, stride=2, padding=1), None),
    "max_pool3d": (Sequential().max_pool3d((2, 2, 3), stride=(1, 2, 2), padding=(1, 0, 1)), None),
    "avg_pool1d": (Sequential().avg_pool1d(4, stride=2, padding=2), None),
    "max_pool1d": (Sequential().max_pool1d(2, stride=1, dilation=3), None),
    "avg_pool2d": (Sequential().avg_pool2d(3, stride=2, padding=1), None),
    "avg_pool2d_including": (Sequential().avg_pool2d(3, stride=2, padding=1,
                                                     count_include_pad=True), None),
    "avg_pool3d": (Sequential().avg_pool3d(2), None),
    "max_pool2d_ceil": (Sequential().max_pool2d(2, stride=2, padding=1, ceil_mode=True), None),
    "avg_pool2d_ceil": (Sequential().avg_pool2d(3, stride=2, padding=1, ceil_mode=True), None),
    "avg_pool2d_ceil_including": (Sequential().avg_pool2d(2, ceil_mode=True,
                                                           count_include_pad=True), None),
    "max_pool1d_ceil": (Sequential().max_pool1d(3, stride=3, ceil_mode=True), None),
    "adaptive_avg_pool2d": (Sequential().adaptive_avg_pool((3, 4)), None),
    "adaptive_max_pool2d": (Sequential().adaptive_max_pool((3, 4)), None),
    "adaptive_avg_pool1d": (Sequential().adaptive_avg_pool(4), None),
    "upsample_nearest": (Sequential().upsample(scale=2), None),
    "upsample_nearest_size": (Sequential().upsample(size=(7, 9)), None),
    "upsample_bilinear": (Sequential().upsample(size=(7, 9), mode="bilinear"), None),
    "upsample_bilinear_corners": (Sequential().upsample(scale=3, mode="bilinear",
                                                        align_corners=True), None),
    "pad_reflect": (Sequential().pad(((3, 0), (1, 2)), mode="reflect"), None),
    "pad_edge": (Sequential().pad(((0, 3), (2, 1)), mode="edge"), None),
    "layer_norm": (Sequential().layer_norm(), None),
    "rms_norm": (Sequential().rms_norm(), None),
    "group_norm": (Sequential().group_norm(3), None),
    "instance_norm": (Sequential().instance_norm(), None),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_layer_gives_pytorchs_numbers(name):
    spec, kernel_layout = CASES[name]
    x = FIXTURE[f"{name}/x"]
    network = spec.lower(Shape(*x.shape[1:]), RandomStream(0))
    state = {}
    for key in ("weight", "bias"):
        if f"{name}/{key}" in FIXTURE:
            value = FIXTURE[f"{name}/{key}"]
            state[f"0.{key}"] = kernel_layout(value) if key == "weight" and kernel_layout else value
    network.load_state_dict(state)
    expected = FIXTURE[f"{name}/y"]
    got = network(x)
    assert got.shape == expected.shape
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=2e-5)


def test_batch_norm_trains_and_evaluates_as_pytorch():
    """Two training steps (batch statistics; running statistics updated with the unbiased
    variance and momentum 0.1), then evaluation by the running statistics."""
    network = Sequential().batch_norm().lower(Shape(5, 3, 3), RandomStream(0))
    network.load_state_dict({"0.weight": np.array([0.5, 1.5, -1.0], np.float32),
                             "0.bias": np.array([0.1, -0.2, 0.3], np.float32),
                             "0.running_mean": np.zeros(3, np.float32),
                             "0.running_var": np.ones(3, np.float32)})
    network.train()
    for step in range(2):
        y = network.forward(Tensor(FIXTURE[f"batch_norm/x{step}"]))
        np.testing.assert_allclose(y._data, FIXTURE[f"batch_norm/y{step}"], rtol=1e-5, atol=1e-5)
    state = network.state_dict()
    for key in ("running_mean", "running_var"):
        np.testing.assert_allclose(state[f"0.{key}"], FIXTURE[f"batch_norm/{key}"], rtol=1e-6,
                                   atol=1e-6)
    np.testing.assert_allclose(network(FIXTURE["batch_norm/x_eval"]), FIXTURE["batch_norm/y_eval"],
                               rtol=1e-5, atol=1e-5)
