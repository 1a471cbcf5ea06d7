"""Random calls of the tensor vocabulary (tests/support/random_calls.py) on our side alone:
each answers with tensors or raises the project's error, never another exception.
scripts/fuzz_numbers.py (`tensors`) holds the same calls' answers to PyTorch's."""

from __future__ import annotations

import numpy as np
import pytest

from deepsharp import functional as F
from deepsharp.errors import DeepsharpError
from deepsharp.tensors import Tensor
from tests.support.parity_cases import outputs_of
from tests.support.random_calls import random_call


@pytest.mark.parametrize("seed", range(700))
def test_random_calls_answer_or_raise_the_projects_error(seed):
    call = random_call(seed)
    tensors = [Tensor(a.copy(), requires_grad=grad) for a, grad in zip(call.arrays, call.grads)]
    try:
        outputs = outputs_of(call.run(F, tensors))
    except DeepsharpError:
        return
    assert all(isinstance(o, Tensor) for o in outputs), call.text
    total = None
    for out in outputs:
        if out.requires_grad:
            term = (out * np.ones(out.shape, out.dtype)).sum()
            total = term if total is None else total + term
    if total is not None:
        total.backward()
