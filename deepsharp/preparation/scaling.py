"""Numeric columns: standardise, scale to a range, fill what is missing.

Each follows scikit-learn's definition of the same step (`StandardScaler`, `MinMaxScaler`,
`SimpleImputer`): missing values (NaN) are left out when fitting, and pass through the scalers as
NaN (fill them first); the numbers are computed in float32, as the graph computes them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from deepsharp.errors import PreparationError
from deepsharp.preparation.base import (
    Preparation, check_every_column_seen, fitted_columns, vector,
)

_TINY = 10 * np.finfo(np.float64).eps  # scikit-learn's bound for a constant column


def _nonzero(scale: np.ndarray) -> np.ndarray:
    """A spread of zero (a constant column) scales by 1, as scikit-learn does."""
    return np.where(scale < _TINY, 1.0, scale)


@dataclass(frozen=True, eq=False)
class Standardizer(Preparation):
    """x -> (x - mean) / std, per column, with the mean and standard deviation (ddof 0) of the
    training rows (NaN left out; a constant column keeps std 1).

        scale = Standardizer.fit(x_train)        # x_train: (rows, columns)
        scale(x)                                 # float32 (rows, columns)
    """

    mean: np.ndarray
    std: np.ndarray
    kind = "standardizer"

    def __post_init__(self) -> None:
        object.__setattr__(self, "mean", vector(self.mean, "Standardizer", "mean"))
        std = vector(self.std, "Standardizer", "std", len(self.mean))
        if (std <= 0).any():
            raise PreparationError(f"Standardizer: std must be positive, received "
                                   f"{std[std <= 0][:3].tolist()}")
        object.__setattr__(self, "std", std)

    @classmethod
    def fit(cls, x: Any) -> "Standardizer":
        rows = fitted_columns(x, "Standardizer")
        check_every_column_seen(rows, "Standardizer")
        std = _nonzero(np.nanstd(rows, axis=0))
        return cls(np.nanmean(rows, axis=0), np.where(std.astype(np.float32) > 0, std, 1.0))

    @property
    def width_in(self) -> int:
        return len(self.mean)

    width_out = width_in

    def apply(self, x: np.ndarray) -> np.ndarray:
        return (x - self.mean) / self.std


@dataclass(frozen=True, eq=False)
class MinMaxScaler(Preparation):
    """x -> x * scale + offset, per column, where scale = (high - low) / (max - min) and offset =
    low - min * scale for the training rows' min and max (NaN left out; a constant column has
    scale high - low) and the range (low, high), default (0, 1): scikit-learn's `MinMaxScaler`
    (without `clip`). Rows beyond the training range go beyond (low, high).

        scale = MinMaxScaler.fit(x_train, feature_range=(-1, 1))
    """

    scale: np.ndarray
    offset: np.ndarray
    kind = "min_max_scaler"

    def __post_init__(self) -> None:
        object.__setattr__(self, "scale", vector(self.scale, "MinMaxScaler", "scale"))
        object.__setattr__(self, "offset", vector(self.offset, "MinMaxScaler", "offset",
                                                  len(self.scale)))

    @classmethod
    def fit(cls, x: Any, feature_range: tuple[float, float] = (0.0, 1.0)) -> "MinMaxScaler":
        low, high = (float(v) for v in feature_range)
        if not low < high:
            raise PreparationError(f"MinMaxScaler.fit: feature_range must be (low, high) with "
                                   f"low < high, received {feature_range}")
        rows = fitted_columns(x, "MinMaxScaler")
        check_every_column_seen(rows, "MinMaxScaler")
        least, most = np.nanmin(rows, axis=0), np.nanmax(rows, axis=0)
        scale = (high - low) / _nonzero(most - least)
        return cls(scale, low - least * scale)

    @property
    def width_in(self) -> int:
        return len(self.scale)

    width_out = width_in

    def apply(self, x: np.ndarray) -> np.ndarray:
        return x * self.scale + self.offset


STRATEGIES = ("mean", "median", "most_frequent", "constant")


@dataclass(frozen=True, eq=False)
class FillMissing(Preparation):
    """x -> x where it is a number, `values` (one per column) where it is NaN; infinities are
    numbers, not missing. `fit` takes scikit-learn's `SimpleImputer` strategies: the mean, the
    median or the most frequent value of each column's present values (the smallest of equally
    frequent ones), or a constant.

        fill = FillMissing.fit(x_train, strategy="median")
    """

    values: np.ndarray
    kind = "fill_missing"

    def __post_init__(self) -> None:
        object.__setattr__(self, "values", vector(self.values, "FillMissing", "values"))

    @classmethod
    def fit(cls, x: Any, strategy: str = "mean", fill_value: float | None = None) -> "FillMissing":
        if strategy not in STRATEGIES:
            raise PreparationError(f"FillMissing.fit: strategy must be one of {STRATEGIES}, "
                                   f"received {strategy!r}")
        rows = fitted_columns(x, "FillMissing")
        if strategy == "constant":
            if fill_value is None:
                raise PreparationError("FillMissing.fit: strategy 'constant' needs fill_value")
            return cls(np.full(rows.shape[1], float(fill_value)))
        if fill_value is not None:
            raise PreparationError(f"FillMissing.fit: fill_value is for strategy 'constant', "
                                   f"not {strategy!r}")
        check_every_column_seen(rows, "FillMissing")
        if strategy == "mean":
            return cls(np.nanmean(rows, axis=0))
        if strategy == "median":
            return cls(np.nanmedian(rows, axis=0))
        return cls([_most_frequent(column[~np.isnan(column)]) for column in rows.T])

    @property
    def width_in(self) -> int:
        return len(self.values)

    width_out = width_in

    def apply(self, x: np.ndarray) -> np.ndarray:
        return np.where(np.isnan(x), self.values, x)


def _most_frequent(present: np.ndarray) -> float:
    values, counts = np.unique(present, return_counts=True)
    return float(values[np.argmax(counts)])  # unique sorts: the first of the most is the least
