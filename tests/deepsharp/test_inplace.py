"""In-place writes: every entry point's values and gradients (hand-computed, PyTorch's CopySlices
formula: the written region's gradient goes to the value, the rest to the old tensor), finite
differences, version counters, and every refusal by its message."""

from __future__ import annotations

import numpy as np
import pytest

from deepsharp import Parameter, SGD, Tensor, no_grad
from deepsharp.errors import OpError
from tests.support import assert_gradients

_rng = np.random.default_rng(11)


def normal(*shape):
    return _rng.standard_normal(shape).astype(np.float32)


def leaf(array):
    return Tensor(array, requires_grad=True)


# -- values and gradients, by hand ----------------------------------------------------------------

def test_setitem_routes_the_region_to_the_value_and_the_rest_to_the_old_tensor():
    x, v = leaf(normal(3, 4)), leaf(normal(2))
    y = x * 2.0
    y[1, 1:3] = v
    expected = x.numpy() * 2
    expected[1, 1:3] = v.numpy()
    np.testing.assert_array_equal(y.numpy(), expected)
    weights = normal(3, 4)
    (y * weights).sum().backward()
    gx = 2 * weights
    gx[1, 1:3] = 0
    np.testing.assert_allclose(x.grad, gx, rtol=1e-6)
    np.testing.assert_allclose(v.grad, weights[1, 1:3], rtol=1e-6)


def test_a_broadcast_value_gets_the_sum_of_its_region():
    x, v = leaf(normal(3, 4)), leaf(normal(1))
    y = x + 0.0
    y[:, ::2] = v                              # one value into 6 places
    weights = normal(3, 4)
    (y * weights).sum().backward()
    np.testing.assert_allclose(v.grad, [weights[:, ::2].sum()], rtol=1e-5)
    assert np.all(x.grad[:, ::2] == 0) and np.all(x.grad[:, 1::2] == weights[:, 1::2])


@pytest.mark.parametrize("write, region", [
    (lambda y: y.fill_(3.0), (slice(None),)),
    (lambda y: y.zero_(), (slice(None),)),
    (lambda y: y.__setitem__((Ellipsis, -1), 0.0), (Ellipsis, -1)),
    (lambda y: y.__setitem__((None, 0, slice(None, None, -2)), 1.0), (0, slice(None, None, -2))),
])
def test_constant_writes_cut_the_gradient_of_what_they_overwrite(write, region):
    x = leaf(normal(3, 4))
    y = x * 3.0
    expected = x.numpy() * 3
    write(y)
    expected[region] = y.numpy()[region]
    np.testing.assert_array_equal(y.numpy(), expected)
    y.sum().backward()
    gx = np.full((3, 4), 3.0, np.float32)
    gx[region] = 0
    np.testing.assert_array_equal(x.grad, gx)


def test_copy_from_a_tensor_that_requires_gradients_broadcasts_it():
    buffer = Tensor(np.zeros((3, 4), np.float32))   # a leaf that needs no gradient
    source = leaf(normal(4))
    buffer.copy_(source)
    assert buffer.requires_grad and buffer.record is not None
    np.testing.assert_array_equal(buffer.numpy(), np.tile(source.numpy(), (3, 1)))
    (buffer * 2.0).sum().backward()
    np.testing.assert_array_equal(source.grad, np.full(4, 6.0))


def test_writing_a_row_at_a_time_builds_a_history():
    steps = [leaf(normal(2)) for _ in range(3)]
    out = Tensor(np.zeros((3, 2), np.float32))
    for t, h in enumerate(steps):
        out[t] = h * float(t + 1)
    weights = normal(3, 2)
    (out * weights).sum().backward()
    for t, h in enumerate(steps):
        np.testing.assert_allclose(h.grad, weights[t] * (t + 1), rtol=1e-6)


def test_a_boolean_mask_write_is_a_where():
    x = leaf(normal(3, 4))
    mask = normal(3, 4) > 0
    y = x * 1.0
    y[mask] = -1.0
    np.testing.assert_array_equal(y.numpy(), np.where(mask, -1.0, x.numpy()))
    y.sum().backward()
    np.testing.assert_array_equal(x.grad, np.where(mask, 0.0, 1.0))


