"""A few cases of the fuzz of numbers (tests/support/random_networks.py; scripts/fuzz_numbers.py
runs thousands): random stacks exported and read back, trained by every path, and the recurrent
primitives compiled, each held to its reference."""

from __future__ import annotations

import pytest

from tests.support.random_networks import export_case, paths_case, recurrent_case, trace_case


@pytest.mark.parametrize("seed", range(6))
def test_random_stacks_answer_in_onnx_runtime_as_predict_does(seed):
    assert export_case(seed) == []


@pytest.mark.parametrize("seed", range(4))
def test_random_stacks_train_alike_by_every_path(seed):
    assert paths_case(seed) == []


@pytest.mark.parametrize("seed", range(200))
def test_random_recurrent_layers_give_numpys_numbers_compiled(seed):
    assert recurrent_case(seed) == []


@pytest.mark.parametrize("seed", range(40))
def test_random_modules_traced_answer_at_other_sizes(seed):
    assert trace_case(seed) == []
