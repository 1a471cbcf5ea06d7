"""Callbacks as Keras has them (ReduceLROnPlateau, ModelCheckpoint, CSVLogger), the History's
KeyError and its pictures."""

from __future__ import annotations

import csv
import sys

import numpy as np
import pytest

from deepsharp import (
    SGD, Adam, BinaryCrossEntropy, Callback, CSVLogger, History, ModelCheckpoint,
    ReduceLROnPlateau, StepDecay, load,
)
from deepsharp.errors import DeepsharpError, MissingExtra, SpecError
from tests.support.fitting import rows, small_network


def _data(n=120, seed=0):
    return rows(n, seed)


def _network(seed=1):
    return small_network(16, seed)


# -- ReduceLROnPlateau ---------------------------------------------------------------------------------
def test_reduce_on_plateau_follows_keras_rule_by_hand():
    """patience 2, factor 0.5, cooldown 1, min_lr 0.01, from a rate of 0.1:
    e0 1.0 best; e1 .9 best; e2 .95 wait 1; e3 .92 wait 2 -> .05, cooldown 1;
    e4 .91 cooldown ends, wait 1; e5 .93 wait 2 -> .025; e6 .94 cooldown ends, wait 1;
    e7 .95 wait 2 -> max(.0125, .01); e8 .96 cooldown ends, wait 1."""
    optimizer = SGD(0.1)
    callback = ReduceLROnPlateau(monitor="val_loss", factor=0.5, patience=2, cooldown=1,
                                 min_lr=0.01, min_delta=0.0)
    callback.set_optimizer(optimizer)
    callback.on_train_begin(None, History())
    rates = []
    for epoch, value in enumerate([1.0, 0.9, 0.95, 0.92, 0.91, 0.93, 0.94, 0.95, 0.96]):
        callback.on_epoch_end(epoch, {"val_loss": value}, None)
        rates.append(optimizer.lr)
    assert rates == pytest.approx([0.1, 0.1, 0.1, 0.05, 0.05, 0.025, 0.025, 0.0125, 0.0125])


def test_reduce_on_plateau_in_fit_and_resumed(tmp_path):
    x, y = _data()
    # a rate this small improves the loss by far less than min_delta: every epoch is a plateau
    options = dict(loss=BinaryCrossEntropy(), epochs=4, batch_size=40, verbose=0)
    history = _network().fit(x, y, optimizer=SGD(1e-9), **options,
                             callbacks=[ReduceLROnPlateau(monitor="loss", factor=0.5, patience=1)])
    assert history["lr"] == pytest.approx([1e-9, 1e-9, 5e-10, 2.5e-10])
    path = tmp_path / "run.ckpt"
    first = _network()
    first.fit(x, y, optimizer=SGD(1e-9), **{**options, "epochs": 2}, checkpoint=path,
              callbacks=[ReduceLROnPlateau(monitor="loss", factor=0.5, patience=1)])
    resumed = _network().fit(x, y, optimizer=SGD(1e-9), **options, checkpoint=path, resume=True,
                             callbacks=[ReduceLROnPlateau(monitor="loss", factor=0.5, patience=1)])
    assert resumed["lr"] == pytest.approx(history["lr"])


def test_reduce_on_plateau_refusals():
    with pytest.raises(SpecError, match="factor must be between 0 and 1"):
        ReduceLROnPlateau(factor=1.5)
    with pytest.raises(SpecError, match="mode must be 'auto', 'min' or 'max', received 'low'"):
        ReduceLROnPlateau(mode="low")
    x, y = _data()
    with pytest.raises(SpecError, match="the optimizer has a schedule .*both would set the rate"):
        _network().fit(x, y, loss=BinaryCrossEntropy(), optimizer=SGD(0.1, schedule=StepDecay(1, 0.5)),
                       callbacks=[ReduceLROnPlateau()], verbose=0)
    with pytest.raises(SpecError, match="monitors 'val_loss', which the epoch logs do not hold"):
        _network().fit(x, y, loss=BinaryCrossEntropy(), optimizer=SGD(0.1),
                       callbacks=[ReduceLROnPlateau()], verbose=0)


# -- ModelCheckpoint --------------------------------------------------------------------------------------
def _rising(callbacks, epochs=11):
    """Answers a third of them flipped and a high rate: the validation loss falls, then wavers up
    (its best is epoch 9 of 11); the weights of every epoch kept by a watching callback."""
    x, y = _data()
    noisy = y.copy()
    noisy[:60:3] = 1 - noisy[:60:3]
    seen = {}

    class Keep(Callback):
        def on_epoch_end(self, epoch, logs, module):
            seen[epoch] = module.state_dict()
            return False

    network = _network()
    history = network.fit(x[:60], noisy[:60], loss=BinaryCrossEntropy(), optimizer=SGD(3.0),
                          epochs=epochs, batch_size=60, validation=(x[60:], y[60:]), verbose=0,
                          callbacks=[Keep(), *callbacks])
    return network, history, seen


