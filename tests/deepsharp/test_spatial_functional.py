"""The spatial functions for networks written as code give the layers' numbers."""

from __future__ import annotations

import numpy as np

from deepsharp import Module, RandomStream, Sequential, Shape, functional as F
from deepsharp.tensors import Tensor


def test_functions_match_the_layers():
    generator = np.random.default_rng(0)
    x = generator.standard_normal((2, 7, 6, 4)).astype(np.float32)
    spec = (Sequential().conv2d(6, 3, stride=2, padding="same", groups=2).max_pool2d(2, padding=1)
            .conv_transpose2d(3, 2, stride=2, padding=1).avg_pool2d(3, stride=1, padding=1)
            .pad(((1, 0), (0, 2)), mode="edge").upsample(size=(9, 9), mode="bilinear")
            .adaptive_avg_pool((4, 3)).adaptive_max_pool(2).layer_norm().rms_norm().group_norm(3)
            .batch_norm())
    network = spec.lower(Shape(7, 6, 4), RandomStream(0))
    network.eval()
    s = network.steps

    class Written(Module):
        def forward(self, t):
            t = F.conv(t, s[0].weight, s[0].bias, stride=2, padding="same", groups=2)
            t = F.max_pool(t, 2, padding=1)
            t = F.conv_transpose(t, s[2].weight, s[2].bias, stride=2, padding=1)
            t = F.avg_pool(t, 3, stride=1, padding=1)
            t = F.pad(t, (0, 1, 0, 0, 0, 0, 2, 0), mode="edge")
            t = F.interpolate(t, size=(9, 9), mode="bilinear")
            t = F.adaptive_max_pool(F.adaptive_avg_pool(t, (4, 3)), 2)
            t = F.rms_norm(F.layer_norm(t, s[8].weight, s[8].bias), s[9].weight)
            t = F.group_norm(t, 3, s[10].weight, s[10].bias)
            return F.batch_norm(t, s[11].running_mean, s[11].running_var, s[11].weight, s[11].bias)

    np.testing.assert_allclose(Written()(Tensor(x))._data, network(x), rtol=1e-6, atol=1e-6)


def test_batch_norm_function_updates_the_running_statistics_in_training():
    x = Tensor(np.array([[1.0], [3.0]], np.float32))
    mean, var = Tensor(np.zeros(1, np.float32)), Tensor(np.ones(1, np.float32))
    one, zero = Tensor(np.ones(1, np.float32)), Tensor(np.zeros(1, np.float32))
    y = F.batch_norm(x, mean, var, one, zero, training=True, eps=1e-12)
    np.testing.assert_allclose(y._data[:, 0], [-1, 1], rtol=1e-6)
    np.testing.assert_allclose([mean._data[0], var._data[0]], [0.2, 1.1], rtol=1e-6)
