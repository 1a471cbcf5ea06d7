"""Which results share their tensor's storage, as PyTorch's do: a write into a view is seen by
its base and a write into the base by the view; a copy sees neither. The expected values are
PyTorch 2.13's (torch.diagonal, select and unbind are views; flip and diag are copies;
contiguous returns the tensor itself when its values lie in row-major order), written out here;
scripts/fuzz_numbers.py (`tensors`, the in-place calls through views) holds the same against
PyTorch itself."""

from __future__ import annotations

import numpy as np
import pytest

from deepsharp import Tensor
from deepsharp.errors import OpError
from tests.support import assert_gradients

X = np.arange(12, dtype=np.float32).reshape(3, 4)

VIEWS = {
    "diagonal": lambda y: y.diagonal(),
    "diagonal-offset": lambda y: y.diagonal(1),
    "diagonal-below-of-a-transpose": lambda y: y.t().diagonal(-1),
    "select": lambda y: y.select(1, 2),
    "select-from-the-end": lambda y: y.select(0, -1),
    "unbind": lambda y: y.unbind(1)[3],
    "contiguous-of-a-contiguous-tensor": lambda y: y.contiguous(),
}
COPIES = {
    "flip": lambda y: y.flip(0),
    "diag": lambda y: y.diag(),
    "contiguous-of-a-transpose": lambda y: y.t().contiguous(),
}


@pytest.mark.parametrize("make", VIEWS.values(), ids=VIEWS.keys())
def test_a_write_into_a_view_reaches_its_base_and_back(make):
    y = Tensor(X.copy())
    v = make(y)
    expected = np.asarray(v.numpy()).copy() + 100
    v.add_(100)
    np.testing.assert_array_equal(np.asarray(make(Tensor(y.numpy().copy())).numpy()), expected)
    assert (y.numpy() != X).sum() == v.numel()  # the view's places, and only they, moved
    y.mul_(-1)
    np.testing.assert_array_equal(np.asarray(v.numpy()), -expected)


@pytest.mark.parametrize("make", COPIES.values(), ids=COPIES.keys())
def test_a_write_into_a_copy_leaves_its_source_alone(make):
    y = Tensor(X.copy())
    v = make(y)
    before = np.asarray(v.numpy()).copy()
    v.add_(100)
    np.testing.assert_array_equal(y.numpy(), X)
    y.mul_(-1)
    np.testing.assert_array_equal(np.asarray(v.numpy()), before + 100)


def test_the_views_values_are_pytorchs():
    y = Tensor(X.copy())
    np.testing.assert_array_equal(y.diagonal(1).numpy(), [1, 6, 11])
    np.testing.assert_array_equal(y.t().diagonal(-1).numpy(), [1, 6, 11])
    np.testing.assert_array_equal(y.select(1, 2).numpy(), [2, 6, 10])
    np.testing.assert_array_equal(y.flip(0).numpy(), X[::-1])
    assert y.contiguous() is y


def test_a_recorded_write_through_a_diagonal_reaches_the_base_with_its_gradient():
    """PyTorch's CopySlices: y = 2x, then y's diagonal above the main one multiplied by v in
    place: y's places there are 2 x v (gradient 2 v to x, 2 x to v), elsewhere 2 x."""
    x = Tensor(X.copy(), requires_grad=True)
    v = Tensor(np.array([1.5, -2.0, 0.5], np.float32), requires_grad=True)
    y = x * 2.0
    y.diagonal(1).mul_(v)
    y.sum().backward()
    on = np.zeros(X.shape, bool)
    on[[0, 1, 2], [1, 2, 3]] = True
    expected = np.where(on, 2 * X, 2 * X)
    expected[on] *= v.numpy()
    np.testing.assert_array_equal(y.numpy(), expected)
    grad = np.full(X.shape, 2.0, np.float32)
    grad[on] = 2 * v.numpy()
    np.testing.assert_array_equal(x.grad, grad)
    np.testing.assert_array_equal(v.grad, 2 * X[on])


