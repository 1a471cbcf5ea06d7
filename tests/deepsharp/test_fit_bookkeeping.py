"""fit's per-batch bookkeeping made cheaper without changing what it gives: counting metrics
updated for a run of batches at once, a user's metric after each batch, the run context, and the
fast paths of the batch structures."""

from __future__ import annotations

import numpy as np
import pytest

from deepsharp import Adam, BinaryCrossEntropy, CrossEntropy, RandomStream, Sequential, Shape
from deepsharp import epoch
from deepsharp.batches import first_leaf, leaves, map_leaves
from deepsharp.metrics import Accuracy, Metric, TopKAccuracy
from deepsharp.run import current_run, running


def _fit(metrics, loss=None, y=None, epochs: int = 2, **options):
    generator = np.random.default_rng(5)
    x = generator.standard_normal((90, 6)).astype(np.float32)
    y = generator.integers(0, 4, 90) if y is None else y
    width = y.shape[-1] if y.ndim == 2 else 4  # (0/1 answers per label, or one of 4 classes)
    network = (Sequential().dense(8).relu().dense(width)
               .lower(Shape(6), RandomStream(0)))
    history = network.fit(x, y, loss=loss or CrossEntropy(), optimizer=Adam(1e-2),
                          batch_size=8, epochs=epochs, metrics=metrics, progress=False,
                          validation_split=0.2, **options)
    return [{k: v for k, v in e.items() if k != "seconds"} for e in history]


@pytest.mark.parametrize("held", [1 << 20, 1])  # one run an epoch; a run every batch
@pytest.mark.parametrize("multilabel", [False, True])
def test_counting_metrics_held_for_a_run_give_each_batchs_history(monkeypatch, held,
                                                                  multilabel):
    """Accuracy and top-k accuracy updated for a run of batches at once (epoch._COUNTING):
    the history is the one of updates after each batch, value for value."""
    metrics = [Accuracy()] if multilabel else [Accuracy(), TopKAccuracy(k=2)]
    options = {}
    if multilabel:
        y = (np.random.default_rng(6).random((90, 3)) > 0.5).astype(np.float32)
        options = {"loss": BinaryCrossEntropy(), "y": y}
    monkeypatch.setattr(epoch, "HELD_BYTES", held)
    run = _fit(metrics, **options)
    monkeypatch.setattr(epoch, "_COUNTING", ())
    each = _fit(metrics, **options)
    assert run == each
    assert {"accuracy", "val_accuracy"} <= set(run[0])


STEPS: list[int] = []  # optimizer steps run (a module's list: fit works on copies of metrics)


class _Seen(Metric):
    """A user's metric: it records how many optimizer steps had run at each update."""

    name = "seen"

    def reset(self) -> None:
        self.at: list[int] = []

    def update(self, rows) -> None:
        self.at.append(len(STEPS))

    def result(self) -> float:
        return float(self.at == list(range(self.at[0], self.at[0] + len(self.at))))


def test_a_users_metric_is_updated_after_each_batch(monkeypatch):
    """Beside a counting metric, a metric of the user's own still sees each batch right after
    its pass, before the next step (nothing is held): batch k after k steps."""
    real = Adam.step

    def counted(self):
        STEPS.append(1)
        return real(self)

    STEPS.clear()
    monkeypatch.setattr(Adam, "step", counted)
    history = _fit([Accuracy(), _Seen()], epochs=2)
    assert [e["seen"] for e in history] == [1.0, 1.0] and len(STEPS) == 2 * 9


def test_running_sets_the_run_for_its_block_and_restores_it():
    from deepsharp.random import RandomStream as Stream

    outside = current_run().step
    with running(Stream(1), 7) as first:
        assert current_run() is first and first.step == 7
        with pytest.raises(ValueError):
            with running(Stream(2), 8, (slice(0, 2), 4)) as inner:
                assert current_run() is inner and inner.rows == (slice(0, 2), 4)
                raise ValueError("inside")
        assert current_run() is first
    assert current_run().step != 7 and outside >= 0


@pytest.mark.parametrize("value", [
    np.arange(6).reshape(3, 2), (np.arange(3), np.arange(4)), [np.arange(3), np.arange(2)],
    {"a": np.arange(2), "b": np.arange(3)}, [1, 2, 3], (np.arange(2),)])
def test_the_structures_fast_paths_are_leaves(value):
    """map_leaves and first_leaf take a plain array or tuple without asking the Mapping ABC:
    the same as through leaves."""
    assert first_leaf(value) is leaves(value)[0][1]
    mapped = map_leaves(lambda a: ("seen", id(a)), value)
    parts = [mapped[k] for k in value] if isinstance(value, dict) else (
        [mapped] if leaves(value) == [("", value)] else list(mapped))
    assert parts == [("seen", id(a)) for _, a in leaves(value)]
    if isinstance(value, (tuple, dict)):
        assert type(mapped) is type(value)


class _MyCrossEntropy(CrossEntropy):
    """A user's loss (its `output` may hand back an array it reuses)."""


@pytest.mark.parametrize("loss, held", [(CrossEntropy(), True), (_MyCrossEntropy(), False)])
def test_only_the_librarys_losses_have_their_answers_held(monkeypatch, loss, held):
    sizes, real = [], epoch.Epoch._update

    def seen(self):
        sizes.append(len(self.held))
        return real(self)

    monkeypatch.setattr(epoch.Epoch, "_update", seen)
    _fit([Accuracy()], loss=loss, y=np.random.default_rng(7).integers(0, 4, 90), epochs=1)
    assert (max(sizes) > 1) is held
