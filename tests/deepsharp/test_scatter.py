"""scatter and scatter_reduce beyond the PyTorch fixture (test_tensor_parity.py holds values and
gradients to PyTorch 2.13, ties and repeated writes included): finite differences where the
function has a derivative (no repeated positions, no ties), PyTorch's integer mean, and each
refusal by its message."""

from __future__ import annotations

import numpy as np
import pytest

from deepsharp import functional as F
from deepsharp.errors import OpError
from deepsharp.tensors import Tensor
from tests.support import assert_gradients

_rng = np.random.default_rng(5)
# every row a different position of an axis of 6 (no repeated writes), and 4 of the 6 named
ROWS = np.stack([_rng.permutation(6)[:4] for _ in range(3)])


@pytest.mark.parametrize("reduce", ["none", "sum", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_gradients_match_finite_differences(reduce, include_self):
    x, src = _rng.standard_normal((3, 6)), _rng.standard_normal((3, 5))  # src wider than index
    up = _rng.standard_normal((3, 6))

    def objective(x, src):
        if reduce == "none":
            out = x.scatter(1, Tensor(ROWS), src)
        else:
            out = x.scatter_reduce(1, Tensor(ROWS), src, reduce, include_self=include_self)
        return (out * up).sum()

    assert_gradients(objective, [x, src])


def test_integer_mean_floors_as_pytorch():
    x = Tensor(np.array([[5, -6, 7, 8]]))
    out = x.scatter_reduce(1, Tensor(np.array([[1, 1, 2, 1]])), Tensor(np.array([[-7, -8, 4, -9]])),
                           "mean")
    # (-6 - 7 - 8 - 9) / 4 = -7.5 -> -8; (7 + 4) / 2 = 5.5 -> 5 (PyTorch 2.13 gives the same)
    np.testing.assert_array_equal(out.numpy(), [[5, -8, 5, 8]])


def test_a_value_is_written_at_every_position_index_names():
    out = F.scatter(Tensor(np.zeros((2, 3), np.float32)), 1, Tensor(np.array([[0], [2]])),
                    value=1.5)
    np.testing.assert_array_equal(out.numpy(), [[1.5, 0, 0], [0, 0, 1.5]])
    assert out.dtype == np.float32


@pytest.mark.parametrize("call, message", [
    (lambda x, i: x.scatter_reduce(1, i, x, "prod"),
     "scatter_reduce: reduce must be 'sum', 'mean', 'amax' or 'amin', received 'prod' (a product "
     "of scattered values is not supported)"),
    (lambda x, i: x.scatter(1, i, x, reduce="multiply"),
     "scatter: reduce='multiply' is not supported; reduce=None or 'add'"),
    (lambda x, i: x.scatter(1, i, x.double()),
     "scatter: src must have the input's dtype float32, received float64 (PyTorch refuses it too)"),
    (lambda x, i: F.scatter(x, 1, i, x, value=1.0),
     "scatter: give src (a tensor or a number) or value, not both nor neither"),
    (lambda x, i: x.scatter_reduce(1, i, 2.0, "sum"),
     "scatter_reduce: src must be a tensor, received float"),
    (lambda x, i: x.scatter(1, i[:, :, None], x),
     "scatter: the index (2, 3, 1) must have the rank of the input (2, 3)"),
    (lambda x, i: x.scatter(1, i + 3, x), "scatter: index 3 is out of range for axis 1 of size 3"),
    (lambda x, i: x.scatter(1, i.float(), x),
     "scatter: index must hold integers, received float32"),
])
def test_refusals_name_the_argument(call, message):
    x = Tensor(np.ones((2, 3), np.float32))
    with pytest.raises(OpError) as caught:
        call(x, Tensor(np.array([[0, 1, 2], [2, 1, 0]])))
    assert message in str(caught.value)


@pytest.mark.parametrize("accumulate", [False, True])
def test_index_put_gradients_match_finite_differences(accumulate):
    rows, columns = np.array([[2], [0]]), np.array([[1, -1, 0]])   # 6 distinct positions
    x, values = _rng.standard_normal((3, 4)), _rng.standard_normal(3)
    up = _rng.standard_normal((3, 4))
    assert_gradients(lambda x, v: (x.index_put((Tensor(rows), Tensor(columns)), v,
                                               accumulate=accumulate) * up).sum(), [x, values])


def test_writing_through_integer_arrays_is_index_put():
    """x[i, j] = v on a tensor that records (numpy's meaning): trains as index_put."""
    x = Tensor(np.zeros((3, 4), np.float32), requires_grad=True)
    y = x * 1.0
    y[Tensor(np.array([0, 2])), [1, -1]] = Tensor(np.array([7.0, 8.0], np.float32))
    y[[1]] = 9.0
    np.testing.assert_array_equal(y.numpy(), [[0, 7, 0, 0], [9, 9, 9, 9], [0, 0, 0, 8]])
    (y * 2.0).sum().backward()
    np.testing.assert_array_equal(x.grad, [[2, 0, 2, 2], [0, 0, 0, 0], [2, 2, 2, 0]])


@pytest.mark.parametrize("call, message", [
    (lambda x: x.index_put((Tensor(np.array([True, False])),), Tensor(np.ones(3, np.float32))),
     "index_put: indices[0] is a bool mask; write through it with masked_fill or x[mask] = value"),
    (lambda x: x.index_put(Tensor(np.array([0])), Tensor(np.ones(3, np.float32))),
     "index_put: indices must be a tuple of 1 to 2 index tensors"),
    (lambda x: x.index_put((Tensor(np.array([0, 1])),), Tensor(np.ones(2, np.float32))),
     "index_put: values of shape (2,) cannot be broadcast to the (2, 3) positions the indices "
     "pick"),
    (lambda x: x.index_put((Tensor(np.array([5])),), Tensor(np.ones(3, np.float32))),
     "index_put: index 5 is out of range for axis 0 of size 2"),
])
def test_index_put_refusals_name_the_argument(call, message):
    with pytest.raises(OpError) as caught:
        call(Tensor(np.ones((2, 3), np.float32)))
    assert message in str(caught.value)


@pytest.mark.parametrize("call, message", [
    (lambda x: x[Tensor(np.array([0, 1])), Tensor(np.array([0, 1, 2]))],
     "indexing: index arrays of shapes (2,), (3,) cannot be broadcast together"),
    (lambda x: x.index_put((Tensor(np.array([0, 1])), Tensor(np.array([0, 1, 2]))),
                           Tensor(np.float32(1))),
     "index_put: index arrays of shapes (2,), (3,) cannot be broadcast together"),
    (lambda x: (x * 1.0).__setitem__(([0, 1], [0, 1, 2]), 1.0),
     "index_put: index arrays of shapes (2,), (3,) cannot be broadcast together"),
    (lambda x: x.masked_select(Tensor(np.array([True, False]))),
     "masked_select: the mask (2,) cannot be broadcast with the input (2, 3)"),
    (lambda x: x.scatter_reduce(1, Tensor(np.zeros((2, 3), np.int64)), x, "sum",
                                include_self="no"),
     "scatter_reduce: include_self must be True or False, received 'no'"),
    (lambda x: x.nonzero(as_tuple="yes"), "nonzero: as_tuple must be True or False"),
])
def test_index_arrays_and_flags_that_do_not_fit_are_refused_by_name(call, message):
    x = Tensor(np.ones((2, 3), np.float32), requires_grad=True)
    with pytest.raises(OpError) as caught:
        call(x)
    assert message in str(caught.value)


@pytest.mark.parametrize("call, message", [
    (lambda x: x.index_fill(1, Tensor(np.array([[0]])), 1.0),
     "index_fill: index must be 1-d, received shape (1, 1)"),
    (lambda x: x.index_fill(1, Tensor(np.array([0])), Tensor(np.ones(2, np.float32))),
     "index_fill: value must be a number or a 0-d tensor, received shape (2,)"),
    (lambda x: x.index_copy(1, Tensor(np.array([0, 2])), Tensor(np.ones((2, 3), np.float32))),
     "index_copy: source must have shape (2, 2) (the input's, with 2 along dim 1), received "
     "(2, 3)"),
    (lambda x: x.index_copy(0, Tensor(np.array([1])), Tensor(np.ones((1, 3), np.int64))),
     "index_copy: source must have the input's dtype float32, received int64"),
])
def test_index_fill_and_copy_refusals_name_the_argument(call, message):
    with pytest.raises(OpError) as caught:
        call(Tensor(np.ones((2, 3), np.float32)))
    assert message in str(caught.value)


def test_index_copy_gradients_match_finite_differences():
    x, source, up = (_rng.standard_normal((3, 5)), _rng.standard_normal((3, 2)),
                     _rng.standard_normal((3, 5)))
    assert_gradients(lambda x, s: (x.index_copy(1, Tensor(np.array([4, 1])), s) * up).sum(),
                     [x, source])
