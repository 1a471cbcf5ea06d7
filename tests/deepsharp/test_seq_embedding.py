"""embedding, periodic_embedding, sine_positions, masking, gaussian_noise: values by hand,
the padding row, the mask, training-only behaviour, refusals."""

from __future__ import annotations

import math

import numpy as np
import pytest

from deepsharp import MeanSquaredError, RandomStream, SGD, Sequential, Shape
from deepsharp.errors import OpError, ShapeError, SpecError
from deepsharp.layers.base import Flow
from deepsharp.run import running
from deepsharp.tensors import Tensor, apply


def test_embedding_looks_rows_up_by_hand():
    network = Sequential().embedding(4, 2).lower(Shape(3))
    table = np.array([[0, 0], [1, 2], [3, 4], [5, 6]], np.float32)
    network.load_state_dict({"0.weight": table})
    np.testing.assert_array_equal(network(np.array([[3, 1, 1], [0, 2, 3]])),
                                  [[[5, 6], [1, 2], [1, 2]], [[0, 0], [3, 4], [5, 6]]])


def test_embedding_takes_series_of_any_length():
    network = Sequential().embedding(10, 3).lower(Shape(4))
    assert network(np.zeros((2, 9), np.int64)).shape == (2, 9, 3)


def test_padding_row_starts_at_zero_gets_no_gradient_and_makes_the_mask():
    network = Sequential().embedding(6, 3, padding_index=2).lower(Shape(4), RandomStream(1))
    weight = network.steps[0].weight
    np.testing.assert_array_equal(weight._data[2], 0)
    assert np.abs(weight._data).sum() > 0
    ids = np.array([[1, 2, 5, 2], [2, 2, 2, 2]])
    flow = network.steps[0].call(Flow(Tensor(ids)))
    np.testing.assert_array_equal(flow.mask._data, ids != 2)
    (flow.value * flow.value).sum().backward()
    np.testing.assert_array_equal(weight.grad[2], 0)          # read four times, never trained
    np.testing.assert_allclose(weight.grad[1], 2 * weight._data[1])
    np.testing.assert_allclose(weight.grad[5], 2 * weight._data[5])
    loss, before = MeanSquaredError(), weight._data[2].copy()
    network.fit(ids, np.ones((2, 4, 3), np.float32), loss=loss, optimizer=SGD(lr=0.1), epochs=2)
    np.testing.assert_array_equal(weight._data[2], before)


def test_embedding_initialisation_is_standard_normal():
    weight = Sequential().embedding(500, 40).lower(Shape(3), RandomStream(4)).state_dict()["0.weight"]
    assert abs(weight.mean()) < 0.02 and abs(weight.std() - 1) < 0.02


def test_embedding_refuses_ids_outside_the_vocabulary_and_floats():
    network = Sequential().embedding(4, 2).lower(Shape(3))
    with pytest.raises(OpError, match=r"embedding: id 7 is outside the vocabulary 0..3"):
        network(np.array([[1, 7, 2]]))
    with pytest.raises(OpError, match="embedding: ids must be integers, received float32"):
        apply("embedding", Tensor(np.zeros((4, 2), np.float32)), Tensor(np.zeros((1, 3))),
              padding_index=-1)


def test_periodic_embedding_by_hand():
    """One feature, one frequency c = 0.25: x = 1 turns to (sin pi/2, cos pi/2) = (1, 0)."""
    network = Sequential().periodic_embedding(1, 2).lower(Shape(1))
    network.load_state_dict({"0.frequencies": np.array([[0.25]], np.float32),
                             "0.weight": np.array([[[2.0, -1.0], [5.0, 7.0]]], np.float32),
                             "0.bias": np.array([[0.5, 0.25]], np.float32)})
    np.testing.assert_allclose(network(np.array([[1.0], [2.0]], np.float32)),
                               [[[2.5, -0.75]], [[-4.5, -6.75]]], atol=1e-6)  # x = 2: (0, -1)


def test_periodic_embedding_has_a_dense_per_feature_and_paper_initialisation():
    network = Sequential().periodic_embedding(48, 24, sigma=0.1).lower(Shape(7), RandomStream(3))
    state = network.state_dict()
    assert state["0.frequencies"].shape == (7, 48)
    assert state["0.weight"].shape == (7, 96, 24) and state["0.bias"].shape == (7, 24)
    assert np.abs(state["0.frequencies"]).max() <= 0.3 + 1e-7        # truncated at 3 sigma
    assert abs(state["0.frequencies"].std() - 0.1) < 0.01
    assert np.abs(state["0.weight"]).max() <= 1 / math.sqrt(96)
    assert network(np.ones((2, 7), np.float32)).shape == (2, 7, 24)


