"""The spatial functions for networks written as code give the layers' numbers."""

from __future__ import annotations

import numpy as np
import pytest

from deepsharp import Module, RandomStream, Sequential, Shape, functional as F
from deepsharp.errors import OpError, SpecError
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
            t = F.pad(t, (0, 0, 0, 2, 1, 0), mode="replicate")  # PyTorch's order: last axis first
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


# -- PyTorch's F.pad, F.layer_norm and F.rms_norm, as a PyTorch user writes them ------------------
@pytest.mark.parametrize("pad, mode, widths", [
    ((1, 2), "constant", [(0, 0), (0, 0), (1, 2)]),             # the last axis: (left, right)
    ((0, 0, 2, 1), "reflect", [(0, 0), (2, 1), (0, 0)]),        # then the one before it
    ((1, 0, 2, 1, 1, 1), "replicate", [(1, 1), (2, 1), (1, 0)]),
    ((0, 1), "edge", [(0, 0), (0, 0), (0, 1)])])
def test_pad_takes_pytorchs_pairs_from_the_last_axis(pad, mode, widths):
    """Held to numpy's pad with the widths per axis written out (numpy's edge and reflect are
    PyTorch's replicate and reflect)."""
    x = np.random.default_rng(0).standard_normal((3, 4, 5)).astype(np.float32)
    numpy_mode = {"replicate": "edge"}.get(mode, mode)
    np.testing.assert_array_equal(F.pad(Tensor(x), pad, mode=mode)._data,
                                  np.pad(x, widths, mode=numpy_mode))
    filled = F.pad(Tensor(x), (1, 1), value=2.5)._data
    assert filled[..., 0].tolist() == np.full((3, 4), 2.5).tolist()


@pytest.mark.parametrize("call, message", [
    (lambda x: F.pad(x, (1,)), r"pairs for at most the 3 axes .* received 1 numbers"),
    (lambda x: F.pad(x, (1,) * 8), r"at most the 3 axes"),
    (lambda x: F.pad(x, (-1, 0)), r"negative widths \(which crop in PyTorch\)"),
    (lambda x: F.pad(x, (1, 1), mode="circular"), r"PyTorch's 'circular' is not supported"),
    (lambda x: F.pad(x, (1, 1), mode="reflect", value=1.0), r"a value pads only in mode"),
    (lambda x: F.layer_norm(x, (4, 5)), r"normalized_shape must be the last axis, \(5,\)"),
    (lambda x: F.layer_norm(x), r"give weight, bias \(or PyTorch's normalized_shape"),
    (lambda x: F.layer_norm(x, "ones", "zeros"), r"layer_norm: weight must be a tensor, "
                                                 r"received 'ones'"),
    (lambda x: F.layer_norm(x, (5.0,)), r"layer_norm: normalized_shape must be integers")])
def test_pad_and_norm_refusals_name_the_difference(call, message):
    with pytest.raises(SpecError, match=message):
        call(Tensor(np.zeros((3, 4, 5), np.float32)))


@pytest.mark.parametrize("call, message", [
    (lambda x: F.pad(x, (1, 1), value="a"), r"pad: value must be a number, received 'a'"),
    (lambda x: F.layer_norm(x, (5,), eps="x"), r"layer_norm: eps must be a number"),
    (lambda x: F.rms_norm(x, (5,), eps=[1e-6]), r"rms_norm: eps must be a number")])
def test_pad_and_norm_numbers_are_checked(call, message):
    with pytest.raises(OpError, match=message):
        call(Tensor(np.zeros((3, 4, 5), np.float32)))


def test_layer_and_rms_norm_take_pytorchs_normalized_shape():
    """F.layer_norm(x, (C,), weight=None, bias=None, eps=1e-5) and F.rms_norm(x, (C,),
    weight=None, eps=None): no weight is ones, no bias zeros, and rms_norm's eps defaults to the
    machine epsilon of x's type, as in PyTorch; the library's own forms are as before."""
    generator = np.random.default_rng(1)
    x = generator.standard_normal((2, 3, 5)).astype(np.float32)
    w, b = (generator.standard_normal(5).astype(np.float32) for _ in range(2))
    mean, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
    normed = (x - mean) / np.sqrt(var + 1e-5)
    np.testing.assert_allclose(F.layer_norm(Tensor(x), (5,))._data, normed, atol=1e-6)
    np.testing.assert_allclose(F.layer_norm(Tensor(x), [5], Tensor(w), Tensor(b))._data,
                               normed * w + b, atol=1e-5)
    np.testing.assert_array_equal(F.layer_norm(Tensor(x), 5, weight=Tensor(w), bias=Tensor(b))._data,
                                  F.layer_norm(Tensor(x), Tensor(w), Tensor(b))._data)
    tiny = float(np.finfo(np.float32).eps)
    rms = np.sqrt((x.astype(np.float64) ** 2).mean(-1, keepdims=True) + tiny)
    np.testing.assert_allclose(F.rms_norm(Tensor(x), (5,), Tensor(w))._data, x / rms * w,
                               rtol=1e-5)
    rms_ours = np.sqrt((x.astype(np.float64) ** 2).mean(-1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(F.rms_norm(Tensor(x), Tensor(w))._data, x / rms_ours * w, rtol=1e-5)
