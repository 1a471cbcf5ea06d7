"""dense and the activations: hand-computed values, gradients, export parity, round trip."""

from __future__ import annotations

import math

import numpy as np
import pytest

from deepsharp import BinaryCrossEntropy, CrossEntropy, RandomStream, Sequential, Shape
from deepsharp.errors import ShapeError, SpecError
from tests.support import check_layer


def test_dense_hand_computed():
    network = Sequential().dense(2).lower(Shape(3), RandomStream(0))
    network.load_state_dict({"0.weight": np.array([[1, 2], [3, 4], [5, 6]], np.float32),
                             "0.bias": np.array([0.5, -1], np.float32)})
    out = network(np.array([[1, 0, -1], [2, 1, 0]], np.float32))
    np.testing.assert_array_equal(out, [[1 - 5 + 0.5, 2 - 6 - 1], [2 + 3 + 0.5, 4 + 4 - 1]])


def test_dense_initialisation_follows_pytorch_bounds():
    network = Sequential().dense(400).lower(Shape(25), RandomStream(3))
    w, b = network.state_dict()["0.weight"], network.state_dict()["0.bias"]
    assert w.shape == (25, 400) and b.shape == (400,)
    bound = 1 / math.sqrt(25)
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.98 * bound
    assert abs(w.std() - bound / math.sqrt(3)) < 0.01  # uniform(-b, b) has std b/sqrt(3)
    assert np.abs(b).max() <= bound


def test_initial_values_do_not_depend_on_other_layers():
    a = Sequential().dense(4).relu().dense(3).lower(Shape(5), RandomStream(9))
    b = Sequential().dense(4).relu().dense(3).dense(2).lower(Shape(5), RandomStream(9))
    np.testing.assert_array_equal(a.state_dict()["2.weight"], b.state_dict()["2.weight"])


@pytest.mark.parametrize("spec", [
    Sequential().dense(6).relu().dense(3),
    Sequential().dense(5, bias=False).tanh(),
    Sequential().dense(5).sigmoid(),
    Sequential().dense(5).gelu(),
    Sequential().dense(5).gelu(approximate="tanh"),
    Sequential().dense(5).silu(),
    Sequential().dense(5).elu(alpha=0.7),
    Sequential().dense(5).leaky_relu(slope=0.2),
    Sequential().dense(5).softplus(),
    Sequential().dense(5).hardtanh(-0.5, 0.8),
    Sequential().dense(5).relu6(),
    Sequential().dense(5).mish(),
    Sequential().dense(5).hard_sigmoid(),
    Sequential().dense(5).hard_swish(),
    Sequential().dense(5).prelu(),
    Sequential().dense(5).softplus(beta=2.0, threshold=0.5),
    Sequential().dense(5).softplus(beta=0.5, threshold=None),
    Sequential().dense(5).prelu(per_channel=True, init=-0.3),
    Sequential().dense(5).dropout(0.3).dense(2),
], ids=str)
def test_dense_stack_everywhere(spec):
    check_layer(spec, Shape(4), batch_sizes=(1, 7, 64))


def test_softmax_layer_with_mean_squared_error():
    report = check_layer(Sequential().dense(4).softmax(), Shape(3))
    assert report.count("Softmax") == 1


def test_lifted_sigmoid_is_written_once():
    report = check_layer(Sequential().dense(3).relu().dense(1).sigmoid(), Shape(4),
                         loss=BinaryCrossEntropy())
    assert report.count("Sigmoid") == 1
    assert len(report.imported.steps) == 3  # the sigmoid lives in the loss now


def test_lifted_softmax_with_cross_entropy():
    report = check_layer(Sequential().dense(5).relu().dense(3).softmax(), Shape(4),
                         loss=CrossEntropy())
    assert report.count("Softmax") == 1


def test_dense_on_a_series_applies_to_every_step():
    check_layer(Sequential().dense(3).relu(), Shape(6, 4), lengths=(1, 11))