def test_a_row_mask_writes_one_value_per_trailing_position():
    x, v = leaf(normal(3, 4)), leaf(normal(4))
    rows = np.array([True, False, True])
    y = x * 1.0
    y[rows] = v
    np.testing.assert_array_equal(y.numpy()[rows], np.tile(v.numpy(), (2, 1)))
    y.sum().backward()
    np.testing.assert_array_equal(v.grad, np.full(4, 2.0))
    np.testing.assert_array_equal(x.grad[1], np.ones(4))


@pytest.mark.parametrize("index, place, shape", [
    (1, np.s_[1], (1,)),                                   # into one place (numpy refuses it)
    (1, np.s_[1], (1, 1)),
    (np.s_[0:2], np.s_[0:2], (1, 1, 2)),
    (np.array([2, 0]), np.s_[[2, 0]], (1, 2)),             # index_put's positions
])
@pytest.mark.parametrize("recorded", [False, True])
def test_a_value_with_more_leading_ones_than_the_region_writes_as_pytorch(index, place, shape,
                                                                          recorded):
    """PyTorch takes a value with leading axes of size 1 beyond the region's rank (its copy_
    broadcasts them away): y[1] = v of shape (1,), y[i] = v of shape (1, len(i))."""
    base, values = normal(4), normal(*shape)
    v = leaf(values) if recorded else Tensor(values)
    y = Tensor(base) * 1.0
    y[Tensor(index) if isinstance(index, np.ndarray) else index] = v
    expected = base.copy()
    expected[place] = values.reshape(np.shape(expected[place]))
    np.testing.assert_array_equal(y.numpy(), expected)
    if recorded:
        weights = normal(4)
        (y * weights).sum().backward()
        np.testing.assert_array_equal(v.grad, weights[place].reshape(shape))


def _in_pytorch_order(base, index, value):
    """numpy's x[index] = value where it means what PyTorch means; with an integer between the
    arrays (x[:, i, :, 0]: numpy moves the arrays' axes first, PyTorch selects with the integer
    first and keeps them in place), the integer's view first, as PyTorch reads it."""
    out = base.copy()
    if len(index) == 4 and isinstance(index[-1], int):
        out[..., 0][index[:3]] = value
    else:
        out[index] = value
    return out


@pytest.mark.parametrize("shape, index, vshape", [
    ((3, 4), (slice(None), np.array([1, 3])), (3, 2)),
    ((3, 4, 5), (slice(None), np.array([1, 3]), slice(1, 4)), (3, 2, 3)),
    ((3, 4, 5), (np.array([0, 2]), slice(None), np.array([1, 4])), (2, 4)),  # apart: block first
    ((3, 4, 5, 2), (slice(None), np.array([1, 3]), slice(None), 0), (3, 2, 5)),  # PyTorch's order
    ((3, 4, 5), (Ellipsis, np.array([[1], [3]])), (3, 4, 2, 1)),
    ((3, 4, 5), (slice(0, 2), np.array([[1, 2]]), np.array([[0], [4]])), (2, 2, 2)),
    ((3, 4), (slice(None), np.array([1, 3])), (2,)),                  # broadcast over the region
])
def test_a_write_through_arrays_mixed_with_slices_is_recorded_as_pytorch_means_it(shape, index,
                                                                                   vshape):
    """The cases' results checked against PyTorch 2.13 once, by hand (values and both
    gradients): the region is PyTorch's x[index], the value's gradient the upstream gradient of
    the region summed to its shape, the old tensor's the rest."""
    x, v = leaf(normal(*shape)), leaf(normal(*vshape))
    y = x * 1.0
    y[_tensors_in(index)] = v
    np.testing.assert_array_equal(y.numpy(), _in_pytorch_order(x.numpy(), index, v.numpy()))
    weights = normal(*shape)
    (y * weights).sum().backward()
    region = _in_pytorch_order(np.zeros(shape, np.float32), index, np.ones(vshape, np.float32))
    np.testing.assert_allclose(x.grad, np.where(region == 1, 0, weights), rtol=1e-6)
    assert v.grad.shape == vshape
    assert_gradients(lambda a, b: _written(a, b, index, shape), [normal(*shape), normal(*vshape)])


def _tensors_in(index):
    return tuple(Tensor(i) if isinstance(i, np.ndarray) else i for i in index)


