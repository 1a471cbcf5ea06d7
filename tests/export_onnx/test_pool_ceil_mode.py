"""Pools with ceil_mode against ONNX Runtime over a grid of sizes: every place count 3..11,
windows of 2 and 3, strides 1..3, every padding PyTorch allows, the average with and without
its padding counted. The eager pools are held to PyTorch 2.13 (tests/fixtures/spatial_torch.npz
and finite differences); here the graph's MaxPool/AveragePool with ceil_mode=1, as the layers
write it, gives the same numbers and the same number of windows, the last one dropped where it
would start in the end padding."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from deepsharp import MeanSquaredError, RandomStream, Sequential, Shape
from deepsharp_export_onnx import OnnxExport
from tests.support.onnx_check import run_ort

GRID = [(n, k, s, p) for n, k, s in itertools.product(range(3, 12), (2, 3), (1, 2, 3))
        for p in range(k // 2 + 1)]


@pytest.mark.parametrize("kind", ["max", "avg", "avg-including"])
def test_ceil_mode_pools_answer_as_runtime_over_a_grid_of_sizes(kind):
    rng = np.random.default_rng(5)
    wrong = []
    for n, k, s, p in GRID:
        if kind == "max":
            spec = Sequential().max_pool2d(k, stride=s, padding=p, ceil_mode=True)
        else:
            spec = Sequential().avg_pool2d(k, stride=s, padding=p, ceil_mode=True,
                                           count_include_pad=kind == "avg-including")
        network = spec.lower(Shape(n, n + 1, 2), RandomStream(0))
        x = rng.standard_normal((2, n, n + 1, 2)).astype(np.float32)
        expected = network.predict(x, MeanSquaredError())
        got = run_ort(OnnxExport(network.input_shape).to_bytes(network, MeanSquaredError()), x)
        if got.shape != expected.shape or not np.allclose(got, expected, rtol=0, atol=1e-6):
            wrong.append((n, k, s, p, got.shape, expected.shape))
    assert wrong == []
