"""fit's lean pass (training._lean_pass) against its general path (forward_backward over
_loss_of): the same weights and history, bit for bit, and each condition that turns it off."""

from __future__ import annotations

import numpy as np
import pytest

from deepsharp import Adam, CrossEntropy, Module, RandomStream, Sequential, Shape
from deepsharp import training
from deepsharp.compiled import compiled
from deepsharp.parallel import data_parallel
from deepsharp.tensors import apply


def _network():
    return (Sequential().dense(8).relu().dense(8).relu().dropout(0.25).dense(3)
            .lower(Shape(5), RandomStream(0)))


def _data(n: int = 70):
    generator = np.random.default_rng(2)
    return generator.standard_normal((n, 5)).astype(np.float32), generator.integers(0, 3, n)


def _fit(monkeypatch, general: bool, network=None, **options):
    """Train a few steps; (weights by name, history without timings, general passes run)."""
    passes = []
    real = training.forward_backward

    def counted(*args):
        passes.append(1)
        return real(*args)

    monkeypatch.setattr(training, "forward_backward", counted)
    if general:
        monkeypatch.setattr(training, "_lean_pass", lambda run, batch: None)
    network = network or _network()
    x, y = _data()
    y = (y, y) if options.pop("two answers", False) else y
    options = {"loss": CrossEntropy(), "batch_size": 16, "epochs": 2, "progress": False,
               **options}
    history = network.fit(x, y, optimizer=Adam(1e-2), **options)
    monkeypatch.undo()
    weights = {name: p._data.copy() for name, p in network.named_parameters()}
    logs = [{k: v for k, v in epoch.items() if k != "seconds"} for epoch in history]
    return weights, logs, len(passes)


def _same(first, second) -> None:
    assert first[1] == second[1]
    assert first[0].keys() == second[0].keys()
    for name in first[0]:
        np.testing.assert_array_equal(first[0][name], second[0][name], err_msg=name)


@pytest.mark.parametrize("use_numba", [False, True])
def test_lean_pass_trains_bit_for_bit_as_the_general_path(monkeypatch, use_numba):
    if use_numba:
        pytest.importorskip("numba")
    with compiled() if use_numba else _nothing():
        lean = _fit(monkeypatch, general=False, validation_split=0.2)
        general = _fit(monkeypatch, general=True, validation_split=0.2)
    assert lean[2] == 0 and general[2] > 0  # the lean pass ran every batch, then none
    _same(lean, general)


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


class _Pair(Module):
    """Two outputs: the lean pass takes one."""

    def __init__(self) -> None:
        super().__init__()
        self.net = _network()

    def forward(self, x):
        z = self.net(x)
        return z, apply("mul", z, 2.0)


@pytest.mark.parametrize("case", ["sample_weight", "class_weight", "loss_weights", "two outputs",
                                  "two threads"])
def test_each_condition_turns_the_lean_pass_off(monkeypatch, case):
    x, y = _data()
    options = {
        "sample_weight": {"sample_weight": np.linspace(0.5, 1.5, len(x)).astype(np.float32)},
        "class_weight": {"class_weight": {0: 2.0, 1: 1.0}},
        "loss_weights": {"loss_weights": 0.5},
        "two outputs": {"loss": (CrossEntropy(), CrossEntropy()), "two answers": True},
        "two threads": {},
    }[case]
    network = _Pair() if case == "two outputs" else None
    if case == "two threads":
        with data_parallel(2):
            found = _fit(monkeypatch, general=False, **options)
    else:
        found = _fit(monkeypatch, general=False, network=network, **options)
    assert found[2] == 2 * 5  # every batch (5 an epoch, 2 epochs) took the general path