def _written(a, b, index, shape):
    y = a * 1.0
    y[_tensors_in(index)] = b
    return (y * Tensor(np.arange(np.prod(shape), dtype=np.float32).reshape(shape))).sum()


@pytest.mark.parametrize("method, formula, gx, gw", [
    ("add_", lambda a, w: a + w, lambda a, w: np.ones_like(a), lambda a, w: np.ones_like(w)),
    ("sub_", lambda a, w: a - w, lambda a, w: np.ones_like(a), lambda a, w: -np.ones_like(w)),
    ("mul_", lambda a, w: a * w, lambda a, w: w, lambda a, w: a),
    ("div_", lambda a, w: a / w, lambda a, w: 1 / w, lambda a, w: -a / w ** 2),
])
def test_in_place_arithmetic_has_the_out_of_place_gradients(method, formula, gx, gw):
    x, w = leaf(normal(3, 4)), leaf(np.abs(normal(3, 4)) + 0.5)
    y = x * 1.0
    result = getattr(y, method)(w)
    assert result is y and y._version == 1
    np.testing.assert_allclose(y.numpy(), formula(x.numpy(), w.numpy()), rtol=1e-6)
    y.sum().backward()
    np.testing.assert_allclose(x.grad, gx(x.numpy(), w.numpy()), rtol=1e-5)
    np.testing.assert_allclose(w.grad, gw(x.numpy(), w.numpy()), rtol=1e-5)


def test_augmented_assignment_writes_in_place_as_pytorch_does():
    x = leaf(normal(3, 4))
    y = x * 1.0
    alias = y.reshape(12)                     # a view sees the write
    y += 1.0
    y *= 2.0
    y -= 0.5
    y /= 4.0
    np.testing.assert_allclose(alias.numpy(), ((x.numpy() + 1) * 2 - 0.5).reshape(12) / 4,
                               rtol=1e-6)
    y.sum().backward()
    np.testing.assert_allclose(x.grad, np.full((3, 4), 0.5), rtol=1e-6)


def test_alpha_scales_the_other_tensor():
    x, w = leaf(normal(3)), leaf(normal(3))
    y = x * 1.0
    y.add_(w, alpha=-2.0)
    np.testing.assert_allclose(y.numpy(), x.numpy() - 2 * w.numpy(), rtol=1e-6)
    y.sum().backward()
    np.testing.assert_allclose(w.grad, np.full(3, -2.0))


# -- finite differences ---------------------------------------------------------------------------

def _setitem(a, v):
    y = a * 1.0
    y[1:, ::-2] = v
    return (y * y).sum()


def _masked(a, v):
    y = a * 1.0
    y[np.array([True, False, True])] = v
    return (y.exp()).sum()


def _arithmetic(a, w):
    y = a * 1.0
    y += w
    y *= w
    y /= (w * w + 1.0)
    y -= a
    return (y * y).sum()


def _fills(a, v):
    y = a * 1.0
    y[0].fill_(2.0)
    y[:, -1].zero_()
    buffer = Tensor(np.zeros(a.shape[1:]))
    buffer.copy_(v)                            # a buffer that needs no gradient takes v's
    return (y * buffer).sum() + (y * y).sum()


def _view_write(a, v):
    y = a * 1.0
    y[1][1:] = v                               # through a view of a view
    y.T[0] = v.sum()
    return (y * y).sum()


def _mixed_write(a, v):
    y = a * 1.0
    y[:, Tensor(np.array([2, 0]))] = v         # arrays mixed with slices: PyTorch's region
    y[None, 1:, [3]] = v[:2, :1] * 2.0
    return (y * y).sum()


@pytest.mark.parametrize("fn, shapes", [
    (_setitem, [(3, 4), (1, 2)]), (_masked, [(3, 4), (4,)]), (_arithmetic, [(3, 4), (4,)]),
    (_view_write, [(3, 4), (3,)]), (_fills, [(3, 4), (4,)]), (_mixed_write, [(3, 4), (3, 2)]),
])
def test_gradients_of_in_place_writes_match_finite_differences(fn, shapes):
    assert_gradients(fn, [_rng.standard_normal(s) for s in shapes])


