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

from typing import Any, Sequence

from deepsharp.errors import SpecError
from deepsharp.metrics.base import AVERAGES, Metric, Rows, Task, rows_of
from deepsharp.metrics.classification import (
    AUC, F1, Accuracy, Precision, Recall, TopKAccuracy, binary_auc,
)
from deepsharp.metrics.regression import MAE, R2

__all__ = ["AUC", "AVERAGES", "Accuracy", "F1", "MAE", "Metric", "NAMES", "Precision", "R2",
           "Recall", "Rows", "Task", "TopKAccuracy", "binary_auc", "metric_of", "metrics_of",
           "rows_of"]

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