@pytest.mark.parametrize("call, message", [
    (lambda: Sequential().dense(0), "dense: units must be greater than 0, received 0"),
    (lambda: Sequential().dense(-3), "dense: units must be greater than 0, received -3"),
    (lambda: Sequential().dense("many"), "dense: units must be an integer, received 'many' (str)"),
    (lambda: Sequential().dropout(1.0), "dropout: rate must be less than 1, received 1.0"),
    (lambda: Sequential().gelu(approximate="fast"), "gelu: approximate must be 'none' or 'tanh'"),
    (lambda: Sequential().elu(alpha=0), "elu: alpha must be greater than 0, received 0"),
    (lambda: Sequential().leaky_relu(slope=-1), "leaky_relu: slope must be greater than or equal to 0"),
    (lambda: Sequential().dense(2, True, 5), "dense: too many positional arguments"),
])
def test_verbs_refuse_bad_arguments(call, message):
    with pytest.raises(SpecError) as caught:
        call()
    assert message in str(caught.value)


def test_lowering_refuses_a_shape_naming_verb_place_and_shape():
    with pytest.raises(ShapeError) as caught:
        Sequential().relu().dense(3).lower(Shape(), RandomStream(0))
    assert "dense(3) at place 1 cannot take an input of shape scalar" in str(caught.value)


X_HARD = np.array([[-7, -3, -2.5, -1, 0, 0.5, 1, 3, 4.5, 6, 8]], np.float32)


@pytest.mark.parametrize("spec, values, slopes", [
    # values by hand; the gradients PyTorch 2.13's rules give (checked there, at these points)
    (Sequential().hardtanh(), [-1, -1, -1, -1, 0, 0.5, 1, 1, 1, 1, 1],
     [0, 0, 0, 0, 1, 1, 0, 0, 0, 0, 0]),
    (Sequential().hardtanh(-3, 4.5), [-3, -3, -2.5, -1, 0, 0.5, 1, 3, 4.5, 4.5, 4.5],
     [0, 0, 1, 1, 1, 1, 1, 1, 0, 0, 0]),
    (Sequential().relu6(), [0, 0, 0, 0, 0, 0.5, 1, 3, 4.5, 6, 6],
     [0, 0, 0, 0, 0, 1, 1, 1, 1, 0, 0]),
    (Sequential().hard_sigmoid(), [0, 0, 0.5 / 6, 2 / 6, 0.5, 3.5 / 6, 4 / 6, 1, 1, 1, 1],
     [0, 0, 1 / 6, 1 / 6, 1 / 6, 1 / 6, 1 / 6, 0, 0, 0, 0]),
    (Sequential().hard_swish(), [0, 0, -2.5 * 0.5 / 6, -2 / 6, 0, 0.5 * 3.5 / 6, 4 / 6, 3, 4.5,
                                 6, 8],
     [0, 0, -2.5 / 3 + 0.5, -1 / 3 + 0.5, 0.5, 0.5 / 3 + 0.5, 1 / 3 + 0.5, 1, 1, 1, 1]),
], ids=lambda v: str(v) if isinstance(v, Sequential) else "")
def test_hard_activations_by_hand_at_their_kinks(spec, values, slopes):
    from deepsharp.tensors import Tensor

    network = spec.lower(Shape(X_HARD.shape[1]), RandomStream(0))
    np.testing.assert_allclose(network(X_HARD), [values], rtol=1e-6, atol=1e-7)
    x = Tensor(X_HARD, requires_grad=True)
    network.steps[0].forward(x).sum().backward()
    np.testing.assert_allclose(x.grad, [slopes], rtol=1e-6, atol=1e-7)


def test_mish_by_hand():
    x = np.array([[-30, -1, 0, 1, 30]], np.float32)
    soft = np.log1p(np.exp(x.astype(np.float64)))
    expected = x * np.tanh(soft)  # 1 * tanh(log(1 + e)) = 0.865098...
    out = Sequential().mish().lower(Shape(5), RandomStream(0))(x)
    np.testing.assert_allclose(out, expected, rtol=1e-6, atol=1e-12)
    assert abs(float(out[0, 3]) - 0.8650984) < 1e-6


@pytest.mark.parametrize("call, message", [
    (lambda: Sequential().hardtanh(1, 0), "hardtanh: arguments low must be below high"),
    (lambda: Sequential().hardtanh(0, 0), "low must be below high, both finite, received low=0.0"),
    (lambda: Sequential().hardtanh(0, float("inf")), "both finite"),
])
def test_hardtanh_refuses_bounds_out_of_order(call, message):
    with pytest.raises(SpecError, match=message.replace("(", "\\(")):
        call()