# -- views ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("view, index", [
    (lambda y: y[1:3], (slice(1, 3),)),
    (lambda y: y.reshape(2, 6)[1], (slice(2, 4), slice(None))),
    (lambda y: y.T[2], (slice(None), 2)),
])
def test_a_write_into_a_view_is_a_write_into_what_it_views(view, index):
    x = leaf(np.arange(12, dtype=np.float32).reshape(4, 3))
    y = x * 1.0
    v = view(y)
    v.fill_(-1.0)
    written = np.zeros((4, 3), bool)
    written[index] = True
    np.testing.assert_array_equal(y.numpy() == -1.0, written)  # the base sees the write
    y.sum().backward()
    np.testing.assert_array_equal(x.grad, np.where(written, 0.0, 1.0))


def test_a_view_made_before_its_base_is_written_is_stale():
    x = leaf(normal(3, 4))
    y = x * 1.0
    first = y[0]
    y[0] = 5.0                       # `first` sees 5s, but its history says x[0]
    assert np.all(first.numpy() == 5.0)
    with pytest.raises(OpError, match=r"mul: its input, a float32 tensor of shape \(4,\) "
                                      r"\(made by reshape\), shares its storage with a tensor "
                                      r"that x\[\.\.\.\] = value wrote into"):
        first * 2.0
    with pytest.raises(OpError, match="backward: its input"):
        first.backward(np.ones(4, np.float32))


def test_version_counters_move_with_every_write_and_views_share_them():
    x = Tensor(normal(3, 4))
    row = x[1]
    assert x._version == row._version == 0
    x.fill_(1.0)
    row[0] = 2.0
    x.add_(1.0)
    assert x._version == row._version == 3
    assert x._counter.last == "add_()"
    assert x.numpy()[1, 0] == 3.0


# -- what backward refuses ---------------------------------------------------------------------------

def test_a_saved_input_written_afterwards_refuses_backward():
    x = leaf(normal(3, 4))
    h = x * 2.0
    z = h * h                              # mul reads h's values for its gradient
    h[0] = 0.0
    with pytest.raises(OpError, match=r"one of the tensors needed for gradient computation has "
                                      r"been modified by an in-place operation: mul needs input "
                                      r"0, .* is at version 1; expected version 0 \(x\[\.\.\.\] "
                                      r"= value wrote into it after mul used it\)"):
        z.sum().backward()


def test_a_saved_result_written_afterwards_refuses_backward():
    x = leaf(normal(3, 4))
    y = x.exp()                            # exp keeps its own result
    y.mul_(2.0)
    with pytest.raises(OpError, match=r"exp needs its own result 0 \(which it saved\), which is "
                                      r"at version 1; expected version 0 \(mul_\(\) wrote"):
        y.sum().backward()


def test_an_input_whose_values_are_not_needed_may_be_written():
    x = leaf(normal(3, 4))
    h = x * 2.0
    z = h + 1.0                            # add needs no values: PyTorch allows this too
    h[0] = 0.0
    (z + h).sum().backward()
    expected = np.full((3, 4), 4.0, np.float32)
    expected[0] = 2.0
    np.testing.assert_array_equal(x.grad, expected)


def test_a_factor_is_needed_only_for_the_other_factors_gradient():
    x, w = leaf(normal(3, 4)), leaf(normal(3, 4))
    h = x * 2.0
    z = h * 3.0                            # h's values would serve only the constant's gradient
    h[0] = 0.0
    z.sum().backward()                     # as PyTorch: allowed
    np.testing.assert_array_equal(x.grad, np.full((3, 4), 6.0))
    h = x * 2.0
    z = h * w                              # here w's gradient needs h's values
    h.zero_()
    with pytest.raises(OpError, match="mul needs input 0"):
        z.sum().backward()


def test_a_write_under_no_grad_is_invisible_to_the_history_as_in_pytorch():
    x = leaf(normal(3, 4))
    y = x * 2.0
    with no_grad():
        y[0] = 0.0
    (y * 3.0).sum().backward()
    np.testing.assert_array_equal(x.grad, np.full((3, 4), 6.0))


def test_a_parameter_written_under_no_grad_after_use_refuses_backward():
    w = Parameter(normal(4))
    x = leaf(normal(3, 4))
    z = x * w
    with no_grad():
        w.zero_()
    with pytest.raises(OpError, match=r"mul needs input 1, a float32 tensor of shape \(4,\) "
                                      r"\(a leaf\), which is at version 1; expected version 0 "
                                      r"\(zero_\(\) wrote"):
        z.sum().backward()


