"""The fit loop: batches, the loss on logits, backward, the optimizer, schedules, validation,
callbacks, checkpoints, and a progress bar on a terminal.

Randomness is drawn by purpose from `RandomStream(seed)`: `shuffle:{epoch}` orders each epoch and
dropout masks come from `dropout:{place}:{step}`, so a run resumed from a checkpoint draws exactly
what the uninterrupted run drew.
"""

from __future__ import annotations

import math
import sys
import time
from typing import Any, Sequence

import numpy as np
from tqdm import tqdm

from deepsharp.callbacks import Callback, EarlyStopping, History
from deepsharp.errors import SpecError, TargetError, TrainingError
from deepsharp.losses import Loss
from deepsharp.module import Module
from deepsharp.optimizers import Optimizer
from deepsharp.parallel import forward_backward
from deepsharp.random import RandomStream
from deepsharp.run import running
from deepsharp.tensors import Tensor, no_grad

EVAL_CHUNK = 1024


def _as_batch(x: Any) -> np.ndarray:
    array = np.asarray(x)
    if array.dtype.kind == "f" and array.dtype != np.float32:
        array = array.astype(np.float32)
    return array


def logits_of(module: Module, x: np.ndarray, loss: Loss | None) -> np.ndarray:
    """Evaluation-mode logits of `x`, in chunks, without recording."""
    was_training = module.training
    module.eval()
    try:
        with no_grad():
            parts = [module.logits(Tensor(x[i:i + EVAL_CHUNK]), loss)._data
                     for i in range(0, len(x), EVAL_CHUNK)]
    finally:
        module.train(was_training)
    return np.concatenate(parts) if parts else np.zeros((0,))


def predict(module: Module, x: Any, loss: Loss, batch_size: int | None = None) -> np.ndarray:
    """The evaluation pass then `loss.output`: what the exported graph answers."""
    return loss.output(logits_of(module, _as_batch(x), loss)).astype(np.float32)


def _check_options(epochs: int, batch_size: int, loss: Any, optimizer: Any) -> None:
    if not isinstance(loss, Loss):
        raise SpecError(f"fit: loss must be a deepsharp Loss, received {loss!r}")
    if not isinstance(optimizer, Optimizer):
        raise SpecError(f"fit: optimizer must be a deepsharp Optimizer, received {optimizer!r}")
    if not isinstance(epochs, int) or epochs < 1:
        raise SpecError(f"fit: epochs must be a positive integer, received {epochs!r}")
    if not isinstance(batch_size, int) or batch_size < 1:
        raise SpecError(f"fit: batch_size must be a positive integer, received {batch_size!r}")


def _prepare(module: Module, x: Any, y: Any, loss: Loss, what: str) -> tuple[np.ndarray, np.ndarray]:
    x = _as_batch(x)
    y_raw = np.asarray(y)
    if len(x) != len(y_raw):
        raise TargetError(f"fit: {what} has {len(x)} examples but {len(y_raw)} answers")
    if len(x) == 0:
        raise TargetError(f"fit: {what} is empty")
    out_shape = logits_of(module, x[:1], loss).shape[1:]
    try:
        return x, loss.prepare(y_raw, (len(x),) + out_shape)
    except TargetError as error:
        raise TargetError(f"fit: {what}: {error}") from None


class _Epoch:
    """Running sums of one epoch's loss and metrics, weighted by batch size."""

    def __init__(self) -> None:
        self.count = 0
        self.sums: dict[str, float] = {}

    def add(self, n: int, values: dict[str, float]) -> None:
        self.count += n
        for k, v in values.items():
            self.sums[k] = self.sums.get(k, 0.0) + v * n

    def means(self, prefix: str = "") -> dict[str, float]:
        return {prefix + k: v / self.count for k, v in self.sums.items()}


def _loss_of(module: Module, loss: Loss, x: np.ndarray, y: np.ndarray) -> tuple[Tensor, Tensor]:
    logits = module.logits(Tensor(x), loss)
    return loss(logits, y), logits._data


