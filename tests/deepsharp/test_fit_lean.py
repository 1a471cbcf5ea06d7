"""fit's lean pass (step_plan.lean_pass) against its general path (forward_backward over
_loss_of): the same weights and history, bit for bit, and each condition that turns it off."""

from __future__ import annotations

import numpy as np
import pytest

from deepsharp import Adam, CrossEntropy, Module, RandomStream, Sequential, Shape
from deepsharp import training
from deepsharp.compiled import compiled
from deepsharp.parallel import data_parallel
from deepsharp.step_plan import Plan
from deepsharp.tensors import apply
from deepsharp.tensors.modes import unfused

NETWORKS = {
    # recorded once an input shape, then replayed (step_plan.py)
    "dense": lambda: Sequential().dense(8).relu().dense(8).relu().dense(3),
    "residual, tanh": lambda: (Sequential().dense(8).residual(Sequential().dense(8).tanh())
                               .dense(3)),
    "conv, pool": lambda: Sequential().conv1d(4, 2).relu().max_pool1d(2).flatten().dense(3),
    "embedding, attention": lambda: (Sequential().embedding(7, 8).residual(
        Sequential().layer_norm().multi_head_attention(2, 8)).global_avg_pool().dense(3)),
    # the tape every batch: a dropout mask is a constant of the pass
    "dropout": lambda: Sequential().dense(8).relu().dense(8).relu().dropout(0.25).dense(3),
}


def _network(kind: str = "dropout"):
    shape = Shape(5, 1) if kind.startswith("conv") else Shape(5)  # (a series of 5 steps)
    return NETWORKS[kind]().lower(shape, RandomStream(0))


def _data(n: int = 70, ids: bool = False):
    generator = np.random.default_rng(2)
    x = generator.integers(0, 7, (n, 5)) if ids else generator.standard_normal((n, 5))
    return x, generator.integers(0, 3, n)


def _fit(monkeypatch, general: bool, network=None, **options):
    """Train a few steps; (weights by name, history without timings, general passes run,
    replays run)."""
    passes, replays = [], []
    real, replay = training.forward_backward, Plan.replay

    def counted(*args):
        passes.append(1)
        return real(*args)

    def replayed(*args):
        replays.append(1)
        return replay(*args)

    monkeypatch.setattr(training, "forward_backward", counted)
    monkeypatch.setattr(Plan, "replay", replayed)
    if general:
        monkeypatch.setattr(training, "lean_pass", lambda run, batch, plans: None)
    network = network or _network()
    ids = options.pop("ids", False)
    x, y = _data(ids=ids)
    shape = getattr(network, "input_shape", (5,))
    x = x if ids else x.astype(options.pop("dtype", np.float32)).reshape(len(x), *shape)
    y = (y, y) if options.pop("two answers", False) else y
    options = {"loss": CrossEntropy(), "batch_size": 16, "epochs": 2, "progress": False,
               **options}
    history = network.fit(x, y, optimizer=Adam(1e-2), **options)
    monkeypatch.undo()
    weights = {name: p._data.copy() for name, p in network.named_parameters()}
    logs = [{k: v for k, v in epoch.items() if k != "seconds"} for epoch in history]
    return weights, logs, len(passes), len(replays)


def _same(first, second) -> None:
    assert first[1] == second[1]
    assert first[0].keys() == second[0].keys()
    for name in first[0]:
        np.testing.assert_array_equal(first[0][name], second[0][name], err_msg=name)


@pytest.mark.parametrize("use_numba", [False, True])
@pytest.mark.parametrize("kind", list(NETWORKS))
def test_lean_pass_trains_bit_for_bit_as_the_general_path(monkeypatch, use_numba, kind):
    if use_numba:
        pytest.importorskip("numba")
    ids = kind.startswith("embedding")
    with compiled() if use_numba else _nothing():
        lean = _fit(monkeypatch, False, _network(kind), validation_split=0.2, ids=ids)
        general = _fit(monkeypatch, True, _network(kind), validation_split=0.2, ids=ids)
    assert lean[2] == 0 and general[2] > 0  # the lean pass ran every batch, then none
    # 56 rows in batches of 16: each epoch records its first batch and its last (8 rows)
    assert lean[3] == (2 * 2 if kind != "dropout" else 0) and general[3] == 0
    _same(lean, general)


class _Network(type(_network())):
    """A network of another type: its own forward might do anything."""


def _frozen(network):
    network.steps[0].weight.requires_grad = False
    return network


PLAN_OFF = {
    "dropout": lambda: (_network("dropout"), {}),
    "batch norm": lambda: (Sequential().dense(8).batch_norm().relu().dense(3)
                           .lower(Shape(5), RandomStream(0)), {}),
    "a subclass": lambda: (_Network(_network("dense").spec, Shape(5), _network("dense").steps),
                           {}),
    "another loss": lambda: (_network("dense"), {"loss": _OwnLoss()}),
    "a mask": lambda: (Sequential().embedding(7, 8, padding_index=0).global_avg_pool().dense(3)
                       .lower(Shape(5), RandomStream(0)), {"ids": True}),
}


class _OwnLoss(type(CrossEntropy())):
    """A loss of the user's: its __call__ might do anything."""


@pytest.mark.parametrize("case", list(PLAN_OFF))
def test_each_condition_turns_the_replay_off(monkeypatch, case):
    network, options = PLAN_OFF[case]()
    found = _fit(monkeypatch, False, network, **options)
    assert found[2] == 0 and found[3] == 0  # the lean pass, on the tape every batch


