"""linear (x @ weight.T + bias, one BLAS product over every row, the bias added in place) held to
the primitives it stands for, matmul and add: values and gradients within 1e-6 of the largest
value (one product over the folded rows against numpy's product per leading index), and the
result's type as numpy promotes it."""

import numpy as np
import pytest

from deepsharp.tensors import Tensor
from deepsharp.tensors.tensor import apply

TOL = 1e-6


def _passes(arrays, grad):
    results = []
    for fused in (True, False):
        tensors = [Tensor(a, requires_grad=True, dtype=a.dtype) for a in arrays]
        if fused:
            y = apply("linear", *tensors)
        else:
            y = apply("matmul", tensors[0], apply("transpose", tensors[1], perm=(1, 0)))
            y = apply("add", y, tensors[2]) if len(tensors) == 3 else y
        (y * Tensor(grad.astype(y.dtype))).sum().backward()
        results.append([y._data] + [t.grad for t in tensors])
    return results


@pytest.mark.parametrize("shape, bias", [((4, 6, 5), True), ((2, 3, 4, 5), False), ((6, 5), True),
                                         ((1, 5), True)])
def test_linear_folds_its_rows_into_one_product_as_matmul_and_add(shape, bias):
    generator = np.random.default_rng(2)
    x, w, b = (generator.standard_normal(s).astype(np.float32) for s in (shape, (3, 5), (3,)))
    grad = generator.standard_normal((*shape[:-1], 3)).astype(np.float32)
    fused, plain = _passes((x, w, b) if bias else (x, w), grad)
    for got, expected in zip(fused, plain):
        assert got.shape == expected.shape and got.dtype == expected.dtype
        np.testing.assert_allclose(got, expected, rtol=TOL, atol=TOL * np.abs(expected).max())


def test_linear_adds_a_wider_bias_as_numpy_promotes_it():
    """A float64 bias on float32 rows gives float64 results, as x @ w.T + b does in numpy (the
    in-place add would have rounded them to float32)."""
    generator = np.random.default_rng(3)
    x, w = (generator.standard_normal(s).astype(np.float32) for s in ((2, 4, 5), (3, 5)))
    b = generator.standard_normal(3)
    fused, plain = _passes((x, w, b), generator.standard_normal((2, 4, 3)))
    assert fused[0].dtype == np.float64
    np.testing.assert_allclose(fused[0], plain[0], rtol=1e-12)
    np.testing.assert_array_equal(fused[0], (x.reshape(-1, 5) @ w.T + b).reshape(2, 4, 3))


@pytest.mark.parametrize("a, b, message", [
    ((3,), (4,), r"a's last axis \(3\) and b's only axis \(4\) differ, received shapes \(3,\) and "
                 r"\(4,\)"),
    ((3,), (2, 4, 5), r"b's second to last axis \(4\)"),
    ((2, 3), (), "both operands need at least one axis"),
])
def test_matmul_of_a_vector_names_the_shapes_given(a, b, message):
    from deepsharp import functional as F
    from deepsharp.errors import OpError

    with pytest.raises(OpError, match=message):
        F.matmul(Tensor(np.ones(a, np.float32)), Tensor(np.ones(b, np.float32)))