def test_checkpoint_keeps_and_restores_the_best_weights(tmp_path):
    best = ModelCheckpoint(tmp_path / "best.ds", save_best_only=True, restore_best_weights=True)
    network, history, seen = _rising([best])
    epoch = int(np.argmin(history["val_loss"]))
    assert best.best_epoch == epoch and best.best == min(history["val_loss"])
    assert epoch < len(history) - 1  # the loss did rise after its best
    for key, value in seen[epoch].items():
        np.testing.assert_array_equal(network.state_dict()[key], value)  # restored at the end
        np.testing.assert_array_equal(load(tmp_path / "best.ds").state_dict()[key], value)


def test_checkpoint_writes_every_epoch_by_a_template(tmp_path):
    every = ModelCheckpoint(str(tmp_path / "e{epoch:02d}-{val_loss:.3f}.ds"), monitor="val_accuracy")
    network, history, seen = _rising([every], epochs=3)
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == [f"e{i + 1:02d}-{v:.3f}.ds" for i, v in enumerate(history["val_loss"])]
    assert every.watch.mode == "max"  # mode="auto": an accuracy is maximised
    np.testing.assert_array_equal(load(tmp_path / names[1]).state_dict()["0.weight"],
                                  seen[1]["0.weight"])
    with pytest.raises(SpecError, match="filepath .* names what the logs do not hold"):
        _rising([ModelCheckpoint(str(tmp_path / "{val_auc}.ds"))], epochs=1)


# -- CSVLogger ------------------------------------------------------------------------------------------
def test_csv_logger_writes_as_keras_does_and_appends_on_resume(tmp_path):
    x, y = _data()
    log, checkpoint = tmp_path / "log.csv", tmp_path / "run.ckpt"
    options = dict(loss=BinaryCrossEntropy(), optimizer=None, batch_size=30, verbose=0,
                   validation=(x[:20], y[:20]), checkpoint=checkpoint)
    first = _network().fit(x, y, **{**options, "optimizer": Adam()}, epochs=2,
                           callbacks=[CSVLogger(log)])
    resumed = _network().fit(x, y, **{**options, "optimizer": Adam()}, epochs=3, resume=True,
                             callbacks=[CSVLogger(log, append=True)])
    rows = list(csv.reader(log.open()))
    assert rows[0] == ["epoch", "accuracy", "loss", "lr", "seconds", "val_accuracy", "val_loss"]
    assert [r[0] for r in rows[1:]] == ["0", "1", "2"]  # Keras counts epochs from 0 here
    assert float(rows[2][2]) == first["loss"][1] and float(rows[3][6]) == resumed["val_loss"][2]
    with pytest.raises(SpecError, match="separator must be one character"):
        CSVLogger(log, separator=";;")


# -- History ---------------------------------------------------------------------------------------------
def test_history_names_its_keys_when_asked_for_another():
    x, y = _data()
    history = _network().fit(x, y, loss=BinaryCrossEntropy(), optimizer=SGD(0.1), epochs=2,
                             verbose=0, validation=(x, y))
    with pytest.raises(KeyError, match="history has no 'val_los'; its keys are: epoch, loss, "
                                       "accuracy, val_loss, val_accuracy, lr, seconds"):
        history["val_los"]
    with pytest.raises(KeyError, match="no epoch was recorded"):
        History()["loss"]


@pytest.mark.parametrize("suffix, start", [(".png", b"\x89PNG\r\n"), (".svg", b"<?xml")])
def test_history_plots_its_curves(tmp_path, suffix, start):
    x, y = _data()
    history = _network().fit(x, y, loss=BinaryCrossEntropy(), optimizer=SGD(0.1), epochs=3,
                             verbose=0, validation=(x, y))
    path = tmp_path / f"curves{suffix}"
    history.plot(path)
    data = path.read_bytes()
    assert data.startswith(start) and len(data) > 1000
    if suffix == ".svg":
        assert b"val_loss" in data and b"accuracy" in data
    with pytest.raises(KeyError, match="history has no 'auc'"):
        history.plot(path, keys=["auc"])
    with pytest.raises(SpecError, match="must end in .png or .svg"):
        history.plot(tmp_path / "curves.jpg")


def test_history_plot_without_matplotlib_names_the_extra(tmp_path, monkeypatch):
    history = History([{"epoch": 1, "loss": 0.5}])
    for name in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib now fails
    with pytest.raises(MissingExtra, match='needs matplotlib, an optional extra: pip install '
                                           '"deepsharp\\[plot\\]"') as caught:
        history.plot(tmp_path / "curves.png")
    assert isinstance(caught.value, DeepsharpError) and isinstance(caught.value, ImportError)
    assert not (tmp_path / "curves.png").exists()
