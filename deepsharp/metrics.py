"""Metrics `fit` reports per epoch, each held to scikit-learn's definition of the same name.

| metric | scikit-learn | names in the history |
|---|---|---|
| `Accuracy()` | `accuracy_score` (a multi-label row counts when every label is right) | `accuracy` |
| `TopKAccuracy(k=5)` | `top_k_accuracy_score` | `top_5_accuracy` |
| `Precision(average=)`, `Recall(average=)`, `F1(average=)` | `precision_score`, `recall_score`, `f1_score` (`zero_division=0`) | `precision`, `recall`, `f1` |
| `AUC(average="macro")` | `roc_auc_score` (`multi_class="ovr"` for several classes) | `auc` |
| `MAE()` | `mean_absolute_error` | `mae` |
| `R2()` | `r2_score` (`multioutput="uniform_average"`) | `r2` |

A metric sees what the network answers (the loss's output: probabilities for the cross-entropies)
and the answers given to `fit`. The task comes from the loss: a binary cross-entropy of one column
is binary (threshold 0.5, positive label 1), of several columns multi-label; a cross-entropy is
multi-class over the output's columns (two columns: binary, the positive class 1); a mean squared
error is a regression. Every axis before the last is a row (a series of answers is many rows).

Metrics accumulate over the epoch's batches and give the value on all of the epoch's rows at once
(not a mean of batch values): precision, AUC and R^2 are not means of their batch values.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
from scipy.stats import rankdata

from deepsharp.errors import SpecError, TargetError

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
        pred = np.argmax(answers, axis=1)
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


class Metric:
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

    def reset(self) -> None:
        raise NotImplementedError

    def update(self, rows: Rows) -> None:
        raise NotImplementedError

    def result(self) -> float:
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class Accuracy(Metric):
    """The share of rows answered right (`accuracy_score`); a multi-label row is right when every
    label is (scikit-learn's subset accuracy; Keras' binary_accuracy would average the labels)."""

    name = "accuracy"
    tasks = ("binary", "multilabel", "multiclass")

    def reset(self) -> None:
        self.right, self.count = 0, 0

    def update(self, rows: Rows) -> None:
        hits = rows.true == rows.pred
        self.right += int((hits.all(axis=1) if hits.ndim == 2 else hits).sum())
        self.count += len(hits)

    def result(self) -> float:
        return self.right / self.count if self.count else float("nan")


class TopKAccuracy(Metric):
    """The share of rows whose class is among the k most probable (`top_k_accuracy_score`,
    ties broken as it breaks them: the later class first)."""

    tasks = ("binary", "multiclass")

    def __init__(self, k: int = 5, name: str | None = None) -> None:
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
            raise SpecError(f"TopKAccuracy: k must be a positive integer, received {k!r}")
        self.k = int(k)
        self.name = name or f"top_{self.k}_accuracy"

    def reset(self) -> None:
        self.right, self.count = 0, 0

    def update(self, rows: Rows) -> None:
        if rows.score.ndim == 1:  # binary: sklearn's rule (k = 1 thresholds, k > 1 always hits)
            hits = rows.pred == rows.true if self.k == 1 else np.ones(len(rows.true), bool)
        else:
            order = np.argsort(rows.score, axis=1, kind="mergesort")[:, ::-1][:, :self.k]
            hits = (order == rows.true[:, None]).any(axis=1)
        self.right += int(hits.sum())
        self.count += len(hits)

    def result(self) -> float:
        return self.right / self.count if self.count else float("nan")

    def __repr__(self) -> str:
        return f"TopKAccuracy(k={self.k})"


class _Counted(Metric):
    """Precision, recall and F1 from per-label counts: true positives, false positives, false
    negatives, and which labels occurred (scikit-learn averages over the labels present in the
    answers or the predictions, and over every column for multi-label)."""

    tasks = ("binary", "multilabel", "multiclass")

    def __init__(self, average: str = "binary", name: str | None = None) -> None:
        self.average = _average(type(self).__name__, average, AVERAGES)
        self.name = name or self.name

    def check(self, task: Task) -> None:
        super().check(task)
        binary = task.kind == "binary" or (task.kind == "multiclass" and task.classes == 2)
        if self.average == "binary" and not binary:
            raise SpecError(f"metric {self.name}: average='binary' needs two classes; this output "
                            f"is {task.kind} with {task.classes} columns: choose average='micro', "
                            f"'macro' or 'weighted' (scikit-learn refuses it too)")

    def reset(self) -> None:
        labels = self.task.classes if self.task.kind != "binary" else 2
        self.tp, self.fp, self.fn = (np.zeros(labels, np.int64) for _ in range(3))
        self.seen = np.zeros(labels, bool)

    def update(self, rows: Rows) -> None:
        if rows.true.ndim == 2:  # multi-label: every column is a label
            true, pred = rows.true, rows.pred
            self.tp += (true & pred).sum(axis=0)
            self.fp += (~true & pred).sum(axis=0)
            self.fn += (true & ~pred).sum(axis=0)
            self.seen[:] = True
            return
        n = len(self.tp)
        true, pred = rows.true, rows.pred
        self.tp += np.bincount(true[true == pred], minlength=n)
        self.fp += np.bincount(pred[true != pred], minlength=n)
        self.fn += np.bincount(true[true != pred], minlength=n)
        self.seen |= np.bincount(np.concatenate([true, pred]), minlength=n) > 0

    def _scores(self, tp: np.ndarray, fp: np.ndarray, fn: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def result(self) -> float:
        tp, fp, fn = self.tp, self.fp, self.fn
        if self.average == "binary":
            return float(self._scores(tp[1:2], fp[1:2], fn[1:2])[0])
        if self.average == "micro":
            return float(self._scores(tp.sum(keepdims=True), fp.sum(keepdims=True),
                                      fn.sum(keepdims=True))[0])
        labels = self.seen
        scores = self._scores(tp[labels], fp[labels], fn[labels])
        if self.average == "macro":
            return float(scores.mean()) if len(scores) else 0.0
        support = (tp + fn)[labels]
        return float((scores * support).sum() / support.sum()) if support.sum() else 0.0

    def __repr__(self) -> str:
        return f"{type(self).__name__}(average={self.average!r})"


def _ratio(top: np.ndarray, bottom: np.ndarray) -> np.ndarray:
    """top / bottom, 0 where bottom is 0 (scikit-learn's zero_division=0)."""
    top, bottom = top.astype(np.float64), bottom.astype(np.float64)
    return np.divide(top, bottom, out=np.zeros_like(top), where=bottom > 0)


class Precision(_Counted):
    """tp / (tp + fp) (`precision_score`)."""

    name = "precision"

    def _scores(self, tp, fp, fn):
        return _ratio(tp, tp + fp)


class Recall(_Counted):
    """tp / (tp + fn) (`recall_score`)."""

    name = "recall"

    def _scores(self, tp, fp, fn):
        return _ratio(tp, tp + fn)


class F1(_Counted):
    """2 tp / (2 tp + fp + fn) (`f1_score`; the macro average is the mean of the labels' F1)."""

    name = "f1"

    def _scores(self, tp, fp, fn):
        return _ratio(2 * tp, 2 * tp + fp + fn)


def binary_auc(true: np.ndarray, score: np.ndarray) -> float:
    """The area under the ROC curve of scores for 0/1 labels: the chance a positive scores above
    a negative, ties counting half (what `roc_auc_score`'s trapezoids give). NaN when a class is
    missing (scikit-learn refuses that case)."""
    true = np.asarray(true).astype(bool)
    positives, negatives = int(true.sum()), int((~true).sum())
    if positives == 0 or negatives == 0:
        return float("nan")
    ranks = rankdata(np.asarray(score, np.float64))
    return float((ranks[true].sum() - positives * (positives + 1) / 2) / (positives * negatives))


class AUC(Metric):
    """The area under the ROC curve (`roc_auc_score`): binary; several classes one against the
    rest (`multi_class="ovr"`), averaged `macro` or `weighted` by their counts; multi-label per
    column, averaged `macro`, `weighted` or `micro`. NaN while a class has no example or no
    counter-example (scikit-learn refuses to answer then)."""

    name = "auc"
    tasks = ("binary", "multilabel", "multiclass")

    def __init__(self, average: str = "macro", name: str | None = None) -> None:
        self.average = _average("AUC", average, ("macro", "weighted", "micro"))
        self.name = name or self.name

    def check(self, task: Task) -> None:
        super().check(task)
        if self.average == "micro" and task.kind == "multiclass" and task.classes > 2:
            raise SpecError("metric auc: average='micro' is for multi-label answers; "
                            "scikit-learn's one-against-the-rest AUC takes 'macro' or 'weighted'")

    def reset(self) -> None:
        self.trues: list[np.ndarray] = []
        self.scores: list[np.ndarray] = []

    def update(self, rows: Rows) -> None:
        self.trues.append(rows.true)
        self.scores.append(np.asarray(rows.score, np.float64))

    def result(self) -> float:
        if not self.trues:
            return float("nan")
        true, score = np.concatenate(self.trues), np.concatenate(self.scores)
        if score.ndim == 1:
            return binary_auc(true, score)
        columns = true if true.ndim == 2 else true[:, None] == np.arange(score.shape[1])
        if self.average == "micro":
            return binary_auc(columns.reshape(-1), score.reshape(-1))
        areas = np.array([binary_auc(columns[:, c], score[:, c]) for c in range(score.shape[1])])
        if self.average == "macro":
            return float(areas.mean())
        support = columns.sum(axis=0)
        return float((areas * support).sum() / support.sum())

    def __repr__(self) -> str:
        return f"AUC(average={self.average!r})"


class MAE(Metric):
    """mean(|answer - target|) over every number (`mean_absolute_error`)."""

    name = "mae"
    higher_is_better = False

    def reset(self) -> None:
        self.total, self.count = 0.0, 0

    def update(self, rows: Rows) -> None:
        if rows.answers.shape != rows.target.shape:
            raise TargetError(f"metric mae compares answers of shape {rows.answers.shape[1:]} per "
                              f"row with targets of shape {rows.target.shape[1:]}: give targets "
                              f"shaped as the answers (class shares, not class ids)")
        self.total += float(np.abs(rows.answers.astype(np.float64) - rows.target).sum())
        self.count += rows.answers.size

    def result(self) -> float:
        return self.total / self.count if self.count else float("nan")


class R2(Metric):
    """1 - sum((y - answer)^2) / sum((y - mean y)^2) per column, averaged over the columns
    (`r2_score`: a column of constant targets scores 1 when answered exactly, else 0)."""

    name = "r2"
    tasks = ("regression",)

    def reset(self) -> None:
        self.count, self.mean, self.spread, self.residual = 0, 0.0, 0.0, 0.0

    def update(self, rows: Rows) -> None:
        y = rows.target.astype(np.float64)
        n = len(y)
        if n == 0:
            return
        mean = y.mean(axis=0)
        spread = ((y - mean) ** 2).sum(axis=0)
        delta = mean - self.mean  # Chan et al.'s merge of two batches' sums of squares
        total = self.count + n
        self.spread = self.spread + spread + delta ** 2 * self.count * n / total
        self.mean = self.mean + delta * n / total
        self.count = total
        self.residual = self.residual + ((y - rows.answers) ** 2).sum(axis=0)

    def result(self) -> float:
        if not self.count:
            return float("nan")
        spread, residual = np.atleast_1d(self.spread), np.atleast_1d(self.residual)
        scores = np.where(spread > 0, 1.0 - residual / np.where(spread > 0, spread, 1.0),
                          np.where(residual == 0, 1.0, 0.0))
        return float(scores.mean())


NAMES: dict[str, Any] = {
    "accuracy": Accuracy, "acc": Accuracy, "top_k_accuracy": TopKAccuracy,
    "precision": Precision, "recall": Recall, "f1": F1, "f1_score": F1, "auc": AUC,
    "mae": MAE, "mean_absolute_error": MAE, "r2": R2, "r2_score": R2,
}


def metric_of(value: Any) -> Metric:
    """A Metric, or one named by a string (`"auc"`, `"accuracy"`, ...) with its defaults."""
    if isinstance(value, Metric):
        return value
    if isinstance(value, str) and value in NAMES:
        return NAMES[value]()
    raise SpecError(f"fit: metrics must be Metric objects or names among "
                    f"{', '.join(sorted(NAMES))}; received {value!r}")


def metrics_of(values: Sequence[Any] | None) -> list[Metric]:
    if isinstance(values, (str, Metric)):
        values = [values]
    if values is not None and not isinstance(values, (list, tuple)):
        raise SpecError(f"fit: metrics must be Metric objects or names among "
                        f"{', '.join(sorted(NAMES))}, in a list; received {values!r}")
    found = [metric_of(v) for v in values or ()]
    names = [m.name for m in found]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise SpecError(f"fit: metrics named twice: {', '.join(twice)} (give one a name=)")
    return found
