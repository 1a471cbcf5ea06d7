"""The fit loop: history, validation, early stopping, callbacks, refusals, progress, checkpoints,
and a stated accuracy on the bundled data."""

from __future__ import annotations

import numpy as np
import pytest

from deepsharp import (
    SGD, Adam, BinaryCrossEntropy, Callback, CrossEntropy, EarlyStopping, MeanSquaredError,
    RandomStream, Sequential, Shape, StepDecay,
)
from deepsharp.datasets import Standardizer, load_breast_cancer, split
from deepsharp.errors import SpecError, StateError, TargetError, TrainingError


def _data(n=120, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, 6)).astype(np.float32)
    y = (x[:, 0] - x[:, 1] + 0.5 * x[:, 2] > 0).astype(np.float32)
    return x, y


def _network(seed=1, dropout=0.2):
    return (Sequential().dense(16).relu().dropout(dropout).dense(1)
            .lower(Shape(6), RandomStream(seed)))


def test_history_holds_loss_metrics_validation_and_rate():
    x, y = _data()
    history = _network().fit(x[:90], y[:90], loss=BinaryCrossEntropy(),
                             optimizer=Adam(1e-2, schedule=StepDecay(2, 0.5)), epochs=5,
                             batch_size=16, validation=(x[90:], y[90:]))
    assert len(history) == 5
    assert set(history.keys()) >= {"epoch", "loss", "accuracy", "val_loss", "val_accuracy", "lr"}
    assert history["lr"] == [0.01, 0.01, 0.005, 0.005, 0.0025]
    assert history["loss"][-1] < history["loss"][0]


def test_training_is_reproducible_from_the_seed():
    x, y = _data()
    runs = []
    for _ in range(2):
        network = _network()
        network.fit(x, y, loss=BinaryCrossEntropy(), optimizer=SGD(0.1, momentum=0.9), epochs=3,
                    batch_size=10, seed=4)
        runs.append(network.state_dict())
    for key in runs[0]:
        np.testing.assert_array_equal(runs[0][key], runs[1][key])


@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")
def test_a_non_finite_loss_stops_naming_epoch_and_batch():
    x, y = _data()
    x[37, 0] = np.inf  # in the 4th batch of the unshuffled first epoch
    with pytest.raises(TrainingError, match="the loss became nan at epoch 1, batch 4"):
        _network().fit(x, y, loss=MeanSquaredError(), optimizer=SGD(0.1), epochs=2,
                       batch_size=10, shuffle=False)


def test_answers_are_checked_before_training():
    x, y = _data()
    network = _network()
    before = network.state_dict()
    with pytest.raises(TargetError, match="training data, examples 0 to 119: BinaryCrossEntropy: answers must lie in"):
        network.fit(x, y * 3, loss=BinaryCrossEntropy(), optimizer=SGD(0.1))
    with pytest.raises(TargetError, match="training data has 120 examples \\(x\\) but y has 119"):
        network.fit(x, y[:-1], loss=BinaryCrossEntropy(), optimizer=SGD(0.1))
    with pytest.raises(TargetError, match="validation data, examples 0 to 4: .*do not match"):
        network.fit(x, y, loss=BinaryCrossEntropy(), optimizer=SGD(0.1),
                    validation=(x[:5], np.zeros((5, 2))))
    for key, value in network.state_dict().items():
        np.testing.assert_array_equal(value, before[key])


@pytest.mark.parametrize("options, message", [
    ({"epochs": 0}, "fit: epochs must be a positive integer, received 0"),
    ({"batch_size": -1}, "fit: batch_size must be a positive integer or None, received -1"),
    ({"loss": "mse"}, "fit: loss must be a deepsharp Loss, received 'mse'"),
])
def test_bad_fit_options_are_named(options, message):
    x, y = _data()
    kwargs = {"loss": MeanSquaredError(), "optimizer": SGD(0.1), **options}
    with pytest.raises(SpecError) as caught:
        _network().fit(x, y, **kwargs)
    assert message in str(caught.value)


def test_early_stopping_stops_and_restores_the_best_weights():
    x, y = _data()
    seen = {}

    class Keep(Callback):
        def on_epoch_end(self, epoch, logs, module):
            seen[epoch] = module.state_dict()
            return False

    stopper = EarlyStopping(patience=2)
    # a learning rate this high makes validation loss rise after a few epochs
    history = _network(dropout=0.0).fit(x[:60], y[:60], loss=BinaryCrossEntropy(),
                                        optimizer=SGD(3.0), epochs=60, batch_size=60,
                                        validation=(x[60:], y[60:]), early_stopping=stopper,
                                        callbacks=[Keep()])
    assert len(history) < 60 and stopper.stopped_epoch == len(history) - 1
    best = int(np.argmin(history["val_loss"]))
    assert stopper.best_epoch == best and len(history) - 1 - best == 2


