"""squeeze, unsqueeze, flip and select: compositions of existing primitives (reshape, slice,
gather), checked against numpy and finite differences."""

from __future__ import annotations

import numpy as np
import pytest

from deepsharp.errors import OpError
from deepsharp.tensors import Tensor
from tests.support import assert_gradients

_rng = np.random.default_rng(5)
A = _rng.standard_normal((3, 1, 4))


@pytest.mark.parametrize("fn, reference", [
    (lambda t: t.squeeze(), lambda a: a.squeeze()),
    (lambda t: t.squeeze(1), lambda a: a.squeeze(1)),
    (lambda t: t.unsqueeze(0), lambda a: a[None]),
    (lambda t: t.unsqueeze(-1), lambda a: a[..., None]),
    (lambda t: t.flip(), lambda a: a[::-1, ::-1, ::-1]),
    (lambda t: t.flip(-1), lambda a: a[..., ::-1]),
    (lambda t: t.flip((0, 2)), lambda a: a[::-1, :, ::-1]),
    (lambda t: t.select(0, -1), lambda a: a[-1]),
    (lambda t: t.select(2, 1), lambda a: a[:, :, 1]),
])
def test_values_and_gradients(fn, reference):
    np.testing.assert_array_equal(fn(Tensor(A))._data, reference(A.astype(np.float32)))
    weights = _rng.standard_normal(reference(A).shape)
    assert_gradients(lambda t: (fn(t) * Tensor(weights)).sum(), [A])


def test_squeeze_of_an_axis_not_of_size_one_leaves_it_as_pytorch():
    assert Tensor(A).squeeze(0).shape == (3, 1, 4)
    assert Tensor(A).squeeze((0, 1)).shape == (3, 4)


def test_refusals_name_the_axis():
    with pytest.raises(OpError, match="select: index 4 is out of range for axis 2 of size 4"):
        Tensor(A).select(2, 4)


@pytest.mark.parametrize("call, expected", [
    (lambda t: t.sum(dtype=np.float32), np.float32(8)),
    (lambda t: t.mean(dtype=np.float64), np.float64(8 / 6)),
    (lambda t: t.prod(0, dtype=np.float32), np.array([0, 0, 0], np.float32)),
    (lambda t: t.cumsum(1, dtype=np.float32), np.array([[1, 1, 4], [0, 4, 4]], np.float32)),
    (lambda t: t.softmax(1, dtype=np.float64)[0, 1],
     np.float64(np.exp(0) / (np.exp(1) + np.exp(0) + np.exp(3)))),
])
def test_dtype_casts_the_input_first_as_pytorch(call, expected):
    """PyTorch's `dtype=` of sum, mean, prod, cumsum, cumprod, softmax and log_softmax: the input
    is cast before the operation (the values here are whole numbers: exact either way)."""
    out = call(Tensor(np.array([[1, 0, 3], [0, 4, 0]])))
    assert out.dtype == np.asarray(expected).dtype
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-12)


def test_softplus_takes_beta_and_threshold_as_pytorch():
    """log(1 + e^(beta x)) / beta, x itself where beta x > threshold (PyTorch's formula)."""
    from deepsharp import functional as F

    x = Tensor(np.array([4.0, 2.0, 1.0, -3.0]))
    np.testing.assert_allclose(F.softplus(x, threshold=3).numpy(),
                               [4.0, np.log1p(np.exp(2.0)), np.log1p(np.e), np.log1p(np.exp(-3.0))])
    np.testing.assert_allclose(F.softplus(x, beta=2, threshold=5).numpy(),
                               [4.0, np.log1p(np.exp(4.0)) / 2, np.log1p(np.exp(2.0)) / 2,
                                np.log1p(np.exp(-6.0)) / 2])
    assert_gradients(lambda t: (F.softplus(t, beta=0.5, threshold=1) * Tensor(np.arange(4.0))).sum(),
                     [np.array([3.0, 1.5, -0.5, 0.25])])