def test_sine_table_by_hand():
    network = Sequential().sine_positions().lower(Shape(3, 4))
    out = network(np.zeros((1, 3, 4), np.float32))[0]
    np.testing.assert_allclose(out[0], [0, 1, 0, 1], atol=1e-7)
    np.testing.assert_allclose(out[2], [math.sin(2), math.cos(2), math.sin(2 / 100),
                                        math.cos(2 / 100)], rtol=1e-6)
    odd = Sequential().sine_positions().lower(Shape(2, 3))(np.ones((1, 2, 3), np.float32))[0]
    np.testing.assert_allclose(odd[1], 1 + np.array([math.sin(1), math.cos(1),
                                                     math.sin(1 / 10000 ** (2 / 3))]), rtol=1e-6)


def test_sine_positions_refuse_a_series_longer_than_the_table():
    with pytest.raises(ShapeError, match=r"sine_positions\(max_length=4\) at place 0 cannot take "
                                         r"an input of shape 5x2: a series of 5 steps is longer "
                                         r"than max_length 4"):
        Sequential().sine_positions(max_length=4).lower(Shape(5, 2))
    network = Sequential().sine_positions(max_length=4).lower(Shape(3, 2))
    with pytest.raises(ShapeError, match="sine_positions at place 0: a series of 6 steps is "
                                         "longer than max_length 4"):
        network(np.zeros((1, 6, 2), np.float32))


def test_masking_zeroes_padded_steps_and_makes_the_mask():
    network = Sequential().masking(-1.0).lower(Shape(3, 2))
    x = np.array([[[1, 2], [-1, -1], [-1, 3]]], np.float32)
    flow = network.steps[0].call(Flow(Tensor(x)))
    np.testing.assert_array_equal(flow.value._data, [[[1, 2], [0, 0], [-1, 3]]])
    np.testing.assert_array_equal(flow.mask._data, [[True, False, True]])


def test_gaussian_noise_acts_in_training_only():
    network = Sequential().gaussian_noise(0.5).lower(Shape(2000))
    x = np.zeros((4, 2000), np.float32)
    np.testing.assert_array_equal(network(x), x)  # evaluation: nothing
    network.train()
    with running(RandomStream(3), 7):
        a = network.forward(Tensor(x))._data
        b = network.forward(Tensor(x))._data
    with running(RandomStream(3), 8):
        c = network.forward(Tensor(x))._data
    np.testing.assert_array_equal(a, b)             # the same step of the same run draws alike
    assert not np.array_equal(a, c)
    assert abs(a.std() - 0.5) < 0.01 and abs(a.mean()) < 0.01
    assert network.spec[0].training_only


@pytest.mark.parametrize("call, message", [
    (lambda: Sequential().embedding(10, 4, padding_index=10),
     "embedding: padding_index must be below the vocabulary (10), received 10"),
    (lambda: Sequential().embedding(0, 4), "embedding: vocabulary must be greater than 0"),
    (lambda: Sequential().embedding(10, 4, padding_index=-1),
     "embedding: padding_index must be greater than or equal to 0"),
    (lambda: Sequential().periodic_embedding(8, 4, sigma=0),
     "periodic_embedding: sigma must be greater than 0"),
    (lambda: Sequential().gaussian_noise(-0.1),
     "gaussian_noise: stddev must be greater than or equal to 0"),
    (lambda: Sequential().sine_positions(max_length=0),
     "sine_positions: max_length must be greater than 0"),
])
def test_verbs_refuse_bad_arguments(call, message):
    with pytest.raises(SpecError) as caught:
        call()
    assert message in str(caught.value)


@pytest.mark.parametrize("spec, shape, message", [
    (Sequential().embedding(5, 2), Shape(3, 2), r"needs a series of ids \(steps\)"),
    (Sequential().periodic_embedding(4, 2), Shape(3, 2), "needs a row of numeric features"),
    (Sequential().masking(), Shape(3), r"needs a series \(steps x channels\)"),
    (Sequential().sine_positions(), Shape(3), r"needs a series \(steps x channels\)"),
])
def test_lowering_refuses_shapes(spec, shape, message):
    with pytest.raises(ShapeError, match=message):
        spec.lower(shape)
