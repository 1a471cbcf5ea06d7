"""Optimizers, clipping and schedules against PyTorch (fixtures from scripts/make_torch_reference.py)
and against the update rules worked by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest

from deepsharp import SGD, Adam, AdamW, Cosine, ExponentialDecay, LinearWarmup, RMSprop, StepDecay
from deepsharp.errors import SpecError
from deepsharp.module import Parameter
from tests.support.fixtures import torch_reference

NAMES = {"SGD": SGD, "Adam": Adam, "AdamW": AdamW, "RMSprop": RMSprop, "StepDecay": StepDecay,
         "ExponentialDecay": ExponentialDecay, "Cosine": Cosine, "LinearWarmup": LinearWarmup}


def _steps(optimizer, p0, grads, dtype=np.float64):
    p = Parameter(np.array(p0, dtype))
    p._data = np.array(p0, dtype)
    optimizer.bind([("p", p)])
    out = []
    for g in grads:
        p.grad = np.array(g, dtype)
        optimizer.step()
        out.append(p._data.copy())
    return out


@pytest.mark.parametrize("config", list(torch_reference()["optimizers"]))
def test_two_steps_match_pytorch(config):
    ref = torch_reference()
    optimizer = eval(config, NAMES)  # the fixture's keys are our constructor calls
    got = _steps(optimizer, ref["p0"], [ref["g1"], ref["g2"]])
    np.testing.assert_allclose(got, ref["optimizers"][config], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("config", list(torch_reference()["optimizers"]))
def test_two_steps_in_float32_stay_close(config):
    ref = torch_reference()
    got = _steps(eval(config, NAMES), ref["p0"], [ref["g1"], ref["g2"]], np.float32)
    assert got[-1].dtype == np.float32
    np.testing.assert_allclose(got, ref["optimizers"][config], rtol=1e-5, atol=1e-6)


def test_sgd_momentum_by_hand():
    # b1 = g1; p1 = p0 - lr b1; b2 = m b1 + g2; p2 = p1 - lr b2
    p1, p2 = _steps(SGD(lr=0.1, momentum=0.9), [1.0], [[0.5], [-1.0]])
    assert p1[0] == pytest.approx(1.0 - 0.1 * 0.5)
    assert p2[0] == pytest.approx(0.95 - 0.1 * (0.9 * 0.5 - 1.0))


def test_adam_by_hand():
    # step 1: m = 0.1 g, v = 0.001 g^2, m^ = g, v^ = g^2: p -= lr g / (|g| + eps)
    (p1,) = _steps(Adam(lr=0.01), [2.0], [[0.5]])
    assert p1[0] == pytest.approx(2.0 - 0.01 * 0.5 / (0.5 + 1e-8))


def test_clip_norm_matches_pytorch():
    ref = torch_reference()["clip"]
    a, b = Parameter(np.zeros(3)), Parameter(np.zeros(2))
    a.grad, b.grad = np.array([3.0, -4.0, 1.0]), np.array([2.0, 2.0])
    optimizer = SGD(lr=0.0, clip_norm=2.5).bind([("a", a), ("b", b)])
    assert optimizer.clip() == pytest.approx(ref["norm"])
    np.testing.assert_allclose(a.grad, ref["grads"][0], rtol=1e-6)
    np.testing.assert_allclose(b.grad, ref["grads"][1], rtol=1e-6)


@pytest.mark.parametrize("config", list(torch_reference()["schedules"]))
def test_schedules_match_pytorch(config):
    schedule = eval(config, NAMES)
    rates = [schedule.rate(0.5, t) for t in range(12)]
    np.testing.assert_allclose(rates, torch_reference()["schedules"][config], rtol=1e-12)


def test_warmup_then_cosine():
    schedule = LinearWarmup(length=2, start=0.0, then=Cosine(period=4))
    rates = [schedule.rate(1.0, t) for t in range(7)]
    np.testing.assert_allclose(rates, [0, 0.5, 1, (1 + math.cos(math.pi / 4)) / 2, 0.5,
                                       (1 + math.cos(3 * math.pi / 4)) / 2, 0], atol=1e-12)


def test_schedule_sets_the_rate_per_epoch_or_step():
    by_epoch = SGD(lr=1.0, schedule=StepDecay(every=1, gamma=0.5))
    assert by_epoch.scheduled(epoch=2, step=50) == 0.25
    by_step = SGD(lr=1.0, schedule=ExponentialDecay(gamma=0.5, unit="step"))
    assert by_step.scheduled(epoch=2, step=3) == 0.125


def test_frozen_parameters_are_not_trained():
    frozen, live = Parameter(np.ones(2), frozen=True), Parameter(np.ones(2))
    optimizer = SGD(lr=0.1).bind([("frozen", frozen), ("live", live)])
    assert [n for n, _ in optimizer.params] == ["live"]


@pytest.mark.parametrize("make, message", [
    (lambda: SGD(lr=-1), "SGD: lr must be >= 0.0, received -1"),
    (lambda: SGD(lr=0.1, nesterov=True), "SGD: nesterov needs a positive momentum"),
    (lambda: Adam(betas=(1.0, 0.9)), "Adam: betas[0] must be >= 0.0 and < 1.0, received 1.0"),
    (lambda: RMSprop(alpha=-0.1), "RMSprop: alpha must be >= 0.0, received -0.1"),
    (lambda: AdamW(clip_norm=0), "AdamW: clip_norm must be > 0.0, received 0"),
    (lambda: StepDecay(every=0), "StepDecay: every must be a positive integer, received 0"),
    (lambda: LinearWarmup(length=2, start=2), "LinearWarmup: start must lie in [0, 1], received 2"),
])
def test_bad_settings_are_named(make, message):
    with pytest.raises(SpecError) as caught:
        make()
    assert message in str(caught.value)


def test_an_adam_shared_by_two_networks_trains_each_with_the_moments_by_path():
    """One Adam fitted on one network, then on another of the same layout (bound to its
    parameters, same paths): the second fit runs, with the numbers of a new Adam given the first
    one's state (`load_state_arrays`: the state is held by parameter path)."""
    from deepsharp import CrossEntropy, RandomStream, Sequential, Shape

    def network(seed: int):
        return Sequential().dense(8).relu().dense(3).lower(Shape(5), RandomStream(seed))

    generator = np.random.default_rng(0)
    x = generator.standard_normal((24, 5)).astype(np.float32)
    y = generator.integers(0, 3, 24)
    options = dict(loss=CrossEntropy(), batch_size=8, epochs=2, seed=1, progress=False)
    first, shared = network(0), Adam(1e-2)
    first.fit(x, y, optimizer=shared, **options)
    carried = Adam(1e-2)
    carried.bind(network(1).trainable_parameters())
    carried.load_state_arrays({k: v.copy() for k, v in shared.state_arrays().items()})
    second, again = network(1), network(1)
    second.fit(x, y, optimizer=shared, **options)
    again.fit(x, y, optimizer=carried, **options)
    for (name, p), (_, q) in zip(second.named_parameters(), again.named_parameters()):
        assert np.array_equal(p._data, q._data), name


