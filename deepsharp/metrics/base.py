"""What every metric stands on: the task the loss makes of the answers, a batch seen as rows, and
the Metric base class (see `deepsharp.metrics`)."""

from __future__ import annotations

import copy
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any

import numpy as np

from deepsharp.errors import SpecError

AVERAGES = ("binary", "micro", "macro", "weighted")


@dataclass(frozen=True)
class Task:
    """What the answers are: `binary`, `multilabel`, `multiclass` (with `classes` columns) or
    `regression`."""

    kind: str
    classes: int = 1

    @classmethod
    def of(cls, loss: Any, output_shape: tuple[int, ...]) -> "Task":
        from deepsharp.losses import BinaryCrossEntropy, CrossEntropy, MeanSquaredError

        width = output_shape[-1] if len(output_shape) > 1 else 1
        if isinstance(loss, BinaryCrossEntropy):
            return cls("binary" if width == 1 else "multilabel", width)
        if isinstance(loss, CrossEntropy):
            return cls("multiclass", width)
        if isinstance(loss, MeanSquaredError):
            return cls("regression", width)
        return cls("unknown", width)

    @property
    def single_label(self) -> bool:
        return self.kind == "binary" or self.kind == "multiclass"


@dataclass
class Rows:
    """One batch seen as rows: `true` and `pred` labels ((rows,) ints for one label per row,
    (rows, labels) bools for multi-label), `score` (the positive class's probability, or one
    column per class/label), and the raw `answers` and `target` as (rows, columns) floats."""

    true: np.ndarray
    pred: np.ndarray
    score: np.ndarray
    answers: np.ndarray
    target: np.ndarray


def _as_rows(a: np.ndarray) -> np.ndarray:
    a = np.asarray(a)
    return a.reshape(-1, 1) if a.ndim < 2 else a.reshape(-1, a.shape[-1])


def rows_of(task: Task, answers: np.ndarray, target: np.ndarray) -> Rows:
    """Labels, predictions and scores of a batch for `task` (see the module's docstring)."""
    answers = _as_rows(answers)
    if task.kind == "multiclass":
        ids = target if target.dtype.kind in "iu" else np.argmax(target, axis=-1)
        true = np.asarray(ids).reshape(-1).astype(np.int64)
        pred = answers.argmax(axis=1)  # (np.argmax's own call, without its Python frames)
        score = answers[:, 1] if task.classes == 2 else answers
        flat_target = _as_rows(target) if target.dtype.kind == "f" else true[:, None]
        return Rows(true, pred, score, answers, flat_target)
    target = _as_rows(target)
    if task.kind == "binary":
        return Rows((target[:, 0] > 0.5).astype(np.int64), (answers[:, 0] > 0.5).astype(np.int64),
                    answers[:, 0], answers, target)
    if task.kind == "multilabel":
        return Rows(target > 0.5, answers > 0.5, answers, answers, target)
    return Rows(target, answers, answers, answers, target)


def _average(owner: str, value: Any, allowed: tuple[str, ...]) -> str:
    if value not in allowed:
        raise SpecError(f"{owner}: average must be one of {', '.join(allowed)}, received {value!r}")
    return value


class Metric(ABC):
    """Base: `reset()`, `update(rows)` per batch, `result()` over everything since the reset.
    `fit` works on copies (one for training, one for validation); `check(task)` refuses a task
    the metric has no definition for."""

    name = "metric"
    higher_is_better = True
    tasks: tuple[str, ...] = ("binary", "multilabel", "multiclass", "regression")

    def check(self, task: Task) -> None:
        if task.kind not in self.tasks:
            raise SpecError(f"metric {self.name}: defined for {', '.join(self.tasks)} answers; "
                            f"this output's loss makes them {task.kind}")

    def fresh(self, task: Task) -> "Metric":
        self.check(task)
        copied = copy.deepcopy(self)
        copied.task = task
        copied.reset()
        return copied

    @abstractmethod
    def reset(self) -> None:
        ...

    @abstractmethod
    def update(self, rows: Rows) -> None:
        ...

    @abstractmethod
    def result(self) -> float:
        ...

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"