def _train_epoch(module, x, y, loss, optimizer, stream, epoch, step, batch_size, shuffle, bar):
    order = stream.generator(f"shuffle:{epoch}").permutation(len(x)) if shuffle else np.arange(len(x))
    totals = _Epoch()
    module.train()
    for batch, start in enumerate(range(0, len(x), batch_size)):
        index = order[start:start + batch_size]
        optimizer.scheduled(epoch, step)
        optimizer.zero_grad()
        with running(stream, step):  # forward and backward, on two threads in data_parallel(2)
            number, logits = forward_backward(module, lambda rows: _loss_of(
                module, loss, x[index[rows]], y[index[rows]]), len(index))
        if not math.isfinite(number):
            raise TrainingError(f"fit: the loss became {number} at epoch {epoch + 1}, batch "
                                f"{batch + 1} (steps from {start} to {start + len(index) - 1} of "
                                f"this epoch's order); lower the learning rate or check the inputs")
        optimizer.step()
        step += 1
        totals.add(len(index), {"loss": number, **loss.metrics(loss.output(logits), y[index])})
        bar.update(1)
        bar.set_postfix(loss=f"{totals.sums['loss'] / totals.count:.4f}", refresh=False)
    return totals.means(), step


def _validate(module: Module, x: np.ndarray, y: np.ndarray, loss: Loss) -> dict[str, float]:
    z = logits_of(module, x, loss)
    with no_grad():
        value = float(loss(Tensor(z), y)._data)
    return {"val_loss": value, **{f"val_{k}": v for k, v in loss.metrics(loss.output(z), y).items()}}


def fit(module: Module, x: Any, y: Any, *, loss: Loss, optimizer: Optimizer, epochs: int = 1,
        batch_size: int = 32, validation: tuple[Any, Any] | None = None,
        early_stopping: EarlyStopping | int | None = None, seed: int = 0,
        callbacks: Sequence[Callback] = (), shuffle: bool = True, checkpoint: Any = None,
        resume: bool = False, progress: bool | None = None) -> History:
    """Train `module` on (x, y) and return the History (per epoch: loss, val_loss, lr, metrics).

    Args:
        loss, optimizer: a `deepsharp.losses.Loss` on logits and a `deepsharp.optimizers.Optimizer`.
        epochs, batch_size: how long and in what batches; `shuffle` reorders every epoch.
        validation: (x, y) held out, evaluated after every epoch (val_loss, val_accuracy, ...).
        early_stopping: an EarlyStopping, or a patience (epochs without a better val_loss).
        seed: the RandomStream seed for shuffling and dropout.
        callbacks: objects with `on_epoch_end(epoch, logs, module)` (see deepsharp.callbacks).
        checkpoint: a path written after every epoch (weights, optimizer state, history);
            with `resume=True` and the file present, training continues from it bit-exactly.
        progress: a progress bar; by default only when standard error is a terminal.
    """
    _check_options(epochs, batch_size, loss, optimizer)
    x, y = _prepare(module, x, y, loss, "training data")
    val = _prepare(module, *validation, loss, "validation data") if validation is not None else None
    if isinstance(early_stopping, int) and not isinstance(early_stopping, bool):
        early_stopping = EarlyStopping(patience=early_stopping)
    hooks: list[Callback] = list(callbacks) + ([early_stopping] if early_stopping else [])
    optimizer.bind(module.trainable_parameters())
    stream = RandomStream(seed)
    history, first_epoch, step = History(), 0, 0
    if checkpoint is not None and resume:
        from deepsharp.io import load_checkpoint

        restored = load_checkpoint(checkpoint, module, optimizer, hooks, seed=seed,
                                   batch_size=batch_size)
        if restored is not None:
            history, first_epoch, step = restored
    show = sys.stderr.isatty() if progress is None else bool(progress)
    was_training = module.training
    for hook in hooks:
        hook.on_train_begin(module, history)
    per_epoch = math.ceil(len(x) / batch_size)
    for epoch in range(first_epoch, epochs):
        started = time.perf_counter()
        with tqdm(total=per_epoch, disable=not show, desc=f"epoch {epoch + 1}/{epochs}",
                  leave=True, file=sys.stderr, dynamic_ncols=True) as bar:
            logs, step = _train_epoch(module, x, y, loss, optimizer, stream, epoch, step,
                                      batch_size, shuffle, bar)
            if val is not None:
                logs.update(_validate(module, *val, loss))
            logs = {"epoch": epoch + 1, **logs, "lr": optimizer.lr,
                    "seconds": time.perf_counter() - started}
            bar.set_postfix({k: f"{v:.4f}" for k, v in logs.items()
                             if k not in ("epoch", "seconds")}, refresh=True)
        history.append(logs)
        stop = any([bool(hook.on_epoch_end(epoch, logs, module)) for hook in hooks])
        if checkpoint is not None:
            from deepsharp.io import save_checkpoint

            save_checkpoint(checkpoint, module, optimizer, hooks, history, step, seed=seed,
                            batch_size=batch_size)
        if stop:
            break
    for hook in hooks:
        hook.on_train_end(module, history)
    module.train(was_training)
    return history
