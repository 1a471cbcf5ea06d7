"""Losses and activations against PyTorch (fixtures), answer checks, and lifting."""

from __future__ import annotations

import numpy as np
import pytest

from deepsharp import (
    BinaryCrossEntropy, CrossEntropy, MeanSquaredError, RandomStream, Sequential, Shape, Tensor,
)
from deepsharp import functional as F
from deepsharp.errors import TargetError
from deepsharp.tensors import float64
from tests.support.fixtures import torch_reference

LOSSES = {"mse": (MeanSquaredError(), "y"), "bce": (BinaryCrossEntropy(), "y"),
          "ce_ids": (CrossEntropy(), "ids"), "ce_shares": (CrossEntropy(), "shares")}


@pytest.mark.parametrize("name", list(LOSSES))
def test_loss_value_and_gradient_match_pytorch(name):
    ref = torch_reference()["losses"]
    loss, target_key = LOSSES[name]
    with float64():
        z = Tensor(np.array(ref["z"]), requires_grad=True)
        target = np.array(ref[target_key])
        value = loss(z, target)
        value.backward()
    assert float(value._data) == pytest.approx(ref[name]["value"], rel=1e-12)
    np.testing.assert_allclose(z.grad, ref[name]["grad"], rtol=1e-10, atol=1e-14)


def test_losses_are_stable_at_extreme_logits():
    z = Tensor(np.array([[1e4], [-1e4], [0.0]], np.float32), requires_grad=True)
    value = BinaryCrossEntropy()(z, np.array([[0.0], [1.0], [1.0]], np.float32))
    value.backward()
    assert np.isfinite(value._data) and value._data == pytest.approx((1e4 + 1e4 + np.log(2)) / 3)
    assert np.all(np.isfinite(z.grad))
    logits = Tensor(np.array([[1e4, -1e4, 0.0]], np.float32), requires_grad=True)
    ce = CrossEntropy()(logits, np.array([1]))
    ce.backward()
    assert ce._data == pytest.approx(2e4) and np.all(np.isfinite(logits.grad))


@pytest.mark.parametrize("name", ["relu", "sigmoid", "tanh", "gelu", "gelu_tanh", "silu", "elu_0.7",
                                  "leaky_relu_0.2", "softplus", "softmax"])
def test_activation_values_match_pytorch(name):
    ref = torch_reference()["activations"]
    fns = {"relu": F.relu, "sigmoid": F.sigmoid, "tanh": F.tanh, "gelu": F.gelu,
           "gelu_tanh": lambda t: F.gelu(t, "tanh"), "silu": F.silu,
           "elu_0.7": lambda t: F.elu(t, 0.7), "leaky_relu_0.2": lambda t: F.leaky_relu(t, 0.2),
           "softplus": F.softplus, "softmax": lambda t: F.softmax(t, 0)}
    with float64():
        got = fns[name](Tensor(np.array(ref["x"])))._data
    np.testing.assert_allclose(got, ref[name], rtol=1e-12, atol=1e-15)


def test_output_activations():
    z = np.array([[0.0, 1.0, -1.0]], np.float32)
    np.testing.assert_allclose(BinaryCrossEntropy().output(z), 1 / (1 + np.exp(-z)), rtol=1e-6)
    np.testing.assert_allclose(CrossEntropy().output(z), np.exp(z) / np.exp(z).sum(), rtol=1e-6)
    assert MeanSquaredError().output(z) is not None and np.array_equal(MeanSquaredError().output(z), z)


@pytest.mark.parametrize("loss, y, shape, message", [
    (BinaryCrossEntropy(), [0, 2], (2, 1), "answers must lie in [0, 1], received 2"),
    (BinaryCrossEntropy(), [[0, 1, 1]], (1, 1), "answers of shape (1, 3) do not match the network's output of shape (1, 1)"),
    (CrossEntropy(), [0, 3], (2, 3), "class id 3 is outside 0..2"),
    (CrossEntropy(), [[1, 0]], (1, 3), "do not match the network's output of shape (1, 3)"),
    (CrossEntropy(), [[0.5, 0.6, 0.0]], (1, 3), "sum to 1 per row, received a row summing to 1.1"),
    (MeanSquaredError(), [[np.nan]], (1, 1), "answers contain NaN or infinity"),
    (MeanSquaredError(), ["a"], (1, 1), "answers must be numbers"),
])
def test_answers_are_checked_against_the_loss(loss, y, shape, message):
    with pytest.raises(TargetError) as caught:
        loss.prepare(np.array(y), shape)
    assert message in str(caught.value)


def test_a_last_sigmoid_is_lifted_into_binary_cross_entropy():
    network = Sequential().dense(1).sigmoid().lower(Shape(3), RandomStream(0))
    x = np.random.default_rng(0).standard_normal((4, 3)).astype(np.float32)
    loss = BinaryCrossEntropy()
    assert network.lifted(loss) and not network.lifted(MeanSquaredError())
    logits = network.logits(Tensor(x), loss)._data
    np.testing.assert_allclose(network.predict(x, loss), 1 / (1 + np.exp(-logits)), rtol=1e-6)
    np.testing.assert_allclose(network.predict(x, loss), network(x), rtol=1e-6)  # applied once
