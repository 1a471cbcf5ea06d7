"""The fit loop: batches, the losses on logits, backward, the optimizer, schedules, validation,
metrics, callbacks, checkpoints, and what is shown while it runs.

Randomness is drawn by purpose from `RandomStream(seed)`: `shuffle:{epoch}` orders each epoch and
dropout masks come from `dropout:{place}:{step}`, so a run resumed from a checkpoint draws exactly
what the uninterrupted run drew.
"""

from __future__ import annotations

import math
import os
import time
import warnings
from collections.abc import Mapping  # (typing's alias: an isinstance costs microseconds)
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from deepsharp.batches import (
    ArraySource, Batch, Exhausted, IteratorSource, SequenceSource, as_array, is_iterator,
    is_sequence, leaves, map_leaves, take,
)
from deepsharp.callbacks import Callback, EarlyStopping, History
from deepsharp.epoch import Epoch
from deepsharp.errors import SpecError, TargetError, TrainingError
from deepsharp.feeding import (
    call, check_class_weight, check_finite, check_shapes, class_weights, count, flag, fraction,
    inputs_of, prepare, probe, rows_in, sample_weights, tensors,
)
from deepsharp.losses import Loss
from deepsharp.memory import keep_freed_memory
from deepsharp.module import Module
from deepsharp.objective import Objective
from deepsharp.optimizers import Optimizer
from deepsharp.parallel import forward_backward
from deepsharp.progress import EpochProgress, verbosity
from deepsharp.random import RandomStream
from deepsharp.run import running
from deepsharp.step_plan import lean_pass, plans_for
from deepsharp.tensors import Tensor, no_grad

EVAL_CHUNK = 1024


# -- predict ----------------------------------------------------------------------------------------
def predict(module: Module, x: Any, loss: Any, batch_size: int | None = None) -> Any:
    """The evaluation pass, `batch_size` examples at a time (default 1024), then each output's
    loss's output activation: what the exported graph answers. Several outputs come back in the
    module's structure (tuple or dict); an empty batch gives empty answers of the right shape."""
    size = count("predict", "batch_size", batch_size, none=True) or EVAL_CHUNK
    inputs = inputs_of(module, x, "predict")
    check_shapes(module, inputs, "predict", "x")
    lift = loss if isinstance(loss, Loss) else None
    first = probe(module, inputs, lift, "predict", "x")
    objective = Objective.make(first, loss, verb="predict")
    n = rows_in(inputs)
    parts: dict[str, list[np.ndarray]] = {o.name: [] for o in objective.outputs}
    for start in range(0, n, size):
        for name, z in _evaluate(module, take(inputs, slice(start, start + size)),
                                 objective).items():
            parts[name].append(z)
    answers = {}
    for o in objective.outputs:
        if not parts[o.name]:  # no examples: the shape a row would have, with no rows
            row = objective.results(first)[o.name]
            parts[o.name] = [np.zeros((0, *row.shape[1:]), np.float32)]
        z = np.concatenate(parts[o.name])
        answers[o.name] = (o.loss.output(z) if o.loss is not None else z).astype(np.float32)
    return objective.rebuild(answers)


def _evaluate(module: Module, inputs: tuple | dict, objective: Objective) -> dict[str, np.ndarray]:
    """Evaluation-mode logits by output name, without recording."""
    was_training = module.training
    module.eval()
    try:
        with no_grad():
            result = call(module, tensors(inputs), objective.single)
    finally:
        module.train(was_training)
    return {name: t._data for name, t in objective.results(result).items()}


