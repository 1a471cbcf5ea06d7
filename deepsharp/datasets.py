"""Data sets bundled with the package, and the chores every tabular run needs (a split; the
`Standardizer` lives with the other preparation steps in `deepsharp.preparation`).

`load_breast_cancer()` is the Wisconsin diagnostic breast cancer data (569 tumours, 30
measurements of cell nuclei, label 1 = malignant), as scikit-learn ships it, stored as CSV.
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


def load_breast_cancer() -> Dataset:
    text = resources.files("deepsharp.data").joinpath("breast_cancer.csv").read_text()
    rows = list(csv.reader(text.splitlines()))
    header, body = rows[0], rows[1:]
    values = np.asarray(body, dtype=np.float64)
    return Dataset(values[:, :-1].astype(np.float32), values[:, -1].astype(np.float32),
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