def test_prelu_by_hand_and_its_slots():
    network = Sequential().prelu(per_channel=True).lower(Shape(3), RandomStream(0))
    np.testing.assert_array_equal(network.state_dict()["0.weight"], [0.25, 0.25, 0.25])
    network.load_state_dict({"0.weight": np.array([0.5, -1.0, 0.0], np.float32)})
    x = np.array([[-2, -2, -2], [3, 0, 1]], np.float32)
    np.testing.assert_array_equal(network(x), [[-1, 2, 0], [3, 0, 1]])
    shared = Sequential().prelu(init=0.1).lower(Shape(2, 3), RandomStream(0))
    assert shared.state_dict()["0.weight"].shape == (1,)


def test_prelu_function_refuses_a_weight_off_axis_one():
    from deepsharp import functional as F
    from deepsharp.errors import OpError
    from deepsharp.tensors import Tensor

    x = Tensor(np.zeros((2, 3, 4), np.float32))
    with pytest.raises(OpError, match="prelu: weight must hold one value or one per channel of "
                                      "axis 1 \\(3\\), received shape \\(4,\\)"):
        F.prelu(x, Tensor(np.ones(4, np.float32)))


def test_softplus_at_a_beta_and_threshold_is_pytorchs_formula():
    from deepsharp import functional as F
    from deepsharp.tensors import Tensor

    x = np.array([[-3, -0.5, 0, 0.4, 1, 2.5]], np.float32)
    network = Sequential().softplus(beta=2.0, threshold=1.0).lower(Shape(6), RandomStream(0))
    expected = np.where(2 * x > 1, x, np.log1p(np.exp(2 * x.astype(np.float64))) / 2)
    np.testing.assert_allclose(network(x), expected, rtol=1e-6)
    np.testing.assert_array_equal(network(x), F.softplus(Tensor(x), 2.0, 1.0)._data)
    assert Sequential().softplus(threshold=25.0).lower(Shape(6)).steps[0].__class__.__name__ \
        == "ActivationStep"  # beta 1 at 20 or more: the primitive alone
    with pytest.raises(SpecError, match="beta"):
        Sequential().softplus(beta=0.0)


@pytest.mark.parametrize("call, message", [
    (lambda F, x: F.hardtanh(x, 1.0, 0.0), "hardtanh: min_val must be below max_val, received "
                                            "min_val=1.0, max_val=0.0"),
    (lambda F, x: F.hardtanh(x, "a"), "hardtanh: min_val must be a number, received 'a'"),
    (lambda F, x: F.relu(x, inplace="yes"), "relu: inplace must be True or False, received 'yes'"),
    (lambda F, x: F.mish(x.long()), "mish: needs a floating-point tensor"),
    (lambda F, x: F.leaky_relu(x, 0.2, slope=0.1), "give negative_slope"),
])
def test_activation_functions_refuse_bad_arguments_by_name(call, message):
    from deepsharp import functional as F
    from deepsharp.errors import OpError
    from deepsharp.tensors import Tensor

    with pytest.raises(OpError, match=message):
        call(F, Tensor(np.zeros(3, np.float32)))


def test_in_place_activations_write_into_the_tensor_with_the_functions_gradient():
    from deepsharp import functional as F
    from deepsharp.tensors import Tensor

    leaf = Tensor(np.array([-1.0, 0.5, 7.0], np.float32), requires_grad=True)
    x = leaf * 1.0
    y = F.relu6(x, inplace=True)
    assert y is x
    np.testing.assert_array_equal(x.numpy(), [0.0, 0.5, 6.0])
    y.sum().backward()
    np.testing.assert_array_equal(leaf.grad, [0.0, 1.0, 0.0])
    array = np.array([-1.0, 7.0], np.float32)  # F takes an array as a tensor sharing it, so the
    F.relu6(array, inplace=True)               # write reaches it, as Tensor(array).relu_() does
    np.testing.assert_array_equal(array, [0.0, 6.0])