def test_an_adam_subclass_with_its_own_update_steps_by_that_update():
    """A user's Adam whose `update` does more (here: the parameter clamped after Adam's step):
    every step runs it, as `Optimizer.step` does, with several parameters too (the step over
    flat buffers is Adam's own update only)."""

    class Clamped(Adam):
        def update(self, p, g, state):
            super().update(p, g, state)
            np.clip(p, -0.05, 0.05, out=p)

    generator = np.random.default_rng(0)
    params = [Parameter(generator.standard_normal(shape).astype(np.float32))
              for shape in ((4, 3), (3,))]
    optimizer = Clamped(0.5)
    optimizer.bind(params)
    for _ in range(3):
        optimizer.zero_grad()
        for p in params:
            p.grad = generator.standard_normal(p.shape).astype(np.float32)
        optimizer.step()
    for p in params:
        assert np.abs(p._data).max() <= 0.05


@pytest.mark.parametrize("change", ["wider", "float64"])
def test_state_kept_for_other_parameters_of_the_same_paths_is_refused(change):
    """An optimizer fitted on one network, then fitted on another whose parameters of the same
    paths differ in shape or float type: its moments cannot be those parameters' (the step would
    fail in numpy, or mix float types); fit refuses, naming the path."""
    from deepsharp import CrossEntropy, RandomStream, Sequential, Shape
    from deepsharp.errors import StateError

    generator = np.random.default_rng(0)
    x = generator.standard_normal((24, 5)).astype(np.float32)
    y = generator.integers(0, 3, 24)
    options = dict(loss=CrossEntropy(), batch_size=8, epochs=1, progress=False)
    shared = Adam(1e-2)
    Sequential().dense(8).relu().dense(3).lower(Shape(5), RandomStream(0)).fit(
        x, y, optimizer=shared, **options)
    other = Sequential().dense(16 if change == "wider" else 8).relu().dense(3).lower(
        Shape(5), RandomStream(0))
    if change == "float64":
        for _, p in other.named_parameters():
            p._data = p._data.astype(np.float64)
    with pytest.raises(StateError, match=r"0\.weight"):
        other.fit(x.astype(other.parameters()[0]._data.dtype), y, optimizer=shared, **options)