# -- fit: the parts ---------------------------------------------------------------------------------
def _arrays(module: Module, x: Any, y: Any, w: Any, size: int, what: str) -> ArraySource:
    if y is None:
        raise TargetError(f"fit: the {what} has no answers: give y")
    for name, value in (("y", y), ("sample_weight", w)):
        if isinstance(value, (Mapping, tuple, list)) and len(value) == 0:
            raise TargetError(f"fit: {name} holds no arrays (received {value!r})")
    answers = map_leaves(lambda a: as_array(a, "y"), y)
    weights = None if w is None else map_leaves(lambda a: as_array(a, "sample_weight"), w)
    x_name = "x" if what == "training data" else "validation x"
    return ArraySource(inputs_of(module, x, "fit", x_name), answers, weights, size, what)


def _source(module: Module, x: Any, y: Any, w: Any, batch_size: int | None, steps: int | None,
            what: str):
    if is_iterator(x) or is_sequence(x):
        given = [n for n, v in (("y", y), ("sample_weight", w), ("batch_size", batch_size))
                 if v is not None]
        if given:
            raise SpecError(f"fit: the {what} is a {'sequence' if is_sequence(x) else 'iterator'} "
                            f"of batches, which hold their own answers and sizes: do not give "
                            f"{', '.join(given)}")
        inputs = lambda value: inputs_of(module, value, "fit")  # noqa: E731
        kind = SequenceSource if is_sequence(x) else IteratorSource
        return kind(x, steps, inputs, what)
    if steps is not None:
        raise SpecError("fit: steps_per_epoch is for a sequence or an iterator of batches; arrays "
                        "are cut into batches of batch_size")
    return _arrays(module, x, y, w, batch_size or 32, what)


def _validation(module: Module, validation: Any, what: str = "validation data"):
    if is_sequence(validation) or is_iterator(validation):
        if is_iterator(validation):
            raise SpecError("fit: validation data as an iterator has no end: give a sequence of "
                            "batches or arrays")
        return SequenceSource(validation, None,
                              lambda value: inputs_of(module, value, "fit", "validation x"), what)
    if not isinstance(validation, (tuple, list)) or len(validation) not in (2, 3):
        raise SpecError(f"fit: validation must be (x, y), (x, y, sample_weight) or a sequence of "
                        f"batches, received {type(validation).__name__}")
    x, y, *w = validation
    return _arrays(module, x, y, w[0] if w else None, EVAL_CHUNK, what)


def _targets(objective: Objective, batch, outputs: dict, what: str, class_weight) -> tuple:
    """The prepared answers and the sample weights of one batch, by output."""
    where = f"fit: {what}{', ' + batch.where if batch.where else ''}"
    answers = objective.answers(batch.y, what)
    targets, weights = {}, objective.weights(batch.w)
    for o in objective.trained:
        shape = tuple(outputs[o.name].shape)
        targets[o.name] = prepare(o.loss, answers[o.name], shape, where)
        per_example = shape[:-1] if len(shape) > 1 else shape
        if weights[o.name] is not None:
            weights[o.name] = sample_weights(weights[o.name], per_example, where)
        elif class_weight is not None:
            weights[o.name] = class_weights(class_weight, targets[o.name], where)
    return targets, weights


def _check_arrays(module: Module, source: ArraySource, objective: Objective, what: str,
                  class_weight, finite: bool, shapes: dict | None = None) -> None:
    """Every answer (and for validation every input) checked before training starts, a chunk at a
    time: a memmap is read, never held whole. `shapes`: the outputs' shapes a row, when a probe
    of the first row has given them already."""
    for batch in source.chunks(source.chunk_rows(), inputs=finite):
        if finite:
            check_finite(batch.x, what, offset=batch.start)
        if shapes is None:
            shapes = {n: t.shape[1:] for n, t in
                      objective.results(probe(module, batch.x, objective.single, "fit", what)).items()}
        rows = len(leaves(batch.y)[0][1])
        outputs = {n: np.empty((rows, *s), np.float32) for n, s in shapes.items()}
        _targets(objective, batch, outputs, what, class_weight)


