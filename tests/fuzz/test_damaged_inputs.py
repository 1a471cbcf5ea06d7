"""Mutated and truncated graphs, network files and checkpoints (the campaigns of
scripts/fuzz_campaign.py, a few hundred cases in the suite): every case is accepted or refused
with the project's error, within a time and memory bound; and every failure the long campaign
found is kept here (tests/fixtures/fuzz/) as a regression test.

Memory is measured with tracemalloc (numpy's arrays are traced): the peak of one case must stay
under a small multiple of its size plus a fixed allowance. Time is a hang guard, far above what a
case takes (milliseconds), not a speed test.
"""

from __future__ import annotations

import json
import time
import tracemalloc
import warnings
from functools import lru_cache
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.fuzz import CAMPAIGNS, make_case, outcome

CORPUS = Path(__file__).resolve().parents[1] / "fixtures" / "fuzz"
SETTINGS = dict(deadline=None, derandomize=True, database=None, suppress_health_check=[HealthCheck.too_slow])
SECONDS = 30.0
ALLOWANCE = 96 << 20  # the imports' and Runtime's own caches are not the case's doing


@lru_cache(maxsize=None)
def _seeds(name: str) -> tuple[bytes, ...]:
    return tuple(CAMPAIGNS[name].seeds())


def _bounded(name: str, data: bytes) -> str:
    """The case's outcome; fails the test past the time or memory bound."""
    target = CAMPAIGNS[name].target
    tracemalloc.start()
    started = time.process_time()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = outcome(lambda: target(data))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    spent = time.process_time() - started
    assert spent < SECONDS, f"{name}: {spent:.1f} s"
    assert peak < ALLOWANCE + 20 * len(data), f"{name}: peak {peak:,} bytes for {len(data):,}"
    return result


@pytest.mark.parametrize("name", ["onnx-bytes", "onnx-fields", "network-files", "checkpoints", "inspect"])
@settings(max_examples=60, **SETTINGS)
@given(index=st.integers(0, 10**6))
def test_a_damaged_input_is_accepted_or_refused_within_bounds(name, index):
    data = make_case(CAMPAIGNS[name], list(_seeds(name)), 2024, index)
    result = _bounded(name, data)
    assert not result.startswith("failure"), f"{name} case {index}: {result}"


@settings(max_examples=10, **SETTINGS)
@given(index=st.integers(0, 10**6))
def test_check_on_a_damaged_graph_exits_0_1_or_2(index):
    data = make_case(CAMPAIGNS["check"], list(_seeds("check")), 2024, index)
    assert _bounded("check", data) in ("exit 0", "exit 1", "exit 2")


@pytest.mark.parametrize("name", [n for n in ["onnx-bytes", "onnx-fields", "network-files", "checkpoints"]])
@pytest.mark.parametrize("keep", [0, 8, 100, 1000])
def test_a_truncated_file_is_refused(name, keep):
    for seed in _seeds(name):
        assert _bounded(name, seed[:min(keep, len(seed) - 1)]) == "refused"


INDEX = json.loads((CORPUS / "index.json").read_text())


@pytest.mark.parametrize("file", sorted(INDEX))
def test_every_failure_the_campaign_found_is_now_accepted_or_refused(file):
    entry = INDEX[file]
    result = _bounded(entry["campaign"], (CORPUS / file).read_bytes())
    assert not result.startswith("failure"), f"{file} (found {entry['found']}): {result}"