def test_float64_input_is_replayed_as_the_tape_casts_it(monkeypatch):
    lean = _fit(monkeypatch, False, _network("dense"), dtype=np.float64)
    general = _fit(monkeypatch, True, _network("dense"), dtype=np.float64)
    assert lean[3] > 0
    _same(lean, general)


def test_a_frozen_parameter_is_a_constant_of_the_plan(monkeypatch):
    lean = _fit(monkeypatch, False, _frozen(_network("dense")))
    general = _fit(monkeypatch, True, _frozen(_network("dense")))
    assert lean[3] > 0
    _same(lean, general)


def test_a_pass_under_unfused_replays_the_unfused_primitives(monkeypatch):
    with unfused():
        lean = _fit(monkeypatch, False, _network("dense"))
        general = _fit(monkeypatch, True, _network("dense"))
    assert lean[3] > 0
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


def test_the_kernel_split_replays_as_its_tape(monkeypatch):
    """Inside data_parallel(2, split="kernels") a batch runs whole on the calling thread (its
    rules hand work to the worker): the lean pass and its replay run there too."""
    with data_parallel(2, split="kernels"):
        lean = _fit(monkeypatch, False, _network("dense"))
        general = _fit(monkeypatch, True, _network("dense"))
    assert lean[2] == 0 and lean[3] > 0
    _same(lean, general)


def _changing(change):
    """(a dense network, its first layer, a source of its four batches of 16 that calls
    change(layer) before the third, as a user's generator may)."""
    network = _network("dense")
    x, y = _data(64)
    x = x.astype(np.float32)
    layer = dict(network.named_modules())["0"]

    def batches():
        for i in range(4):
            if i == 2:
                change(layer)
            yield x[16 * i:16 * (i + 1)], y[16 * i:16 * (i + 1)]

    return network, layer, batches


def _replacing(general: bool, monkeypatch):
    """Train from batches whose source swaps a layer's weight for a new Parameter mid-epoch
    (a user's generator may): (the history, the weight the network ends with)."""
    from deepsharp.module import Parameter

    network, layer, batches = _changing(lambda layer: setattr(
        layer, "weight", Parameter(np.full_like(layer.weight._data, 0.25))))
    if general:
        monkeypatch.setattr(training, "lean_pass", lambda run, batch, plans: None)
    history = network.fit(batches(), loss=CrossEntropy(), optimizer=Adam(1e-2), steps_per_epoch=4,
                          progress=False)
    monkeypatch.undo()
    return [{k: v for k, v in e.items() if k != "seconds"} for e in history], layer.weight._data


def test_a_parameter_replaced_between_batches_is_the_one_replayed(monkeypatch):
    """A plan holds the parameters it was recorded with: one replaced by a new Parameter (not
    written in place) makes the batch's key differ, so the tape runs with the new one."""
    lean, general = _replacing(False, monkeypatch), _replacing(True, monkeypatch)
    assert lean[0] == general[0]
    np.testing.assert_array_equal(lean[1], general[1])


@pytest.mark.parametrize("sequence", [False, True])
def test_the_replays_answers_are_the_losss_output_of_its_logits_bit_for_bit(monkeypatch,
                                                                            sequence):
    """A replayed cross-entropy hands its own softmax parts to the metrics (step_plan._ANSWERS):
    they are CrossEntropy.output of the replay's logits, every bit, rows (batch, classes) and
    series (batch, steps, classes) alike, wide logits included."""
    seen, replay = [], Plan.replay

    def kept(*args):
        found = replay(*args)
        seen.append(found)
        return found

    monkeypatch.setattr(Plan, "replay", kept)
    generator = np.random.default_rng(4)
    if sequence:
        network = Sequential().embedding(7, 8).dense(5).lower(Shape(6), RandomStream(0))
        x, y = generator.integers(0, 7, (48, 6)), generator.integers(0, 5, (48, 6))
    else:
        network = Sequential().dense(8).relu().dense(5).lower(Shape(4), RandomStream(0))
        x = (generator.standard_normal((48, 4)) * 30).astype(np.float32)
        y = generator.integers(0, 5, 48)
    network.fit(x, y, loss=CrossEntropy(), optimizer=Adam(1e-2), batch_size=8, epochs=2,
                progress=False)
    assert len(seen) == 2 * 5
    for _, logits, answers in seen:
        expected = CrossEntropy().output(logits)
        assert answers.shape == expected.shape and answers.dtype == expected.dtype
        assert answers.tobytes() == expected.tobytes()


def test_a_parameter_added_between_batches_turns_the_replay_off(monkeypatch):
    """The replay's check compares every module's tables of parameters and children with what
    they held when the epoch began: a parameter added to a layer mid-epoch (so that
    named_parameters gives one more) sends the later batches to the tape."""
    from deepsharp.module import Parameter

    replays, replay = [], Plan.replay

    def counted(*args):
        replays.append(1)
        return replay(*args)

    monkeypatch.setattr(Plan, "replay", counted)
    network, _, batches = _changing(lambda layer: setattr(
        layer, "extra", Parameter(np.zeros(3, np.float32))))
    network.fit(batches(), loss=CrossEntropy(), optimizer=Adam(1e-2), steps_per_epoch=4,
                progress=False)
    assert len(replays) == 1  # batch 2 only: batch 1 recorded the plan, 3 and 4 took the tape
