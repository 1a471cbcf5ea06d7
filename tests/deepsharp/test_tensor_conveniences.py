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
