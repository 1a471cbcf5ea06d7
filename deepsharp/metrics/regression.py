"""Metrics of numbers: the mean absolute error and R^2, as scikit-learn defines them."""

from __future__ import annotations

import numpy as np

from deepsharp.errors import TargetError
from deepsharp.metrics.base import Metric, Rows

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
