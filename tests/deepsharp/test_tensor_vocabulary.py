"""The vocabulary's rules that PyTorch's numbers do not show: both keyword spellings, the
meanings chosen where PyTorch and numpy differ, and one test per refusal, asserting its message."""

from __future__ import annotations

import numpy as np
import pytest

from deepsharp import functional as F
from deepsharp.errors import OpError
from deepsharp.tensors import Tensor

X = Tensor(np.arange(24.0).reshape(2, 3, 4))
SCALAR = Tensor(np.float32(2.5))


def test_pytorch_and_numpy_keywords_mean_the_same():
    for a, b in ((X.sum(dim=1, keepdim=True), X.sum(axis=1, keepdims=True)),
                 (X.amax(dim=(0, 2)), X.amax(axis=(0, 2))),
                 (X.max(dim=-1).values, X.max(axis=-1).values),
                 (X.var(dim=0, correction=0), X.var(axis=0, ddof=0)),
                 (X.cumsum(dim=2), X.cumsum(axis=2)),
                 (F.softmax(X, dim=1), F.softmax(X, axis=1)),
                 (F.cat([X, X], dim=2), F.cat([X, X], axis=2)),
                 (X.squeeze(dim=0), X.squeeze(axis=0))):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


@pytest.mark.parametrize("call, message", [
    (lambda: X.sum(dim=1, axis=0), "sum: give dim or axis, not both"),
    (lambda: X.mean(1, keepdim=True, keepdims=False), "mean: give keepdim or keepdims, not both"),
    (lambda: X.var(0, unbiased=True, correction=0),
     "var: give one of unbiased, correction and ddof"),
    (lambda: X.sum(3), "sum: dim 3 is out of range for a tensor of rank 3"),
    (lambda: X.sum(()), "dim=\\(\\) reduces every axis in PyTorch and none in numpy"),
    (lambda: X.amax((1, -2)), "names an axis twice"),
    (lambda: X.max((0, 1)), "max: dim must be one integer"),
    (lambda: X.max(keepdim=True), "max: keepdim needs a dim"),
    (lambda: X.cumsum(), "cumsum: give dim"),
    (lambda: X.transpose((0, 2, 1)), "use permute"),
    (lambda: X.transpose(), "transpose takes the two dims to swap"),
    (lambda: X.permute(0, 1), "must name every axis of a tensor of rank 3 once"),
    (lambda: X[0, 0].mT, "mT needs a tensor of rank 2 or more"),
    (lambda: X.t(), "t\\(\\) takes a tensor of rank 2 or less"),
    (lambda: X.expand(2, 5, 4), "axis 1 has size 3, which cannot become 5"),
    (lambda: X.expand(4), "1 sizes for a tensor of rank 3"),
    (lambda: X.view(np.float64), "reinterprets bytes"),
    (lambda: X.flatten(2, 0), "start_dim 2 comes after end_dim 0"),
    (lambda: X.unflatten(2, (3, 2)), "do not multiply to axis 2's size 4"),
    (lambda: X.split([1, 1], dim=1), "do not add up to axis 1's size 3"),
    (lambda: X.split(0), "must be positive"),
    (lambda: X.chunk(0), "chunks must be positive"),
    (lambda: X.repeat(2, 2), "one per axis"),
    (lambda: X.repeat_interleave([1, 2]), "one per entry"),
    (lambda: F.stack([X, X[0]]), "every tensor must have one shape"),
    (lambda: F.cat([X, X[:, :, :2].transpose(1, 2)], dim=0), "differ on an axis other than dim 0"),
    (lambda: F.cat(X), "give a non-empty list or tuple of tensors"),
    (lambda: X.gather(1, np.zeros((2, 3), np.int64)), "must have the rank of the input"),
    (lambda: X.gather(2, np.full((2, 3, 1), 4)), "index 4 is out of range for axis 2 of size 4"),
    (lambda: X.gather(0, np.zeros((2, 3, 4))), "index must hold integers"),
    (lambda: X.index_select(0, np.zeros((2, 2), np.int64)), "index must be 1-D"),
    (lambda: X[np.array([0, 2])], "index 2 is out of range for axis 0 of size 2"),
    (lambda: X[True], "indexing with a Python bool"),
    (lambda: X[np.array([True, False, True])], "the bool mask \\(3,\\) must have the shape of"),
    (lambda: X[np.array([0.5])], "needs integers or bools"),
    (lambda: F.one_hot(Tensor(np.array([0, 5])), 3), "class 5 is outside 0..2"),
    (lambda: F.where(X > 1, X), "where: give both x and y, or neither"),
    (lambda: X.masked_select(X), "masked_select: the mask must be a bool tensor"),
    (lambda: F.where(X, X, 0.0), "the condition must be a bool tensor"),
    (lambda: X.masked_fill(X, 0.0), "the mask must be a bool tensor"),
    # in place, a mask larger than the tensor does not fit it (out of place it broadcasts)
    (lambda: X[0].clone().masked_fill_(Tensor(np.ones((2, 3, 4), bool)), 0.0),
     "masked_fill_\\(\\): the result has shape \\(2, 3, 4\\), which does not fit"),
    (lambda: X.masked_fill(X > 1, Tensor(np.ones(2))), "a number or a 0-d tensor"),
    (lambda: X.topk(5), "k=5 is outside 0..4"),
    (lambda: F.einsum("ij,jk", X[0], X[0]), "the letter 'j' stands for sizes 4 and 3"),
    (lambda: F.einsum("ij", X), "names 2 axes of an operand of rank 3"),
    (lambda: F.einsum("i1", X[0]), "subscripts must be letters"),
    (lambda: F.einsum("ij->ii", X[0]), "must name distinct letters"),
    (lambda: X & X, "& on a float32 tensor: PyTorch's bitwise operators take integers and "
                    "bools only"),
    (lambda: ~X, "~ on a float32 tensor: PyTorch's bitwise operators take integers"),
    (lambda: Tensor(np.arange(3)) | 0.5, "\\| on 0.5: PyTorch's bitwise operators take"),
    (lambda: X.to("cuda"), "CPU only"),
    (lambda: X.to("half-float"), "is not a numpy dtype"),
    (lambda: X[0, 0].tril(), "tril: needs a tensor of rank 2 or more"),
    (lambda: F.clamp(X), "clamp: give min, max or both"),
    (lambda: F.linear(X, Tensor(np.ones((4, 5)))), "must be \\(out, in\\)"),
    (lambda: F.arange(0, 3, 0), "step must not be zero"),
    (lambda: iter(X[0, 0, 0]), "iteration over a 0-d tensor"),
    (lambda: X.narrow(2, 3, 2), "do not fit axis 2 of size 4"),
    (lambda: X.movedim((0, 1), 2), "as many distinct axes"),
    (lambda: X.select(3, 0), "select: dim 3 is out of range"),
    (lambda: X.round(decimals=1), "round: decimals=1 is not supported"),
    (lambda: X.norm(p=3), "norm: p=3 is not supported"),
    (lambda: X.norm(p="nuc"), "norm: p='nuc' is not supported"),
    (lambda: X.norm(p="fro", dim=(0, 1, 2)), "p='fro' takes at most two dims"),
    (lambda: Tensor(np.arange(3)).norm(), "norm: needs a floating-point tensor, received int64"),
    (lambda: F.vector_norm(X, 0), "vector_norm: p=0 is not supported"),
    (lambda: F.mm(X, X), "mm: needs two 2-d tensors, received \\(2, 3, 4\\)"),
    (lambda: X.bmm(Tensor(np.ones((3, 4, 2)))), "bmm: the batches differ"),
    (lambda: Tensor(np.arange(3)) % Tensor(np.array([1, 0, 2])), "remainder: integer division "
                                                                "by zero"),
    (lambda: Tensor(np.arange(3)) // 0, "floor_divide: integer division by zero"),
    # a bool divisor (or dividend) is an integer one: False is a zero (PyTorch refuses it too)
    (lambda: Tensor(np.arange(3)) // False, "floor_divide: integer division by zero"),
    (lambda: -3 % Tensor(np.array([True, False])), "remainder: integer division by zero"),
    (lambda: Tensor(np.array([True])) % Tensor(np.array([0])), "remainder: integer division"),
    (lambda: Tensor(np.arange(3)).fmod(Tensor(np.array([False]))), "fmod: integer division"),
    (lambda: Tensor(np.arange(3)).div(Tensor(np.array([False])), rounding_mode="trunc"),
     "floor_divide: integer division by zero"),
    (lambda: X.diagonal(0, 1, -2), "diagonal: dim1 and dim2 must differ"),
    # a 0-d tensor has no axis to cut, move along or grow (PyTorch refuses these too)
    *((call, f"{op}: needs a tensor of rank 1 or more along a dim, received a 0-d tensor")
      for op, call in (("unbind", lambda: SCALAR.unbind(0)), ("roll", lambda: SCALAR.roll(1, 0)),
                       ("narrow", lambda: SCALAR.narrow(0, 0, 1)),
                       ("split", lambda: SCALAR.split(1)), ("chunk", lambda: SCALAR.chunk(1)),
                       ("repeat_interleave", lambda: SCALAR.repeat_interleave(2, 0)),
                       ("unflatten", lambda: SCALAR.unflatten(0, (1,))))),
    (lambda: SCALAR.topk(0), "topk: k=0 of a 0-d tensor \\(PyTorch gives the value itself"),
    (lambda: SCALAR.index_select(0, Tensor(np.array([0, 0]))), "index_select: the index of a "
                                                               "0-d tensor holds one value"),
    (lambda: X.cross(X, dim=2), "cross: axis 2 has size 4, not 3"),
    (lambda: X[:, :2].cross(X[:, :2]), "cross: no axis of size 3 in the operands' shape"),
    (lambda: X[0].diagonal(1.5), "diagonal: offset must be an integer"),
    (lambda: X.diag(), "diag: needs a vector or a matrix, received a tensor of rank 3"),
    (lambda: Tensor(np.arange(3)).mean(), "mean: needs a floating-point tensor, received int64"),
    (lambda: Tensor(np.arange(3)).var(), "var: needs a floating-point tensor"),
    (lambda: F.softmax(Tensor(np.arange(3)), 0), "softmax: needs a floating-point tensor"),
])
def test_refusals_name_the_offence(call, message):
    with pytest.raises(OpError, match=message):
        call()


def test_the_meanings_chosen_where_pytorch_and_numpy_differ():
    assert X.transpose(0, 1).shape == (3, 2, 4)                  # swaps, as PyTorch
    assert X.T.shape == (4, 3, 2) and X.mT.shape == (2, 4, 3)
    assert X.squeeze(0).shape == X.shape                         # a size other than 1 stays
    assert [p.shape[0] for p in X.split(2, dim=2)] == [2, 2]     # pieces of size 2
    assert [p.shape[0] for p in Tensor(np.arange(5)).chunk(3)] == [2, 2, 1]
    assert X.repeat(1, 2, 1, 1).shape == (1, 4, 3, 4)           # whole copies (numpy's tile)
    np.testing.assert_array_equal(Tensor(np.array([1, 2])).repeat_interleave(2).numpy(),
                                  [1, 1, 2, 2])                  # numpy's repeat
    assert float(Tensor(np.array([1.0, 3.0])).var()) == 2.0      # unbiased by default
    assert F.cat([X, X]).shape == (4, 3, 4)                      # dim 0 by default
    assert X.size == 24 and X.size() == (2, 3, 4) and X.size(-1) == 4
    assert X.numel() == 24 and X.dim() == 3


def test_tensors_hash_by_identity_and_compare_elementwise():
    a, b = Tensor(np.ones(3)), Tensor(np.ones(3))
    table = {a: "a", b: "b"}
    assert table[a] == "a" and table[b] == "b" and len({a, b, a}) == 2
    assert (a == b).dtype == np.bool_ and (a == b).numpy().all()
    assert (a == None) is False and (a != None) is True  # noqa: E711 (Python's fallback)
    assert [t.shape for t in X] == [(3, 4), (3, 4)]


def test_max_gives_values_and_indices_along_a_dim_and_the_first_of_equal_values():
    x = Tensor(np.array([[1.0, 3.0, 3.0], [2.0, 2.0, 0.0]]), requires_grad=True)
    values, indices = x.max(1)
    np.testing.assert_array_equal(indices.numpy(), [1, 0])
    values.sum().backward()
    np.testing.assert_array_equal(x.grad, [[0, 1, 0], [1, 0, 0]])   # to the chosen entry
    x.grad = None
    x.amax(1).sum().backward()
    np.testing.assert_array_equal(x.grad, [[0, 0.5, 0.5], [0.5, 0.5, 0]])  # ties share


def test_sort_and_topk_keep_equal_values_in_order():
    x = Tensor(np.array([2.0, 1.0, 2.0, 1.0]))
    np.testing.assert_array_equal(x.sort().indices.numpy(), [1, 3, 0, 2])
    np.testing.assert_array_equal(x.sort(descending=True).indices.numpy(), [0, 2, 1, 3])
    np.testing.assert_array_equal(x.topk(3).indices.numpy(), [0, 2, 1])


def test_prod_and_cumprod_gradients_hold_with_zeros():
    x = Tensor(np.array([[0.0, 2.0, 3.0], [0.0, 0.0, 4.0]]), requires_grad=True)
    x.prod(1).sum().backward()
    np.testing.assert_array_equal(x.grad, [[6, 0, 0], [0, 0, 0]])
    y = Tensor(np.array([2.0, 0.0, 3.0]), requires_grad=True)
    y.cumprod(0).sum().backward()
    np.testing.assert_array_equal(y.grad, [1.0, 2 + 6, 0.0])


def test_comparisons_and_index_arrays_give_no_gradient_but_do_not_block_it():
    x = Tensor(np.array([-1.0, 2.0, 3.0]), requires_grad=True)
    (x * (x > 0)).sum().backward()
    np.testing.assert_array_equal(x.grad, [0, 1, 1])


def test_remainders_follow_python_and_c_and_give_the_divisor_its_gradient():
    a = Tensor(np.array([7.0, -7.0, 7.0, -7.0]), requires_grad=True)
    b = Tensor(np.array([3.0, 3.0, -3.0, -3.0]), requires_grad=True)
    assert (a % b).numpy().tolist() == [1.0, 2.0, -2.0, -1.0]            # the sign of b
    assert F.fmod(a, b).numpy().tolist() == [1.0, -1.0, 1.0, -1.0]       # the sign of a
    assert (a // b).numpy().tolist() == [2.0, -3.0, -3.0, 2.0]           # rounded down
    (a % b).sum().backward()
    assert a.grad.tolist() == [1.0] * 4 and b.grad.tolist() == [-2.0, 3.0, 3.0, -2.0]


def test_round_is_half_to_even_and_norm_at_zero_has_a_zero_gradient():
    assert Tensor(np.array([0.5, 1.5, 2.5, -0.5])).round().numpy().tolist() == [0, 2, 2, -0.0]
    zero = Tensor(np.zeros(3), requires_grad=True)
    zero.norm().backward()
    assert zero.grad.tolist() == [0.0, 0.0, 0.0]
    unit = F.normalize(Tensor(np.array([[3.0, 4.0], [0.0, 0.0]])), dim=1).numpy()
    np.testing.assert_allclose(unit, [[0.6, 0.8], [0.0, 0.0]])