@dataclass
class _Run:
    """What one call of fit trains with."""

    module: Module
    source: Any
    val: Any
    objective: Objective
    optimizer: Optimizer
    hooks: list
    stream: RandomStream
    epochs: int
    shuffle: bool
    show: int
    class_weight: dict | None
    checkpoint: Any
    batch_size: int  # the size a resumed run must use too (0: the data's own batches)


def _rows_of(batch: Batch, rows: slice) -> Batch:
    """Those rows of a batch (deepsharp.parallel's shares; all of them: the batch itself)."""
    if rows.start == 0 and rows.stop >= batch.rows:
        return batch
    cut = lambda value: map_leaves(lambda a: a[rows], value)  # noqa: E731
    return Batch(cut(batch.x), cut(batch.y), None if batch.w is None else cut(batch.w),
                 batch.where, batch.start + rows.start)


def _loss_of(run: _Run, batch: Batch) -> tuple[Tensor, tuple]:
    """One batch's forward pass and loss; (the loss, (outputs, targets, each output's loss))."""
    objective = run.objective
    outputs = objective.results(call(run.module, tensors(batch.x), objective.single))
    targets, weights = _targets(objective, batch, outputs, run.source.what, run.class_weight)
    value, parts = objective.loss(outputs, targets, weights)
    return value, ({k: t._data for k, t in outputs.items()}, targets, parts)


def _train_epoch(run: _Run, epoch: int, step: int, progress: EpochProgress):
    module, objective, optimizer = run.module, run.objective, run.optimizer
    totals = Epoch(objective)
    module.train()
    plans = plans_for(run)
    try:
        for batch in run.source.batches(epoch, run.stream, run.shuffle):
            optimizer.scheduled(epoch, step)
            optimizer.zero_grad()
            rows = batch.rows
            # forward and backward: two threads in data_parallel(2)
            with running(run.stream, step):
                lean = lean_pass(run, batch, plans)
                if lean is not None:
                    number, (outputs, targets, parts, answers) = lean
                else:
                    number, (outputs, targets, parts) = forward_backward(
                        module, lambda share: _loss_of(run, _rows_of(batch, share)), rows)
                    answers = None
            if not math.isfinite(number):
                raise TrainingError(f"fit: the loss became {number} at epoch {epoch + 1}, "
                                    f"{batch.where}; lower the learning rate or check the inputs")
            totals.add(rows, parts, outputs, targets, answers)
            optimizer.step()
            step += 1
            if progress.showing:
                progress.update(totals.loss)
    except BaseException:  # (a step begun ahead and not taken: the optimizer as it was)
        optimizer.drop_ahead()
        raise
    run.source.end_epoch()
    return totals.logs(), step


def _validate(module: Module, source, objective: Objective) -> dict[str, float]:
    totals = Epoch(objective)
    for batch in source.chunks(EVAL_CHUNK):
        check_finite(batch.x, f"{source.what}, {batch.where}", batch.start)
        logits = _evaluate(module, batch.x, objective)
        targets, weights = _targets(objective, batch, logits, source.what, None)
        with no_grad():
            _, parts = objective.loss({k: Tensor(v) for k, v in logits.items()}, targets, weights)
        totals.add(batch.rows, parts, logits, targets)
    return totals.logs("val_")


def _hooks(callbacks: Any, early_stopping: Any, optimizer: Optimizer) -> list[Any]:
    if isinstance(early_stopping, (int, np.integer)) and not isinstance(early_stopping, bool):
        early_stopping = EarlyStopping(patience=int(early_stopping))
    if early_stopping is not None and not isinstance(early_stopping, EarlyStopping):
        raise SpecError(f"fit: early_stopping must be an EarlyStopping or a patience, received "
                        f"{early_stopping!r}")
    if callbacks is None or isinstance(callbacks, (str, bytes)) or not hasattr(callbacks, "__iter__"):
        raise SpecError(f"fit: callbacks must be a list of callbacks, received {callbacks!r}")
    hooks = list(callbacks) + ([early_stopping] if early_stopping else [])
    for index, hook in enumerate(hooks):
        if not callable(getattr(hook, "on_epoch_end", None)):
            raise SpecError(f"fit: callbacks[{index}] ({hook!r}) has no on_epoch_end method")
        if callable(getattr(hook, "set_optimizer", None)):
            hook.set_optimizer(optimizer)
    return hooks