def test_early_stopping_needs_what_it_monitors():
    x, y = _data()
    with pytest.raises(SpecError, match="monitors 'val_loss'.*pass validation data"):
        _network().fit(x, y, loss=BinaryCrossEntropy(), optimizer=SGD(0.1), early_stopping=2)


def test_one_line_per_epoch_when_not_a_terminal(capsys):
    """verbose="auto": the logs of a batch job show every epoch, one line each."""
    x, y = _data()
    _network().fit(x, y, loss=BinaryCrossEntropy(), optimizer=SGD(0.1), epochs=2)
    captured = capsys.readouterr()
    lines = captured.out.splitlines()
    assert [line.split(" - ")[0] for line in lines] == ["epoch 1/2", "epoch 2/2"]
    assert "loss: " in lines[0] and "accuracy: " in lines[0] and captured.err == ""


def test_verbose_zero_is_quiet(capsys):
    x, y = _data()
    _network().fit(x, y, loss=BinaryCrossEntropy(), optimizer=SGD(0.1), epochs=2, verbose=0)
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err == ""


def test_progress_bar_when_asked(capsys):
    x, y = _data()
    _network().fit(x, y, loss=BinaryCrossEntropy(), optimizer=SGD(0.1), epochs=2, progress=True)
    assert "epoch 2/2" in capsys.readouterr().err


def test_resume_from_a_checkpoint_is_bit_exact(tmp_path):
    x, y = _data()
    options = dict(loss=BinaryCrossEntropy(), optimizer=None, batch_size=16, seed=3,
                   validation=(x[:20], y[:20]))
    straight = _network()
    straight.fit(x, y, **{**options, "optimizer": Adam(1e-2, schedule=StepDecay(1, 0.7))}, epochs=4)

    path = tmp_path / "run.ckpt"
    first = _network()
    first.fit(x, y, **{**options, "optimizer": Adam(1e-2, schedule=StepDecay(1, 0.7))}, epochs=2,
              checkpoint=path)
    resumed = _network(seed=99)  # different starting weights: all must come from the checkpoint
    history = resumed.fit(x, y, **{**options, "optimizer": Adam(1e-2, schedule=StepDecay(1, 0.7))},
                          epochs=4, checkpoint=path, resume=True)
    assert history["epoch"] == [1, 2, 3, 4]
    for key, value in straight.state_dict().items():
        np.testing.assert_array_equal(resumed.state_dict()[key], value, err_msg=key)


def test_resume_refuses_another_seed(tmp_path):
    x, y = _data()
    path = tmp_path / "run.ckpt"
    _network().fit(x, y, loss=BinaryCrossEntropy(), optimizer=SGD(0.1), epochs=1, seed=1,
                   checkpoint=path)
    with pytest.raises(StateError, match="cannot resume: the checkpoint was made with seed 1 \\(this run: 2\\)"):
        _network().fit(x, y, loss=BinaryCrossEntropy(), optimizer=SGD(0.1), epochs=2, seed=2,
                       checkpoint=path, resume=True)


def test_cross_entropy_with_class_ids_and_shares():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((90, 4)).astype(np.float32)
    ids = np.argmax(x[:, :3], axis=1)
    network = Sequential().dense(12).relu().dense(3).lower(Shape(4), RandomStream(0))
    history = network.fit(x, ids, loss=CrossEntropy(), optimizer=Adam(3e-2), epochs=30, batch_size=15)
    assert history["accuracy"][-1] > 0.9
    shares = np.eye(3, dtype=np.float32)[ids]
    again = network.fit(x, shares, loss=CrossEntropy(), optimizer=SGD(0.0), epochs=1)
    assert again["loss"][0] == pytest.approx(history["loss"][-1], rel=0.5)


def test_breast_cancer_reaches_stated_held_out_accuracy():
    """The demo's recipe: at least 95% of the held-out tumours classified right."""
    data = load_breast_cancer()
    random = RandomStream(7)
    x_train, y_train, x_test, y_test = split(data.x, data.y, 0.2, random)
    scale = Standardizer.fit(x_train)
    network = (Sequential().dense(32).relu().dropout(0.2).dense(16).relu().dense(1).sigmoid()
               .lower(Shape(30), random))
    network.fit(scale(x_train), y_train, loss=BinaryCrossEntropy(), optimizer=Adam(1e-3),
                epochs=60, batch_size=32, seed=7)
    answers = network.predict(scale(x_test), BinaryCrossEntropy())
    accuracy = np.mean((answers[:, 0] > 0.5) == (y_test > 0.5))
    assert accuracy >= 0.95, accuracy
