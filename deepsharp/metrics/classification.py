"""Metrics of classes: accuracy, top-k accuracy, precision, recall, F1 and the ROC AUC, each as
scikit-learn defines it (see `deepsharp.metrics`)."""

from __future__ import annotations

from abc import abstractmethod

import numpy as np
from scipy.stats import rankdata

from deepsharp.errors import SpecError
from deepsharp.metrics.base import AVERAGES, Metric, Rows, Task, _average


class Accuracy(Metric):
    """The share of rows answered right (`accuracy_score`); a multi-label row is right when every
    label is (scikit-learn's subset accuracy; Keras' binary_accuracy would average the labels)."""

    name = "accuracy"
    tasks = ("binary", "multilabel", "multiclass")

    def reset(self) -> None:
        self.right, self.count = 0, 0

    def update(self, rows: Rows) -> None:
        hits = rows.true == rows.pred
        # (hits.sum's own reduce, without its Python frame)
        self.right += int(np.add.reduce(hits.all(axis=1) if hits.ndim == 2 else hits, axis=None))
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

    @abstractmethod
    def _scores(self, tp: np.ndarray, fp: np.ndarray, fn: np.ndarray) -> np.ndarray:
        ...

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