@pytest.mark.parametrize("offset, dims", [(0, (0, 1)), (-1, (2, 0)), (1, (1, 2)), (5, (0, 2))])
def test_a_recorded_write_through_a_diagonal_of_a_stack_by_finite_differences(offset, dims):
    a = np.random.default_rng(3).standard_normal((3, 2, 4))
    v = np.random.default_rng(4).standard_normal(Tensor(a).diagonal(offset, *dims).shape)

    def objective(x, w):
        y = x * 1.5
        y.diagonal(offset, *dims).mul_(w)
        y.diagonal(offset, *dims).add_(w * w)
        return (y * y).sum()

    assert_gradients(objective, [a, v])


def test_a_recorded_write_through_select_reaches_the_base_with_its_gradient():
    x = Tensor(X.copy(), requires_grad=True)
    y = x * 2.0
    y.select(1, 0).mul_(3.0)
    y.sum().backward()
    expected = np.full(X.shape, 2.0, np.float32)
    expected[:, 0] = 6.0
    np.testing.assert_array_equal(x.grad, expected)
    np.testing.assert_array_equal(y.numpy()[:, 0], X[:, 0] * 6)


def test_a_diagonal_of_a_read_only_tensor_stays_read_only():
    base = Tensor(np.broadcast_to(np.arange(4, dtype=np.float32), (4, 4)))
    with pytest.raises(OpError, match="read-only"):
        base.diagonal().add_(1.0)


@pytest.mark.parametrize("make, mask", [
    (lambda y: y.tril(), np.tril(np.ones((3, 4)))),
    (lambda y: y.tile((1, 2))[:, :4], np.ones((3, 4))),
    (lambda y: y[[0, 2], 1], np.isin(np.arange(12).reshape(3, 4), [1, 9]).astype(float)),
    (lambda y: y.cumsum(1)[:, -1], np.ones((3, 4))),
])
def test_a_write_after_an_operation_whose_gradient_needs_no_values_is_not_refused(make, mask):
    """As PyTorch: tril, tile, indexing and cumsum keep no values for their gradient, so a
    write into their input afterwards leaves their backward whole."""
    x = Tensor(X.copy(), requires_grad=True)
    y = x * 1.0
    z = make(y)
    y.mul_(2.0)
    (z.sum() + y.sum()).backward()
    np.testing.assert_array_equal(x.grad, mask + 2.0)


@pytest.mark.parametrize("write, expected", [
    (lambda v: v.__ifloordiv__(2), np.floor_divide(X[1], 2)),
    (lambda v: v.__imod__(3), np.mod(X[1], 3)),
    (lambda v: v.__ipow__(2), X[1] ** 2),
])
def test_augmented_floor_division_remainder_and_power_write_into_the_tensor(write, expected):
    """`v //= 2`, `v %= 3`, `v **= 2` are in place, as PyTorch's: the base v views sees them
    (Python alone would rebind v to a new tensor and leave the base as it was)."""
    y = Tensor(X.copy())
    v = y[1]
    alias = v
    v = write(v)
    assert v is alias
    np.testing.assert_array_equal(y.numpy()[1], expected)


def test_augmented_bitwise_operators_write_into_the_tensor():
    y = Tensor(np.array([[6, 3], [5, 12]]))
    v = y[:, 1]
    v &= 6
    v |= 8
    v ^= 1
    np.testing.assert_array_equal(y.numpy(), [[6, ((3 & 6) | 8) ^ 1], [5, ((12 & 6) | 8) ^ 1]])


def test_a_recorded_augmented_power_has_the_powers_gradient():
    x = Tensor(X.copy(), requires_grad=True)
    y = x * 1.0
    y **= 2
    y.sum().backward()
    np.testing.assert_array_equal(x.grad, 2 * X)


def test_an_augmented_floor_division_of_integers_by_a_float_is_refused_as_pytorch_refuses_it():
    y = Tensor(np.array([5, 7]))
    with pytest.raises(OpError, match="cannot be written into a tensor of type int64"):
        y //= 0.5
