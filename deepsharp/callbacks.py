"""Callbacks of the fit loop: EarlyStopping, ReduceLROnPlateau, ModelCheckpoint, CSVLogger.

A callback is any object with these methods (the base class gives empty ones):
`on_train_begin(module, history)`, `on_epoch_end(epoch, logs, module) -> bool` (True stops
training after this epoch), `on_train_end(module, history)`; `set_optimizer(optimizer)` if it
needs the optimizer (the base keeps it as `self.optimizer`); and, if it keeps arrays a checkpoint
must hold, `state_arrays()` / `load_state_arrays(arrays)`.

What a callback follows (`monitor`) is a key of the epoch's logs; `mode="auto"` maximises the
accuracies, AUC, precision, recall, F1 and R^2 and minimises everything else (losses, MAE).
A callback's counting is worked out again from the history when a run is resumed.
"""

from __future__ import annotations

import csv
import math
from pathlib import Path
from typing import Any

import numpy as np

from deepsharp.errors import SpecError
from deepsharp.history import History  # noqa: F401  (History lives beside the callbacks)

HIGHER_IS_BETTER = ("accuracy", "acc", "auc", "precision", "recall", "f1", "r2")


class Monitor:
    """A key of the logs followed for improvement: `better(value, best)` by more than min_delta."""

    def __init__(self, owner: str, monitor: str, mode: str, min_delta: float) -> None:
        if not isinstance(monitor, str) or not monitor:
            raise SpecError(f"{owner}: monitor must be a key of the logs, received {monitor!r}")
        if mode not in ("auto", "min", "max"):
            raise SpecError(f"{owner}: mode must be 'auto', 'min' or 'max', received {mode!r}")
        if isinstance(min_delta, bool) or not isinstance(min_delta, (int, float, np.number)) \
                or not math.isfinite(min_delta) or min_delta < 0:
            raise SpecError(f"{owner}: min_delta must be a number >= 0, received {min_delta!r}")
        self.owner, self.monitor, self.min_delta = owner, monitor, float(min_delta)
        if mode == "auto":
            mode = "max" if monitor.rsplit("_", 1)[-1] in HIGHER_IS_BETTER \
                or monitor.endswith("_accuracy") else "min"
        self.mode = mode

    def value(self, logs: dict[str, float]) -> float:
        if self.monitor not in logs:
            raise SpecError(f"{self.owner}: monitors {self.monitor!r}, which the epoch logs do not "
                            f"hold (they hold {', '.join(logs)}); pass validation data to fit")
        return logs[self.monitor]

    def better(self, value: float | None, best: float | None) -> bool:
        if value is None or not math.isfinite(value):
            return False
        if best is None:
            return True
        return value < best - self.min_delta if self.mode == "min" else value > best + self.min_delta

    def best_of(self, history: History) -> tuple[float | None, int | None]:
        """The best value in the history and its epoch (0-based)."""
        best, epoch = None, None
        for index, logs in enumerate(history):
            if self.better(logs.get(self.monitor), best):
                best, epoch = logs[self.monitor], index
        return best, epoch


class Callback:
    optimizer: Any = None

    def set_optimizer(self, optimizer: Any) -> None:
        self.optimizer = optimizer

    def on_train_begin(self, module: Any, history: History) -> None:
        pass

    def on_epoch_end(self, epoch: int, logs: dict[str, float], module: Any) -> bool:
        return False

    def on_train_end(self, module: Any, history: History) -> None:
        pass