# -- refusals ----------------------------------------------------------------------------------------

LEAF = "a leaf tensor that requires gradients .* cannot be written in place while gradients " \
       "are recorded"


@pytest.mark.parametrize("write, fragment", [
    (lambda p: p.fill_(0.0), r"fill_\(\): " + LEAF),
    (lambda p: p.zero_(), r"zero_\(\): " + LEAF),
    (lambda p: p.copy_(np.ones(4)), r"copy_\(\): " + LEAF),
    (lambda p: p.__setitem__(0, 1.0), r"x\[\.\.\.\] = value: " + LEAF),
    (lambda p: p.add_(1.0), r"add_\(\): " + LEAF),
    (lambda p: p.mul_(2.0), r"mul_\(\): " + LEAF),
    (lambda p: p[1:].fill_(0.0), r"fill_\(\): the tensor is a view of a float32 tensor of shape "
                                 r"\(4,\) \(a leaf\): " + LEAF),
])
def test_a_leaf_that_requires_gradients_is_refused_as_pytorch_refuses_it(write, fragment):
    p = Parameter(np.arange(4, dtype=np.float32))
    with pytest.raises(OpError, match=fragment):
        write(p)
    np.testing.assert_array_equal(p.numpy(), np.arange(4))  # nothing written
    with no_grad():
        write(p)                                             # as optimizers write


@pytest.mark.parametrize("write, fragment", [
    (lambda y: y.expand(2, 3, 4).fill_(0.0), r"fill_\(\): the tensor is a view \(expand\)"),
    (lambda y: y.detach().__setitem__(0, Tensor(normal(4), requires_grad=True)),
     r"x\[\.\.\.\] = value: the tensor is a view \(detach\) of a float32 tensor of shape "
     r"\(3, 4\) \(made by mul\)"),
    (lambda y: y.__setitem__((normal(3) > 0, slice(1, None)), Tensor(normal(3),
                                                                     requires_grad=True)),
     r"writing through boolean masks mixed with other indices is not recorded"),
    (lambda y: y.__setitem__(normal(3, 4) > 0, Tensor(normal(5))),
     r"a value of shape \(5,\) written through a boolean mask is recorded only when"),
    (lambda y: y.__setitem__(0, Tensor(normal(5))), r"could not broadcast a value of shape "
                                                    r"\(5,\) into the indexed region of shape "
                                                    r"\(4,\)"),
    (lambda y: y.add_(Tensor(normal(2, 3, 4))), r"add_\(\): the result has shape \(2, 3, 4\)"),
    (lambda y: y.astype(np.int64).add_(Tensor(normal(3, 4), requires_grad=True)),
     r"add_\(\): the result's type float\d+ cannot be written into a tensor of type int64"),
])
def test_writes_that_cannot_be_recorded_are_refused_by_name(write, fragment):
    x = leaf(normal(3, 4))
    y = x * 1.0
    before = y.numpy().copy()
    with pytest.raises(OpError, match=fragment):
        write(y)
    np.testing.assert_array_equal(y.numpy(), before)


def test_a_view_made_under_no_grad_is_refused_as_pytorch_refuses_it():
    x = leaf(normal(3, 4))
    y = x * 1.0
    with no_grad():
        row = y[0]
    with pytest.raises(OpError, match="made while gradients were not recorded"):
        row.fill_(0.0)


def test_plain_writes_take_any_index():
    x = Tensor(np.zeros((3, 4), np.float32))
    x[[0, 2], 1] = 5.0                                    # nothing records: any index
    x[np.array([[True, False, False, False]] * 3)] = 1.0
    np.testing.assert_array_equal(x.numpy()[:, :2], [[1, 5], [1, 0], [1, 5]])
    with pytest.raises(OpError, match="cannot write into a tensor of shape"):
        x.expand(2, 3, 4)[0, 0, 0] = 1.0                     # a broadcast view is read-only


