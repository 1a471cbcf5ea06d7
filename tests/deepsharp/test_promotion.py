"""Mixed dtypes promote as PyTorch's do (torch.result_type), not as numpy's: an integer tensor
meeting a float32 one gives float32, integer true division gives float32."""

from __future__ import annotations

import numpy as np
import pytest

from deepsharp import Tensor, float64

IDS = Tensor(np.array([1, 2, 3]))
FLAGS = Tensor(np.array([True, False, True]))
X32 = Tensor(np.array([0.5, 1.5, 2.5], np.float32))
X64 = X32.astype(np.float64)  # Tensor() itself makes floats float32
SCALAR64 = Tensor(np.array(2.0)).astype(np.float64)

# (expression, dtype torch.result_type gives for the same operands)
CASES = [
    ("int64 + float32", lambda: IDS + X32, np.float32),
    ("float32 * int64", lambda: X32 * IDS, np.float32),
    ("bool * float32", lambda: FLAGS * X32, np.float32),
    ("int64 * python float", lambda: IDS * 2.5, np.float32),
    ("int64 / int64", lambda: IDS / IDS, np.float32),
    ("int64 / python int", lambda: IDS / 2, np.float32),
    ("int64 + python int", lambda: IDS + 1, np.int64),
    ("bool + int64", lambda: FLAGS + IDS, np.int64),
    ("float32 + float64", lambda: X32 + X64, np.float64),
    ("float32 + 0-d float64", lambda: X32 + SCALAR64, np.float32),
    ("int64 + 0-d float64", lambda: IDS + SCALAR64, np.float64),
    ("int64 ** float32", lambda: IDS ** X32, np.float32),
]


@pytest.mark.parametrize("name, make, dtype", CASES, ids=[c[0] for c in CASES])
def test_the_result_type_is_pytorchs(name, make, dtype):
    assert make().dtype == np.dtype(dtype)


def test_an_integer_meeting_a_float_is_computed_in_the_float_type():
    big = Tensor(np.array([2 ** 24 + 1]))  # not a float32: PyTorch rounds it before adding
    assert (big + Tensor(np.array([0.0], np.float32))).item() == 2 ** 24
    assert (big > Tensor(np.array([2.0 ** 24], np.float32))).item() is False  # compared as float32


def test_where_and_maximum_promote_their_values():
    from deepsharp.tensors.api.select import where
    from deepsharp import functional as F

    assert where(FLAGS, IDS, X32).dtype == np.float32
    assert F.maximum(IDS, X32).dtype == np.float32


def test_gradients_reach_the_float_operand_through_the_cast():
    x = Tensor(np.array([0.5, 1.5, 2.5], np.float32), requires_grad=True)
    (IDS * x).sum().backward()
    np.testing.assert_array_equal(x.grad, [1, 2, 3])
    assert x.grad.dtype == np.float32


def test_float64_mode_promotes_to_float64():
    with float64():
        assert (IDS / 2).dtype == np.float64
        assert (IDS * 0.5).dtype == np.float64
