"""Adam's step begun on the worker before the backward pass ends (deepsharp.step_ahead), the
deferred work it rides on (two_threads.defer, idle_point) and numpy's product without the GIL
(deepsharp._cblas): the numbers of one step, bit for bit, and the optimizer as it was whenever the
step is not taken."""

from __future__ import annotations

import sys
import threading

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

from deepsharp import Adam, AdamW, CrossEntropy, RandomStream, Sequential, Shape, _cblas
from deepsharp import step_ahead
from deepsharp.compiled import available, compiled
from deepsharp.errors import OpError
from deepsharp.metrics import Metric
from deepsharp.parallel import data_parallel
from deepsharp.tensors.ops import two_threads

NETWORKS = {
    # a first conv block of one channel (its kernel's gradient: one product on the caller)
    "cnn": (lambda: Sequential().conv2d(6, 3).relu().max_pool2d(2).flatten().dense(16).relu()
            .dense(3), Shape(10, 10, 1)),
    # a first dense layer (its weight's gradient alone: nothing needs its input's)
    "mlp": (lambda: Sequential().dense(24).relu().dense(24).relu().dense(3), Shape(12)),
}


def _data(kind: str, n: int = 48):
    generator = np.random.default_rng(7)
    shape = NETWORKS[kind][1]
    return (generator.standard_normal((n, *shape)).astype(np.float32),
            generator.integers(0, 3, n))


def _watched(kind: str, monkeypatch):
    """(network, optimizer, before, begun) for a test of a failing step: every step begun ahead,
    `before` gets the state at each batch's start (after zero_grad), `begun` each begin's
    result."""
    monkeypatch.setattr(step_ahead, "MIN_VALUES", 1)
    make, shape = NETWORKS[kind]
    network = make().lower(shape, RandomStream(0))
    optimizer, before, begun = Adam(1e-2), [], []
    zero_grad = optimizer.zero_grad
    optimizer.zero_grad = lambda: (zero_grad(), before.append(_state(network, optimizer)))
    begin = step_ahead.begin
    monkeypatch.setattr(step_ahead, "begin", lambda *a: (lambda r: begun.append(r) or r)(
        begin(*a)))
    return network, optimizer, before, begun


def _fit_fails(kind: str, network, optimizer, error: type, match: str, **options) -> None:
    """Two epochs of `kind`'s data inside data_parallel(2, split="kernels") (BLAS at one
    thread), which must raise `error` (matching `match`)."""
    x, y = _data(kind)
    with threadpool_limits(1, "blas"), data_parallel(2, split="kernels"), \
            pytest.raises(error, match=match):
        network.fit(x, y, loss=CrossEntropy(), optimizer=optimizer, batch_size=12, epochs=2,
                    seed=3, progress=False, **options)


def _train(kind: str, monkeypatch, ahead: bool = True, optimizer=None, epochs: int = 3,
           batch_size: int = 12, frozen: str | None = None, numba: bool = False):
    """(the network, its optimizer, the history, steps begun ahead and taken) after training
    inside data_parallel(2, split="kernels"), with steps begun ahead or not."""
    monkeypatch.setattr(step_ahead, "MIN_VALUES", 1)  # small networks: begin every step ahead
    begun, taken = [], []
    begin, commit = step_ahead.begin, step_ahead.commit
    monkeypatch.setattr(step_ahead, "begin", lambda *a: (
        begun.append(1), begin(*a) if ahead else None)[1])
    monkeypatch.setattr(step_ahead, "commit", lambda *a: (
        lambda done: taken.append(done) or done)(commit(*a)))
    make, shape = NETWORKS[kind]
    network = make().lower(shape, RandomStream(0))
    if frozen is not None:
        dict(network.named_parameters())[frozen].requires_grad = False
    optimizer = optimizer or Adam(1e-2)
    x, y = _data(kind)
    with threadpool_limits(1, "blas"), data_parallel(2, split="kernels"), compiled(numba):
        history = network.fit(x, y, loss=CrossEntropy(), optimizer=optimizer,
                              batch_size=batch_size, epochs=epochs, seed=3, progress=False)
    monkeypatch.undo()
    return network, optimizer, history, len(begun), taken


def _state(network, optimizer) -> dict[str, np.ndarray]:
    found = {name: np.array(p._data) for name, p in network.named_parameters()}
    found.update({f"adam/{k}": np.array(v) for k, v in optimizer.state_arrays().items()})
    return found


def _same(first: dict, second: dict) -> None:
    assert first.keys() == second.keys()
    for name, value in first.items():
        assert np.array_equal(value, second[name]), name