def test_plain_writes_place_values_in_pytorchs_order():
    # x[0, :, i] selects (3, 2) in PyTorch (the integer first), (2, 3) in numpy: a value of
    # PyTorch's shape lands where PyTorch puts it (hand-computed), and one of numpy's is refused
    x = Tensor(np.zeros((2, 3, 4), np.float32))
    value = np.arange(6, dtype=np.float32).reshape(3, 2)
    x[0, :, np.array([3, 1])] = value
    expected = np.zeros((2, 3, 4), np.float32)
    expected[0, :, 3], expected[0, :, 1] = value[:, 0], value[:, 1]
    np.testing.assert_array_equal(x.numpy(), expected)
    assert x[0, :, np.array([3, 1])].shape == (3, 2)
    with pytest.raises(OpError, match=r"x\[...\] = value: cannot write into a tensor of shape"):
        x[0, :, np.array([3, 1])] = value.T
    with pytest.raises(OpError, match="index 5 is out of bounds"):
        x[0, 5, np.array([1])] = 1.0


def test_an_optimizer_step_needs_no_grad_and_moves_the_version():
    p = Parameter(normal(4))
    (p * 2.0).sum().backward()
    SGD(lr=0.1).bind([("p", p)]).step()
    assert p._version == 1


# -- the `_` twins of the functions (clamp_, masked_fill_, relu_, ...) ------------------------------
from deepsharp.tensors.inplace import IN_PLACE  # noqa: E402

MASK = normal(3, 4) > 0.3
ARGS = {"clamp": (-0.5, 0.8), "clip": (None, 0.9), "masked_fill": (MASK, 0.25), "pow": (1.5,),
        "remainder": (0.7,), "fmod": (0.7,), "add": (normal(4),), "sub": (normal(3, 1),),
        "mul": (normal(4),), "div": (np.abs(normal(4)) + 0.5,), "lerp": (normal(3, 4), 0.3),
        "addmm": (Tensor(normal(3, 5)), Tensor(normal(5, 4))),
        "scatter_add": (1, Tensor(np.array([[0, 3, 3, 1]] * 3)), normal(3, 4)),
        "index_add": (0, Tensor(np.array([2, 0, 2])), normal(3, 4)),
        "scatter": (1, Tensor(np.array([[0, 3, 3, 1]] * 3)), Tensor(normal(3, 4))),
        "scatter_reduce": (0, Tensor(np.array([[2, 0, 2, 1]] * 2)), Tensor(normal(2, 4)), "amax"),
        "index_put": ((Tensor(np.array([0, 2, 0])),), Tensor(normal(4)), True),
        "index_fill": (1, Tensor(np.array([3, 0])), 0.5),
        "index_copy": (0, Tensor(np.array([2, 0])), Tensor(normal(2, 4))), "acosh": (), "asin": (), "acos": (), "atanh": ()}
INSIDE_ONE = ("asin", "acos", "atanh")       # taken on x / 3 (inside -1..1); acosh on x + 1


@pytest.mark.parametrize("name", IN_PLACE)
def test_each_in_place_twin_has_its_functions_values_and_gradients(name):
    """The twin writes into the tensor what the function returns, and trains as it does (the
    functions are held to PyTorch in test_tensor_parity.py)."""
    x = leaf(np.abs(normal(3, 4)) + 0.3)      # positive: log, sqrt, rsqrt take it
    scale, offset = (1 / 3, 0.0) if name in INSIDE_ONE else (1.0, 1.0 if name == "acosh" else 0.0)
    weights = normal(3, 4)
    expected = getattr(x * scale + offset, name)(*ARGS.get(name, ()))
    (expected * weights).sum().backward()
    expected_grad, x.grad = x.grad, None
    y = x * scale + offset
    assert getattr(y, f"{name}_")(*ARGS.get(name, ())) is y
    np.testing.assert_array_equal(y.numpy(), expected.numpy())
    (y * weights).sum().backward()
    np.testing.assert_array_equal(x.grad, expected_grad)


def test_an_in_place_twin_on_a_saved_input_refuses_backward():
    x = leaf(normal(3, 4))
    y = x * 1.0
    z = y.sin()                                # sin's rule reads y
    y.relu_()
    with pytest.raises(OpError, match="relu_\\(\\)"):
        z.sum().backward()


def test_a_parameter_is_clipped_in_place_under_no_grad_and_refused_outside():
    weight = Parameter(normal(3, 4))
    with pytest.raises(OpError, match="clamp_\\(\\)"):
        weight.clamp_(-0.1, 0.1)
    with no_grad():
        weight.clamp_(-0.1, 0.1)
    assert float(np.abs(weight.numpy()).max()) <= np.float32(0.1)
