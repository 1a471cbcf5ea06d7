"""History and callbacks of the fit loop.

A callback is any object with these methods (the base class gives empty ones):
`on_train_begin(module, history)`, `on_epoch_end(epoch, logs, module) -> bool` (True stops
training after this epoch), `on_train_end(module, history)`; and, if it keeps arrays a checkpoint
must hold, `state_arrays()` / `load_state_arrays(arrays)`.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from deepsharp.errors import SpecError


class History(list):
    """One dict per epoch (epoch, loss, metrics, val_loss, val metrics, lr, seconds);
    `history["loss"]` is the list of one key over the epochs."""

    def __getitem__(self, key):  # type: ignore[override]
        if isinstance(key, str):
            return [logs.get(key) for logs in self]
        return super().__getitem__(key)

    def keys(self) -> list[str]:
        return list(self[-1]) if self else []


class Callback:
    def on_train_begin(self, module: Any, history: History) -> None:
        pass

    def on_epoch_end(self, epoch: int, logs: dict[str, float], module: Any) -> bool:
        return False

    def on_train_end(self, module: Any, history: History) -> None:
        pass


class EarlyStopping(Callback):
    """Stop when `monitor` has not improved by more than `min_delta` for `patience` epochs; with
    `restore_best`, put back the weights of the best epoch when training ends.

    The best epoch and the wait are worked out from the history, so a resumed run continues
    counting where the first run stopped.
    """

    def __init__(self, monitor: str = "val_loss", patience: int = 5, min_delta: float = 0.0,
                 mode: str = "min", restore_best: bool = True) -> None:
        if not isinstance(patience, int) or patience < 1:
            raise SpecError(f"EarlyStopping: patience must be a positive integer, received {patience!r}")
        if mode not in ("min", "max"):
            raise SpecError(f"EarlyStopping: mode must be 'min' or 'max', received {mode!r}")
        if min_delta < 0:
            raise SpecError(f"EarlyStopping: min_delta must be >= 0, received {min_delta!r}")
        self.monitor, self.patience, self.min_delta = monitor, patience, min_delta
        self.mode, self.restore_best = mode, restore_best
        self.best: float | None = None
        self.best_epoch: int | None = None
        self.best_state: dict[str, np.ndarray] | None = None
        self.stopped_epoch: int | None = None

    def _better(self, value: float, best: float | None) -> bool:
        if best is None:
            return True
        return value < best - self.min_delta if self.mode == "min" else value > best + self.min_delta

    def on_train_begin(self, module: Any, history: History) -> None:
        self.best, self.best_epoch = None, None
        for logs in history:
            value = logs.get(self.monitor)
            if value is not None and self._better(value, self.best):
                self.best, self.best_epoch = value, logs["epoch"] - 1

    def on_epoch_end(self, epoch: int, logs: dict[str, float], module: Any) -> bool:
        if self.monitor not in logs:
            raise SpecError(f"EarlyStopping: monitors {self.monitor!r}, which the epoch logs do not "
                            f"hold (they hold {', '.join(logs)}); pass validation data to fit")
        value = logs[self.monitor]
        if math.isfinite(value) and self._better(value, self.best):
            self.best, self.best_epoch = value, epoch
            if self.restore_best:
                self.best_state = module.state_dict()
            return False
        if epoch - (self.best_epoch if self.best_epoch is not None else -1) >= self.patience:
            self.stopped_epoch = epoch
            return True
        return False

    def on_train_end(self, module: Any, history: History) -> None:
        if self.restore_best and self.best_state is not None:
            module.load_state_dict(self.best_state)

    def state_arrays(self) -> dict[str, np.ndarray]:
        return dict(self.best_state or {})

    def load_state_arrays(self, arrays: dict[str, np.ndarray]) -> None:
        self.best_state = dict(arrays) if arrays else None
