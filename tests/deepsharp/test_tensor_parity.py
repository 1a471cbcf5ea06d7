"""The tensor vocabulary against PyTorch: values, dtypes and gradients of every call in
tests/support/parity_cases.py, against tests/fixtures/tensors_torch.npz (made by
scripts/make_tensor_fixtures.py with PyTorch 2.13), and the same gradients against finite
differences in float64."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from deepsharp import functional
from deepsharp.tensors import PRIMITIVES, Tensor
from deepsharp.tracing import Tracer
from tests.support import assert_gradients
from tests.support.parity_cases import CASES, P, call, outputs_of
from tests.support.trace_check import assert_close

FIXTURE = np.load(Path(__file__).resolve().parents[1] / "fixtures" / "tensors_torch.npz")
VOCABULARY_MODULES = ("compare", "functions", "rounding", "reductions", "index", "sort", "arrange", "einsum",
                      "linear")


def ours(owner: str, name: str):
    return getattr(functional, name)


def _inputs(case: P) -> list[np.ndarray]:
    return [FIXTURE[f"{case.id}/in{k}"] for k in range(len(case.inputs))]


def _run(case: P, arrays, dtype=None) -> list[Tensor]:
    tensors = [Tensor(a if dtype is None or a.dtype.kind != "f" else a.astype(dtype),
                      requires_grad=spec.is_float) for a, spec in zip(arrays, case.inputs)]
    return tensors, outputs_of(call(case, ours, tensors))


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_values_and_gradients_match_pytorch(case):
    tensors, outputs = _run(case, _inputs(case))
    total = None
    for k, out in enumerate(outputs):
        expected = FIXTURE[f"{case.id}/out{k}"]
        assert isinstance(out, Tensor), f"output {k} is a {type(out).__name__}"
        assert out.dtype == expected.dtype, f"output {k}: {out.dtype}, PyTorch {expected.dtype}"
        assert_close(out.numpy(), expected, 1e-5, f"{case.id}, output {k}")
        if f"{case.id}/up{k}" in FIXTURE:
            assert out.requires_grad, f"output {k} does not require gradients; PyTorch's does"
            term = (out * FIXTURE[f"{case.id}/up{k}"]).sum()
            total = term if total is None else total + term
        else:
            assert not out.requires_grad, f"output {k} requires gradients; PyTorch's does not"
    if total is None:
        return
    total.backward()
    for k, t in enumerate(tensors):
        if f"{case.id}/grad{k}" in FIXTURE:
            grad = t.grad if t.grad is not None else np.zeros_like(t.numpy())
            assert_close(grad, FIXTURE[f"{case.id}/grad{k}"], 1e-5, f"{case.id}, gradient {k}")


# (not where an input holds NaN or inf: finite differences cannot step through them; those
# cases' gradients are held to PyTorch's above)
# where the function has no derivative at the inputs, PyTorch's convention is held above and
# finite differences would measure a kink: ties (amax and amin share the gradient evenly) and
# scatter's and index_put's repeated writes (every write gets the gradient, as in PyTorch; the
# last one alone counts); test_scatter.py holds their derivatives where they exist
KINKS = {"scatter", "index-put", "index-put-two", "index-copy",
         # and where there is no finite derivative to step towards: 0 ** b for b < 1, a
         # variance over no degree of freedom (inf)
         "pow-zero-base", "var-no-freedom"}
DIFFERENTIABLE = [c for c in CASES if any(k.startswith(f"{c.id}/up") for k in FIXTURE.files)
                  and all(i.kind not in ("special", "ties") for i in c.inputs)
                  and c.id not in KINKS]


@pytest.mark.parametrize("case", DIFFERENTIABLE, ids=[c.id for c in DIFFERENTIABLE])
def test_gradients_match_finite_differences_in_float64(case):
    ups = {k: FIXTURE[f"{case.id}/up{k}"].astype(np.float64)
           for k in range(len(outputs_of(_run(case, _inputs(case))[1])))
           if f"{case.id}/up{k}" in FIXTURE}

    def objective(*tensors):
        outputs = outputs_of(call(case, ours, list(tensors)))
        return sum(((outputs[k] * up).sum() for k, up in ups.items()), Tensor(np.float64(0)))

    assert_gradients(objective, _inputs(case), atol=1e-6, rtol=1e-5)


def _primitives_of(case: P) -> set[str]:
    """The primitives a call records, seen by a tracer (a mask read from an input is refused:
    its eager run records the same gather)."""
    arrays = _inputs(case)
    found: set[str] = set()
    with Tracer() as tracer:
        tensors = [tracer.input(f"x{k}", a) for k, a in enumerate(arrays)]
        try:
            outputs_of(call(case, ours, tensors))
        except Exception:
            return found
        found = {op.primitive for op in tracer._graph.ops}
    return found


def test_every_vocabulary_primitive_is_held_to_pytorch():
    vocabulary = {name for name, p in PRIMITIVES.items()
                  if p.forward.__module__.rsplit(".", 1)[-1] in VOCABULARY_MODULES}
    seen = set().union(*(_primitives_of(c) for c in CASES))
    # unique: a trace refuses it (its size is read from the values); its cases run eagerly
    assert sorted(vocabulary - seen - {"unique"}) == []