def _each(hooks: list[Any], method: str, *args: Any) -> list[Any]:
    return [getattr(hook, method)(*args) for hook in hooks if callable(getattr(hook, method, None))]


# -- fit ------------------------------------------------------------------------------------------------
def fit(module: Module, x: Any = None, y: Any = None, *, loss: Any, optimizer: Optimizer,
        epochs: int = 1, batch_size: int | None = None, validation: Any = None,
        validation_data: Any = None, validation_split: float = 0.0, sample_weight: Any = None,
        class_weight: dict | None = None, loss_weights: Any = None, metrics: Any = None,
        steps_per_epoch: int | None = None, early_stopping: EarlyStopping | int | None = None,
        seed: int = 0, callbacks: Sequence[Callback] = (), shuffle: bool = True,
        checkpoint: Any = None, resume: bool = False, verbose: Any = "auto",
        progress: bool | None = None) -> History:
    """Train `module` and return the History (per epoch: loss, metrics, val_loss, val metrics, lr).
    See docs/training.md for every argument; they mean what Keras' `fit` arguments of the same
    names mean, or are refused naming the difference."""
    epochs = count("fit", "epochs", epochs)
    batch_size = count("fit", "batch_size", batch_size, none=True)
    steps_per_epoch = count("fit", "steps_per_epoch", steps_per_epoch, none=True)
    split = fraction("fit", "validation_split", validation_split)
    shuffle, resume = flag("fit", "shuffle", shuffle), flag("fit", "resume", resume)
    show = verbosity(verbose, progress)
    stream = RandomStream(count("fit", "seed", seed, low=0))
    if not isinstance(optimizer, Optimizer):
        raise SpecError(f"fit: optimizer must be a deepsharp Optimizer, received {optimizer!r}")
    if not isinstance(module, Module):
        raise SpecError(f"fit: expected a Network or a Module, received {type(module).__name__}")
    if not module.trainable_parameters():
        raise TrainingError(f"fit: {type(module).__name__} has nothing to train: every parameter "
                            f"is frozen, or it has none (a network read from a graph of "
                            f"constants); unfreeze some (parameter.requires_grad = True)")
    if validation is not None and validation_data is not None:
        raise SpecError("fit: give validation or validation_data (the same thing), not both")
    validation = validation if validation is not None else validation_data
    if split and validation is not None:
        raise SpecError("fit: give validation data or a validation_split, not both")
    if checkpoint is not None and not isinstance(checkpoint, (str, os.PathLike)):
        raise SpecError(f"fit: checkpoint must be a path, received {checkpoint!r}")
    class_weight = check_class_weight(class_weight)
    if class_weight is not None and sample_weight is not None:
        raise SpecError("fit: give sample_weight or class_weight, not both (Keras refuses both "
                        "too)")
    hooks = _hooks(callbacks, early_stopping, optimizer)
    source, val = _sources(module, x, y, sample_weight, batch_size, steps_per_epoch, validation,
                           split)
    objective = _objective(module, source, val, loss, loss_weights, metrics, class_weight)
    if resume and isinstance(source, IteratorSource):
        raise SpecError("fit: resume=True needs data that can be read again from the start "
                        "(arrays or a sequence); an iterator cannot be")
    used = source.batch_size if isinstance(source, ArraySource) else 0
    return _loop(_Run(module, source, val, objective, optimizer, hooks, stream, epochs, shuffle,
                      show, class_weight, checkpoint, used), resume)