@pytest.mark.parametrize("numba", [False, True])
@pytest.mark.parametrize("kind", sorted(NETWORKS))
def test_steps_begun_ahead_train_the_numbers_of_steps_taken_at_once(kind, numba, monkeypatch):
    """Inside data_parallel(2, split="kernels") every replayed batch begins its step on the worker
    while the first layer's backward runs, and the step finishes it: weights, Adam's moments and
    step counts, and the history, bit for bit those of the same training with no step begun
    ahead (the same splits otherwise: any BLAS), with numpy's passes or the compiled kernels."""
    assert not numba or available()
    network, optimizer, history, begun, taken = _train(kind, monkeypatch, numba=numba)
    plain, plain_optimizer, plain_history, _, plain_taken = _train(kind, monkeypatch, ahead=False,
                                                                   numba=numba)
    # 4 batches an epoch, the first of each epoch recorded through the tape
    assert begun == 9 and taken == [True] * 9 and plain_taken == []
    _same(_state(network, optimizer), _state(plain, plain_optimizer))
    assert [{k: v for k, v in e.items() if k != "seconds"} for e in history] == [
        {k: v for k, v in e.items() if k != "seconds"} for e in plain_history]


def test_a_frozen_parameter_among_the_final_ones_is_left_out(monkeypatch):
    """A later layer's frozen weight (a constant of the plan, no optimizer's): the others' steps
    are begun ahead all the same, with the numbers of steps taken at once."""
    name = [n for n, _ in NETWORKS["mlp"][0]().lower(NETWORKS["mlp"][1], RandomStream(0))
            .named_parameters()][2]  # the second dense layer's weight
    network, optimizer, _, _, taken = _train("mlp", monkeypatch, frozen=name)
    plain, plain_optimizer, *_ = _train("mlp", monkeypatch, ahead=False, frozen=name)
    assert taken == [True] * 9
    _same(_state(network, optimizer), _state(plain, plain_optimizer))


def test_the_part_runs_on_the_worker_while_the_first_layer_runs_back(monkeypatch):
    """The deferred part starts at the first layer's idle point (its kernel's product, on the
    caller alone) and runs on the worker thread."""
    threads, update = [], step_ahead._update
    monkeypatch.setattr(step_ahead, "_update", lambda *a: (
        threads.append(threading.current_thread().name), update(*a))[1])
    _train("cnn", monkeypatch, epochs=2)
    assert "deepsharp-parallel" in threads  # (the first layer's places: on the caller)
    assert "MainThread" in threads


def test_a_failed_backward_pass_leaves_the_optimizer_as_it_was(monkeypatch):
    """The first layer's backward fails after the part began (in its kernel's product, the
    part on the worker): fit raises the error, and the parameters, Adam's moments and step
    counts are what they were before that batch."""
    network, optimizer, before, begun = _watched("cnn", monkeypatch)
    product, calls = _cblas.matmul, []

    def failing(a, b):  # the first layer's kernel gradient, after its idle point
        calls.append(1)
        if len(calls) == 7:  # epoch 2, its third batch: a replay, the part begun
            raise OpError("conv_relu_max_pool: a backward pass that fails")
        return product(a, b)

    monkeypatch.setattr(_cblas, "matmul", failing)
    _fit_fails("cnn", network, optimizer, OpError, "a backward pass that fails")
    assert begun[-1] is not None and begun[-1].deferred._job is not None  # it ran, then failed
    assert getattr(optimizer, "_ahead", None) is None
    _same(_state(network, optimizer), before[-1])


def test_a_part_that_fails_on_the_worker_fails_the_step_and_changes_nothing(monkeypatch):
    """An error in the part (raised on the worker while it updates its places) is the step's
    error, raised by fit, and the moments it had updated are put back: the state is that of
    before the batch."""
    network, optimizer, before, _ = _watched("mlp", monkeypatch)
    update, calls = step_ahead._update, []

    def failing(*args):
        if threading.current_thread().name == "deepsharp-parallel":
            calls.append(1)
            if len(calls) == 4:  # its second run (the first updated): those moments put back
                raise FloatingPointError("overflow in the part")
        update(*args)

    monkeypatch.setattr(step_ahead, "_update", failing)
    def two_runs(flat, params, final):  # the later layers' places in two runs
        ends = np.cumsum(flat.sizes).tolist()
        return [2, 3, 4, 5], [(ends[1], ends[3]), (ends[3], ends[5])], ([0, 1], [(0, ends[1])])

    monkeypatch.setattr(step_ahead, "_places", two_runs)
    _fit_fails("mlp", network, optimizer, FloatingPointError, "overflow in the part")
    _same(_state(network, optimizer), before[-1])


