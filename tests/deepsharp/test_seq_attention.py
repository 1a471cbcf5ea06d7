"""attention and multi_head_attention: values by hand (plain, causal, key mask, a query with no
key left), PyTorch's initialisation, refusals."""

from __future__ import annotations

import math

import numpy as np
import pytest

from deepsharp import RandomStream, Sequential, Shape
from deepsharp.errors import OpError, ShapeError, SpecError
from deepsharp.layers.base import Flow
from deepsharp.tensors import Tensor, apply, no_grad


def _identity_attention(causal: bool = False):
    network = Sequential().attention(causal=causal).lower(Shape(2, 1))
    one, zero = np.ones((1, 1), np.float32), np.zeros(1, np.float32)
    network.load_state_dict({f"0.{n}_{p}": one if p == "weight" else zero
                             for n in ("query", "key", "value") for p in ("weight", "bias")})
    return network


def test_single_head_attention_by_hand():
    """q = k = v = x = (1, 2): scores x x^T = [[1, 2], [2, 4]] (scale 1/sqrt(1))."""
    out = _identity_attention()(np.array([[[1.0], [2.0]]], np.float32))[0, :, 0]
    e = math.exp
    np.testing.assert_allclose(out, [(e(1) + 2 * e(2)) / (e(1) + e(2)),
                                     (e(2) + 2 * e(4)) / (e(2) + e(4))], rtol=1e-6)


def test_causal_attention_by_hand():
    out = _identity_attention(causal=True)(np.array([[[1.0], [2.0]]], np.float32))[0, :, 0]
    e = math.exp
    np.testing.assert_allclose(out, [1.0, (e(2) + 2 * e(4)) / (e(2) + e(4))], rtol=1e-6)


def test_key_mask_leaves_keys_out_and_a_query_with_none_gives_zeros():
    network = _identity_attention()
    x = Tensor(np.array([[[1.0], [2.0]], [[3.0], [4.0]]], np.float32))
    mask = Tensor(np.array([[True, False], [False, False]]))
    with no_grad():
        out = network.steps[0].call(Flow(x, mask)).value._data
    np.testing.assert_allclose(out[0, :, 0], [1.0, 1.0])   # only key 0 is seen
    np.testing.assert_array_equal(out[1], 0.0)              # no key left: zeros


def test_causal_and_mask_leave_a_left_padded_query_nothing():
    q = k = v = np.ones((1, 1, 3, 2))
    out = apply("attention", Tensor(q), Tensor(k), Tensor(v),
                Tensor(np.array([[False, True, True]])), scale=1.0, causal=1)._data
    np.testing.assert_array_equal(out[0, 0, 0], 0.0)   # query 0 sees key 0 only: left out
    np.testing.assert_allclose(out[0, 0, 1:], 1.0)


def test_multi_head_attention_splits_heads():
    """Two heads of width 1: each attends with its own column."""
    network = Sequential().multi_head_attention(2, 2).lower(Shape(2, 2))
    eye, zero = np.eye(2, dtype=np.float32), np.zeros(2, np.float32)
    network.load_state_dict({**{f"0.{n}_weight": eye for n in ("query", "key", "value", "output")},
                             **{f"0.{n}_bias": zero for n in ("query", "key", "value", "output")}})
    x = np.array([[[1.0, 0.0], [2.0, 1.0]]], np.float32)
    out = network(x)[0]
    e = math.exp
    head0 = [(e(1) + 2 * e(2)) / (e(1) + e(2)), (e(2) + 2 * e(4)) / (e(2) + e(4))]
    head1 = [(0 * e(0) + 1 * e(0)) / 2, (0 + 1 * e(1)) / (e(0) + e(1))]
    np.testing.assert_allclose(out[:, 0], head0, rtol=1e-6)
    np.testing.assert_allclose(out[:, 1], head1, rtol=1e-6)


def test_initialisation_follows_pytorch():
    network = Sequential().multi_head_attention(4, 128).lower(Shape(9, 64), RandomStream(5))
    state = network.state_dict()
    projections = np.concatenate([state[f"0.{n}_weight"].reshape(-1)
                                  for n in ("query", "key", "value")])
    bound = math.sqrt(6 / (64 + 3 * 128))
    assert np.abs(projections).max() <= bound and np.abs(projections).max() > 0.99 * bound
    assert state["0.query_weight"].shape == (64, 128)
    assert np.abs(state["0.output_weight"]).max() <= 1 / math.sqrt(128)
    for name in ("query_bias", "key_bias", "value_bias", "output_bias"):
        np.testing.assert_array_equal(state[f"0.{name}"], 0)
    assert network.output_shape == Shape(9, 128)
    assert "output_weight" not in {k[2:] for k in
                                   Sequential().attention().lower(Shape(3, 4)).state_dict()}


def test_refusals():
    with pytest.raises(SpecError, match=r"multi_head_attention: width must be a multiple of heads "
                                        r"\(3\), received 8"):
        Sequential().multi_head_attention(3, 8)
    with pytest.raises(ShapeError, match=r"needs a series \(steps x channels\)"):
        Sequential().attention().lower(Shape(4))
    with pytest.raises(OpError, match=r"attention: q \(..., Tq, d\), k \(..., Tk, d\) and v "
                                      r"\(..., Tk, dv\) must agree"):
        apply("attention", Tensor(np.ones((1, 2, 3))), Tensor(np.ones((1, 2, 4))),
              Tensor(np.ones((1, 2, 4))), scale=1.0, causal=0)
    with pytest.raises(OpError, match=r"attention: key_mask must be bool \(1, 2\)"):
        apply("attention", Tensor(np.ones((1, 2, 3))), Tensor(np.ones((1, 2, 3))),
              Tensor(np.ones((1, 2, 3))), Tensor(np.ones((1, 2))), scale=1.0, causal=0)