def _count(owner: str, name: str, value: Any, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
        raise SpecError(f"{owner}: {name} must be an integer >= {low}, received {value!r}")
    return int(value)


class _KeepsBest(Callback):
    """What the callbacks keeping the best epoch's weights share: the weights, putting them back
    when training ends (if `restores`), and their place in a checkpoint (a resumed run keeps them)."""

    def __init__(self, watch: Monitor, restores: bool) -> None:
        self.watch, self.restores = watch, bool(restores)
        self.best: float | None = None
        self.best_epoch: int | None = None
        self.best_weights: dict[str, np.ndarray] | None = None

    def on_train_begin(self, module: Any, history: History) -> None:
        self.best, self.best_epoch = self.watch.best_of(history)

    def improved(self, epoch: int, logs: dict[str, float], module: Any, keep: bool) -> bool:
        """Whether this epoch is the best so far (its weights then kept, with `keep`)."""
        value = self.watch.value(logs)
        if not self.watch.better(value, self.best):
            return False
        self.best, self.best_epoch = value, epoch
        if keep:
            self.best_weights = module.state_dict()
        return True

    def on_train_end(self, module: Any, history: History) -> None:
        if self.restores and self.best_weights is not None:
            module.load_state_dict(self.best_weights)

    def state_arrays(self) -> dict[str, np.ndarray]:
        return dict(self.best_weights or {})

    def load_state_arrays(self, arrays: dict[str, np.ndarray]) -> None:
        self.best_weights = dict(arrays) if arrays else None


class EarlyStopping(_KeepsBest):
    """Stop when `monitor` has not improved by more than `min_delta` for `patience` epochs; with
    `restore_best`, put back the weights of the best epoch when training ends.

    The best epoch and the wait are worked out from the history, so a resumed run continues
    counting where the first run stopped.
    """

    def __init__(self, monitor: str = "val_loss", patience: int = 5, min_delta: float = 0.0,
                 mode: str = "auto", restore_best: bool = True) -> None:
        self.patience = _count("EarlyStopping", "patience", patience, 1)
        super().__init__(Monitor("EarlyStopping", monitor, mode, min_delta), restore_best)
        self.monitor, self.min_delta, self.mode = monitor, float(min_delta), self.watch.mode
        self.restore_best = self.restores
        self.stopped_epoch: int | None = None

    def on_epoch_end(self, epoch: int, logs: dict[str, float], module: Any) -> bool:
        if self.improved(epoch, logs, module, keep=self.restore_best):
            return False
        if epoch - (self.best_epoch if self.best_epoch is not None else -1) >= self.patience:
            self.stopped_epoch = epoch
            return True
        return False


class ReduceLROnPlateau(Callback):
    """Multiply the optimizer's rate by `factor` when `monitor` has not improved by more than
    `min_delta` for `patience` epochs, then wait `cooldown` epochs; never below `min_lr`. Keras'
    rule and defaults. The rate it sets is the one the next epochs train with (and the history's
    `lr`); an optimizer with a schedule is refused (both would set the rate)."""

    def __init__(self, monitor: str = "val_loss", factor: float = 0.1, patience: int = 10,
                 mode: str = "auto", min_delta: float = 1e-4, cooldown: int = 0,
                 min_lr: float = 0.0) -> None:
        if isinstance(factor, bool) or not isinstance(factor, (int, float, np.number)) \
                or not 0.0 < factor < 1.0:
            raise SpecError(f"ReduceLROnPlateau: factor must be between 0 and 1 (a reduction), "
                            f"received {factor!r}")
        if isinstance(min_lr, bool) or not isinstance(min_lr, (int, float, np.number)) \
                or not math.isfinite(min_lr) or min_lr < 0:
            raise SpecError(f"ReduceLROnPlateau: min_lr must be a number >= 0, received {min_lr!r}")
        self.watch = Monitor("ReduceLROnPlateau", monitor, mode, min_delta)
        self.factor, self.min_lr = float(factor), float(min_lr)
        self.patience = _count("ReduceLROnPlateau", "patience", patience, 0)
        self.cooldown = _count("ReduceLROnPlateau", "cooldown", cooldown, 0)
        self._reset()

    def _reset(self) -> None:
        self.best: float | None = None
        self.wait = 0
        self.cooldown_counter = 0

    def on_train_begin(self, module: Any, history: History) -> None:
        if self.optimizer is None:
            raise SpecError("ReduceLROnPlateau: no optimizer was handed to it (fit does this)")
        if self.optimizer.schedule is not None:
            raise SpecError(f"ReduceLROnPlateau: the optimizer has a schedule "
                            f"({self.optimizer.schedule!r}); both would set the rate: use one")
        self._reset()
        for logs in history:  # a resumed run: count again what the first run counted
            self.optimizer.lr = self._rate_after(logs.get(self.watch.monitor), logs["lr"])

    def _rate_after(self, value: float | None, rate: float) -> float:
        if self.cooldown_counter > 0:
            self.cooldown_counter -= 1
            self.wait = 0
        if self.watch.better(value, self.best):
            self.best, self.wait = value, 0
        elif self.cooldown_counter == 0:
            self.wait += 1
            if self.wait >= self.patience and rate > np.float32(self.min_lr):
                self.cooldown_counter, self.wait = self.cooldown, 0
                return max(rate * self.factor, self.min_lr)
        return rate

    def on_epoch_end(self, epoch: int, logs: dict[str, float], module: Any) -> bool:
        self.optimizer.lr = self._rate_after(self.watch.value(logs), self.optimizer.lr)
        return False


class ModelCheckpoint(_KeepsBest):
    """Keep the weights of the best epoch by `monitor` (as `best_weights`, with `best` and
    `best_epoch`), write to `filepath` after every epoch or, with `save_best_only`, after each
    improvement, and with `restore_best_weights` put the best weights back when training ends.

    `filepath` may hold `{epoch}` and log keys (`"run-{epoch:02d}-{val_loss:.3f}.ds"`, the epoch
    counted from 1, as Keras formats it). A stack is written whole (`deepsharp.load` reads it), a
    module written as code by its weights (`module.load_weights`), as are both with
    `save_weights_only`. With no filepath the best weights are only kept in memory.
    """

    def __init__(self, filepath: Any = None, monitor: str = "val_loss", mode: str = "auto",
                 save_best_only: bool = False, save_weights_only: bool = False,
                 restore_best_weights: bool = False, min_delta: float = 0.0) -> None:
        super().__init__(Monitor("ModelCheckpoint", monitor, mode, min_delta), restore_best_weights)
        self.filepath = filepath
        self.save_best_only, self.save_weights_only = bool(save_best_only), bool(save_weights_only)
        self.restore_best_weights = self.restores

    def on_epoch_end(self, epoch: int, logs: dict[str, float], module: Any) -> bool:
        improved = self.improved(epoch, logs, module, keep=True)
        if self.filepath is not None and (improved or not self.save_best_only):
            self._write(module, epoch, logs)
        return False

    def _write(self, module: Any, epoch: int, logs: dict[str, float]) -> None:
        from deepsharp.io import save, save_weights
        from deepsharp.network import Network

        try:
            path = str(self.filepath).format(**{**logs, "epoch": epoch + 1})
        except (KeyError, IndexError, ValueError) as error:
            raise SpecError(f"ModelCheckpoint: filepath {str(self.filepath)!r} names what the logs "
                            f"do not hold ({error}); they hold {', '.join(logs)}") from None
        if isinstance(module, Network) and not self.save_weights_only:
            save(module, path)
        else:
            save_weights(module, path)


class CSVLogger(Callback):
    """Append every epoch's logs to a CSV file as Keras' CSVLogger writes it: a header of `epoch`
    and the log keys in sorted order, then one row per epoch, the `epoch` column counted from 0.
    With `append`, rows go after those of an earlier run (a resumed one) without a new header."""

    def __init__(self, filename: Any, separator: str = ",", append: bool = False) -> None:
        if not isinstance(separator, str) or len(separator) != 1:
            raise SpecError(f"CSVLogger: separator must be one character, received {separator!r}")
        self.filename, self.separator, self.append = Path(filename), separator, bool(append)
        self.keys: list[str] | None = None

    def on_train_begin(self, module: Any, history: History) -> None:
        self.keys = None
        if self.append and self.filename.exists() and self.filename.stat().st_size:
            with self.filename.open(newline="") as stream:
                header = next(csv.reader(stream, delimiter=self.separator), None)
            self.keys = header[1:] if header else None
        else:
            self.filename.parent.mkdir(parents=True, exist_ok=True)
            self.filename.write_text("")

    def on_epoch_end(self, epoch: int, logs: dict[str, float], module: Any) -> bool:
        first = self.keys is None
        if first:
            self.keys = sorted(k for k in logs if k != "epoch")
        with self.filename.open("a", newline="") as stream:
            writer = csv.writer(stream, delimiter=self.separator)
            if first:
                writer.writerow(["epoch", *self.keys])
            writer.writerow([epoch, *(logs.get(k, "NA") for k in self.keys)])
        return False