def test_a_step_whose_rate_changed_after_its_part_began_runs_as_usual(monkeypatch):
    """A rate set between the backward pass and the step (here by a wrapper of step): the part's
    moments are put back and the step runs with the new rate, as it does with no step begun."""
    def changing(optimizer):
        step, count = optimizer.step, []

        def step_at_a_new_rate() -> None:
            count.append(1)
            if len(count) % 3 == 0:
                optimizer.lr *= 0.5
            step()

        optimizer.step = step_at_a_new_rate
        return optimizer

    network, optimizer, _, begun, taken = _train("mlp", monkeypatch, optimizer=changing(Adam(1e-2)))
    plain, plain_optimizer, *_ = _train("mlp", monkeypatch, ahead=False,
                                        optimizer=changing(Adam(1e-2)))
    assert False in taken and True in taken
    _same(_state(network, optimizer), _state(plain, plain_optimizer))


def test_no_step_begins_ahead_with_clipping_or_weight_decay(monkeypatch):
    """Clipping needs every gradient first, and weight decay (AdamW's included) reads the
    parameters: such steps run whole, after the backward pass."""
    for optimizer in (Adam(1e-2, clip_norm=1.0), Adam(1e-2, weight_decay=1e-2), AdamW(1e-2)):
        *_, taken = _train("mlp", monkeypatch, optimizer=optimizer, epochs=2)
        assert taken == []


def test_deferred_work_runs_on_the_worker_from_an_idle_point_only():
    """defer(fn): outside data_parallel(2, split="kernels") never handed over (settled() says
    so, fn never runs); inside, handed to the worker at the next idle point, settled() waiting for
    it and raising its error."""
    ran = []
    outside = two_threads.defer(lambda: ran.append(threading.current_thread().name))
    two_threads.idle_point()
    assert outside.settled() is False and ran == []
    with data_parallel(2, split="kernels"):
        inside = two_threads.defer(lambda: ran.append(threading.current_thread().name))
        assert ran == []
        two_threads.idle_point()
        assert inside.settled() is True and ran == ["deepsharp-parallel"]

        def fails():
            raise ValueError("deferred")

        failing = two_threads.defer(fails)
        two_threads.idle_point()
        with pytest.raises(ValueError, match="deferred"):
            failing.settled()
        late = two_threads.defer(lambda: ran.append("late"))
        assert late.settled() is False  # asked for before an idle point: never runs
        two_threads.idle_point()
    assert ran == ["deepsharp-parallel"]


LAYOUTS = [  # (m, k, n, a transposed, b transposed)
    (9, 43264, 32, True, False), (9, 500, 32, False, False), (2, 3, 2, False, False),
    (16, 300, 20, True, True), (64, 160, 128, False, True), (33, 7, 9, True, False),
]


@pytest.mark.parametrize("m, k, n, ta, tb", LAYOUTS)
def test_numpys_product_without_the_gil_gives_numpys_numbers(m, k, n, ta, tb):
    generator = np.random.default_rng(m * k + n)
    a = generator.standard_normal((k, m) if ta else (m, k)).astype(np.float32)
    b = generator.standard_normal((n, k) if tb else (k, n)).astype(np.float32)
    a, b = (a.T if ta else a), (b.T if tb else b)
    assert _cblas._function() is not None  # numpy's bundled OpenBLAS found and checked here
    out = _cblas.matmul(a, b)
    assert out.dtype == np.float32 and out.flags.c_contiguous
    assert np.array_equal(out, np.matmul(a, b))


def test_other_products_are_numpys_own():
    """A single row or column (numpy's matrix-vector routine), float64, strides BLAS cannot take,
    and a product of a matrix and its own transpose (numpy's syrk): np.matmul itself."""
    generator = np.random.default_rng(0)
    a = generator.standard_normal((6, 40)).astype(np.float32)
    b = generator.standard_normal((40, 5)).astype(np.float32)
    for x, y in ((a[:1], b), (a, b[:, :1]), (a.astype(np.float64), b.astype(np.float64)),
                 (a[:, ::2], b[::2]), (a, a.T)):
        assert np.array_equal(_cblas.matmul(x, y), np.matmul(x, y))