def _sources(module: Module, x: Any, y: Any, w: Any, batch_size: int | None, steps: int | None,
             validation: Any, split: float) -> tuple:
    """The training batches' source and the validation data's (or None)."""
    source = _source(module, x, y, w, batch_size, steps, "training data")
    val = _validation(module, validation) if validation is not None else None
    if split:
        if not isinstance(source, ArraySource):
            raise SpecError("fit: validation_split cuts arrays; a sequence or an iterator of "
                            "batches takes validation data instead")
        source, val = source.split(split)
    return source, val


def _objective(module: Module, source, val, loss: Any, loss_weights: Any, metrics: Any,
               class_weight: dict | None) -> Objective:
    """The outputs' losses and metrics from a probe of the first example; then every answer of
    arrays (and every validation input) checked before training starts."""
    first_inputs = source.first().x
    given = source.x if isinstance(source, ArraySource) else first_inputs
    check_shapes(module, given, "fit", source.what)
    lift = loss if isinstance(loss, Loss) else None
    first = probe(module, first_inputs, lift, "fit", source.what, given)
    objective = Objective.make(first, loss, loss_weights, metrics)
    if class_weight is not None and objective.structure != "single":
        raise SpecError("fit: class_weight is for a module with one output (Keras' rule too); "
                        "give sample_weight per output instead")
    if isinstance(source, ArraySource):
        # (the probe of the same first row with the same loss lifted: its shapes, not a second)
        shapes = ({n: t.shape[1:] for n, t in objective.results(first).items()}
                  if lift is objective.single else None)
        _check_arrays(module, source, objective, source.what, class_weight, finite=False,
                      shapes=shapes)
    if isinstance(val, ArraySource):
        check_shapes(module, val.x, "fit", val.what)
        _check_arrays(module, val, objective, val.what, None, finite=True)
    return objective


def _loop(run: _Run, resume: bool) -> History:
    keep_freed_memory()  # steps reuse freed memory instead of faulting in fresh pages (memory.py)
    run.optimizer.bind(run.module.trainable_parameters())
    history, first_epoch, step = History(), 0, 0
    if run.checkpoint is not None and resume:
        from deepsharp.io import load_checkpoint

        restored = load_checkpoint(run.checkpoint, run.module, run.optimizer, run.hooks,
                                   seed=run.stream.seed, batch_size=run.batch_size)
        if restored is not None:
            history, first_epoch, step = restored
    was_training = run.module.training
    try:
        _epochs(run, history, first_epoch, step)
    finally:
        run.module.train(was_training)
    return history


def _epochs(run: _Run, history: History, first_epoch: int, step: int) -> None:
    module, hooks = run.module, run.hooks
    _each(hooks, "on_train_begin", module, history)
    for epoch in range(first_epoch, run.epochs):
        started = time.perf_counter()
        progress = EpochProgress(run.show, epoch, run.epochs, run.source.steps)
        logs = None
        try:
            logs, step = _train_epoch(run, epoch, step, progress)
            if run.val is not None:
                logs.update(_validate(module, run.val, run.objective))
            logs = {"epoch": epoch + 1, **logs, "lr": run.optimizer.lr,
                    "seconds": time.perf_counter() - started}
        except Exhausted as ran_out:
            warnings.warn(f"fit: {ran_out} (epoch {epoch + 1} of {run.epochs}); training stops: "
                          f"give an iterator of at least steps_per_epoch * epochs batches",
                          RuntimeWarning, stacklevel=4)
            break
        finally:
            progress.close(logs)
        history.append(logs)
        stop = any([bool(s) for s in _each(hooks, "on_epoch_end", epoch, logs, module)])
        if run.checkpoint is not None:
            from deepsharp.io import save_checkpoint

            save_checkpoint(run.checkpoint, module, run.optimizer, hooks, history, step,
                            seed=run.stream.seed, batch_size=run.batch_size)
        if stop:
            break
    _each(hooks, "on_train_end", module, history)
