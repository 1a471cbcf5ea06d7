"""Every primitive's backward rule against finite differences in float64, and the table's rules."""

from __future__ import annotations

import numpy as np
import pytest

import tests.cases  # noqa: F401  (registers the cases)
from deepsharp.errors import OpError
from deepsharp.tensors import PRIMITIVES, Tensor, apply, float64, primitive
from tests.support import assert_gradients
from deepsharp.tensors.versions import reads
from tests.support.cases import CASES


def _claims_unread(name: str) -> bool:
    """Whether versions.py says some input's values are not read by `name`'s backward."""
    return name in PRIMITIVES and any(not reads(name, k) for k in range(8))


@pytest.mark.parametrize("name, build", [(n, b) for n, _, b in CASES], ids=[i for _, i, _ in CASES])
def test_backward_matches_finite_differences(name, build):
    arrays, attrs = build()
    rng = np.random.default_rng(0)
    with float64():
        probe = apply(name, *[Tensor(a) for a in arrays], **attrs)
    outputs = probe if isinstance(probe, tuple) else (probe,)
    weights = [rng.standard_normal(o.shape) for o in outputs]

    def objective(*tensors):
        result = apply(name, *tensors, **attrs)
        result = result if isinstance(result, tuple) else (result,)
        total = None
        for r, w in zip(result, weights):
            if r.dtype.kind != "f":
                continue
            term = (r * w).sum()
            total = term if total is None else total + term
        return total

    assert_gradients(objective, arrays, atol=1e-6, rtol=1e-5)


def test_every_primitive_has_a_gradient_case():
    """Every differentiable primitive; the others (comparisons, argmax, ...) have no gradient
    and their results never require one."""
    covered = {name for name, _, _ in CASES}
    differentiable = {name for name, p in PRIMITIVES.items() if p.differentiable}
    assert sorted(differentiable - covered - NO_DERIVATIVE) == []
    assert all(PRIMITIVES[name].backward is None for name in NO_DERIVATIVE)


# Results that require gradients, as PyTorch's do, through which PyTorch has no derivative: a
# backward through them is refused, naming the primitive.
NO_DERIVATIVE = {"unique"}


def test_a_backward_through_unique_is_refused_by_name_as_pytorch_refuses_it():
    x = Tensor(np.array([3.0, 1.0, 3.0, 2.0], np.float32), requires_grad=True)
    values, inverse, counts = x.unique(return_inverse=True, return_counts=True)
    assert values.requires_grad and not inverse.requires_grad and not counts.requires_grad
    np.testing.assert_array_equal(values.numpy(), [1.0, 2.0, 3.0])
    with pytest.raises(OpError, match="primitive 'unique' has no backward rule"):
        (values.sum() + x.sum()).backward()


def test_results_of_primitives_without_gradient_do_not_require_one():
    x = Tensor(np.array([[1.0, -2.0], [3.0, 0.5]]), requires_grad=True)
    for result in (x > 0, x.argmax(1), apply("full_like", x, value=0.0, dtype="<f4"),
                   (x > 0).logical_not()):
        assert not result.requires_grad
    assert x.max(1).indices.requires_grad is False and x.max(1).values.requires_grad


def test_unknown_primitive_is_named():
    with pytest.raises(OpError, match="no primitive named 'frobnicate'"):
        apply("frobnicate", Tensor([1.0]))


def test_primitive_without_backward_is_named_when_trained_through():
    @primitive("test_forward_only")
    class _ForwardOnly:
        def forward(a):
            return a * 2, None

    try:
        x = Tensor([1.0, 2.0], requires_grad=True)
        with pytest.raises(OpError, match="'test_forward_only' has no backward rule"):
            apply("test_forward_only", x).sum().backward()
    finally:
        del PRIMITIVES["test_forward_only"]


def test_gradients_accumulate_and_the_graph_is_shared():
    x = Tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * x
    (y + y * 2).sum().backward()  # d/dx (3 x^2) = 6x, through a shared intermediate
    np.testing.assert_allclose(x.grad, [6, 12, 18])
    (x * 1.0).sum().backward()
    np.testing.assert_allclose(x.grad, [7, 13, 19])


def test_float32_stays_float32_with_python_scalars():
    x = Tensor(np.ones(3, np.float32))
    assert (x * 2.5 + 1).dtype == np.float32
    assert (2 ** x).dtype == np.float32


def test_broken_backward_is_caught_by_the_check():
    """The checker itself must fail on a wrong rule (here: relu's gradient doubled)."""
    original = PRIMITIVES["relu"]
    from deepsharp.tensors.primitives import Primitive

    PRIMITIVES["relu"] = Primitive("relu", original.forward,
                                   lambda g, s, a: (2 * g * (a > 0),))
    try:
        with pytest.raises(AssertionError):
            assert_gradients(lambda t: apply("relu", t).sum(), [np.array([0.5, -0.3, 1.2])])
    finally:
        PRIMITIVES["relu"] = original


@pytest.mark.parametrize("name, build", [(n, b) for n, _, b in CASES if _claims_unread(n)],
                         ids=[i for n, i, _ in CASES if _claims_unread(n)])
def test_inputs_a_backward_is_said_not_to_read_are_not_read(name, build):
    """versions.py lets a write into an input its backward does not read pass (as PyTorch's
    saved tensors do): the rule must give the same gradients with those inputs' values spoiled
    (NaN in the float ones, shapes and dtypes kept)."""
    arrays, attrs = build()
    with float64():
        tensors = [Tensor(a, requires_grad=a.dtype.kind == "f") for a in arrays]
        result = apply(name, *tensors, **attrs)
    record = (result[0] if isinstance(result, tuple) else result).record
    outputs = result if isinstance(result, tuple) else (result,)
    grads = tuple(np.ones(o.shape, o.dtype) if o.dtype.kind == "f" else None for o in outputs)
    grads = grads if isinstance(result, tuple) else grads[0]
    rule = PRIMITIVES[name].backward
    first = rule(grads, record.saved, *[t._data for t in tensors], **record.attrs)
    spoiled = [np.full_like(a, np.nan) if a.dtype.kind == "f" and not reads(name, k) else a
               for k, a in enumerate(arrays)]
    second = rule(grads, record.saved, *spoiled, **record.attrs)
    for a, b in zip(first, second):
        if a is not None:
            np.testing.assert_array_equal(a, b)