def test_the_product_lets_other_threads_run():
    """A product of 288 values over a million rows, which np.matmul computes holding the GIL:
    another thread runs while it runs. With a long switch interval no thread takes the GIL from
    another: the counting thread counts only if the product lets go of it."""
    generator = np.random.default_rng(1)
    a = generator.random((1_000_000, 9), np.float32).T
    b = generator.random((1_000_000, 32), np.float32)
    started, stop, count = threading.Event(), [], [0]
    assert _cblas._function() is not None  # (its probes run first: they let go of the GIL too)

    def counting() -> None:
        started.wait()
        while not stop:
            count[0] += 1

    interval = sys.getswitchinterval()
    thread = threading.Thread(target=counting)
    sys.setswitchinterval(0.2)
    try:
        thread.start()
        with threadpool_limits(1, "blas"):
            started.set()
            before = count[0]
            _cblas.matmul(a, b)
            during = count[0] - before
        stop.append(1)
        thread.join()
    finally:
        sys.setswitchinterval(interval)
    assert during > 0


class _Failing(Metric):
    """A user's metric whose update fails at its n-th batch (after the pass, before the step)."""

    name = "failing"

    def __init__(self, at: int, error: type = ValueError) -> None:
        self.at, self.error = at, error

    def reset(self) -> None:
        self.seen = 0

    def update(self, rows) -> None:
        self.seen += 1
        if self.seen == self.at:
            raise self.error("the metric fails")

    def result(self) -> float:
        return 0.0


@pytest.mark.parametrize("error", [ValueError, KeyboardInterrupt])
def test_an_error_between_the_pass_and_the_step_leaves_the_optimizer_as_it_was(error,
                                                                               monkeypatch):
    """A step begun ahead, then an error before `step()` (a user's metric fails, or the user
    interrupts): fit raises it, and Adam's moments and step counts are those of before that
    batch, the part taken back (no step half begun left pending)."""
    network, optimizer, before, begun = _watched("mlp", monkeypatch)
    _fit_fails("mlp", network, optimizer, error, "the metric fails",
               metrics=[_Failing(3, error)])  # (fails in a replay)
    assert begun and begun[-1] is not None and begun[-1].deferred._job is not None
    try:  # (the worker done with the part: nothing changes the state after this)
        begun[-1].deferred._job.result()
    except BaseException:
        pass
    _same(_state(network, optimizer), before[-1])
    assert getattr(optimizer, "_ahead", None) is None


@pytest.mark.parametrize("fill, kind", [(3e38, "overflow"), (np.inf, "invalid")])
def test_numpys_product_without_the_gil_reports_numpys_floating_point_errors(fill, kind):
    """A product that overflows (or makes inf - inf) is reported as np.matmul reports it: an
    error under np.errstate(all="raise"), a warning by default, with np.matmul's numbers."""
    a = np.full((3, 40), fill, np.float32)
    a[:, 1::2] *= -1 if kind == "invalid" else 1
    b = np.full((40, 4), 2, np.float32)
    assert _cblas._function() is not None
    with np.errstate(all="raise"):
        with pytest.raises(FloatingPointError, match=kind):
            np.matmul(a, b)
        with pytest.raises(FloatingPointError, match=kind):
            _cblas.matmul(a, b)
    with pytest.warns(RuntimeWarning, match=kind):
        out = _cblas.matmul(a, b)
    with np.errstate(all="ignore"):
        assert np.array_equal(out, np.matmul(a, b), equal_nan=True)


def test_a_step_interrupted_while_it_waits_for_its_part_leaves_the_optimizer_as_it_was(
        monkeypatch):
    """An interrupt (Ctrl-C) while the step waits for its part, the part still updating the
    moments on the worker: the moments are put back once the worker is done with them (not while
    it still writes them), then the interrupt is raised: the state of before the batch."""
    network, optimizer, before, begun = _watched("mlp", monkeypatch)
    update, release, blocked = step_ahead._update, threading.Event(), threading.Event()

    def slow(*args):  # the third part begun (a replay) waits on the worker until released
        if threading.current_thread().name == "deepsharp-parallel" and len(begun) == 3:
            blocked.set()
            release.wait(10)
        update(*args)

    result = two_threads.Job.result

    def interrupted(job):  # the step's wait for that part: interrupted, then the part released
        if len(begun) == 3 and job is begun[-1].deferred._job and not release.is_set():
            blocked.wait(10)
            threading.Timer(0.2, release.set).start()
            raise KeyboardInterrupt("interrupted")
        return result(job)

    monkeypatch.setattr(step_ahead, "_update", slow)
    monkeypatch.setattr(two_threads.Job, "result", interrupted)
    _fit_fails("mlp", network, optimizer, KeyboardInterrupt, "interrupted")
    assert release.wait(10)
    monkeypatch.setattr(two_threads.Job, "result", result)
    begun[-1].deferred._job.result()  # (the worker done with the part)
    _same(_state(network, optimizer), before[-1])
