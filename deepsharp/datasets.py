"""Data sets bundled with the package, and the chores every tabular run needs (a split; the
`Standardizer` lives with the other preparation steps in `deepsharp.preparation`).

`load_breast_cancer()` is the Wisconsin diagnostic breast cancer data (569 tumours, 30
measurements of cell nuclei, label 1 = malignant), as scikit-learn ships it, stored as CSV.
`load_digits()` is the UCI handwritten digits scikit-learn ships (1,797 images of 8 x 8 pixels
counted 0-16, label the digit), stored as CSV.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from importlib import resources

import numpy as np

from deepsharp.preparation import Standardizer  # noqa: F401  (kept importable from here)
from deepsharp.random import RandomStream


@dataclass(frozen=True)
class Dataset:
    x: np.ndarray          # (examples, features) float32
    y: np.ndarray          # (examples,) answers
    features: tuple[str, ...]


def _bundled(name: str) -> tuple[np.ndarray, tuple[str, ...]]:
    text = resources.files("deepsharp.data").joinpath(name).read_text()
    rows = list(csv.reader(text.splitlines()))
    return np.asarray(rows[1:], dtype=np.float64), tuple(rows[0])


def load_breast_cancer() -> Dataset:
    values, header = _bundled("breast_cancer.csv")
    return Dataset(values[:, :-1].astype(np.float32), values[:, -1].astype(np.float32),
                   tuple(header[:-1]))


def load_digits() -> Dataset:
    """x: the 64 pixels of each image (row by row) as float32 counts 0-16; y: the digit (int64)."""
    values, header = _bundled("digits.csv")
    return Dataset(values[:, :-1].astype(np.float32), values[:, -1].astype(np.int64),
                   tuple(header[:-1]))


def split(x: np.ndarray, y: np.ndarray, held_out: float, random: RandomStream,
          stratify: bool = True):
    """(x_train, y_train, x_held, y_held): a share `held_out` of the examples kept aside, drawn
    from `random` under the purpose `split`; with `stratify`, each class keeps its share."""
    generator = random.generator("split")
    groups = [np.flatnonzero(y == c) for c in np.unique(y)] if stratify else [np.arange(len(y))]
    held = np.concatenate([g[generator.permutation(len(g))[:round(len(g) * held_out)]] for g in groups])
    mask = np.zeros(len(y), bool)
    mask[held] = True
    return x[~mask], y[~mask], x[mask], y[mask]
