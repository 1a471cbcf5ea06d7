"""Categorical columns (strings or integers): one-hot, or the category's index.

A category not seen when fitting is *unknown*: one-hot gives it a row of zeros (scikit-learn's
`handle_unknown="ignore"`), the index encoding gives it `unknown` (-1 by default: scikit-learn's
`OrdinalEncoder(handle_unknown="use_encoded_value", unknown_value=-1)`). The graph answers the
same, so an unknown category is never an error at run time, in numpy or in the graph.

Categories are strings or integers; a float column is refused (a missing category is a category
of its own: give it as a string such as "" or "missing", and it is unknown unless it was there
when fitting).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from deepsharp.errors import PreparationError
from deepsharp.preparation.base import CATEGORIES, INT64, STRING, Preparation, frozen_array


def category_block(x: Any, who: str, width: int | None = None) -> np.ndarray:
    """`x` as a (rows, columns) block of int64 or str categories, or a PreparationError."""
    array = np.asarray(x)
    if array.dtype.kind == "O":
        bad = [v for v in array.ravel() if not isinstance(v, str)][:1]
        if bad:
            raise PreparationError(f"{who}: categories must be strings or integers; the object "
                                   f"array holds {bad[0]!r} (give a missing category as a string, "
                                   f"such as '')")
        array = array.astype(str)
    if array.dtype.kind in "iu":
        array = array.astype(np.int64, copy=False)
    elif array.dtype.kind != "U":
        hint = (" (cast integral floats with .astype(np.int64); fill a missing one first)"
                if array.dtype.kind == "f" else "")
        raise PreparationError(f"{who}: categories must be strings or integers, received an "
                               f"array of {array.dtype}{hint}")
    if array.ndim != 2 or (width is not None and array.shape[1] != width):
        wanted = f"(rows, {width})" if width is not None else "(rows, columns)"
        raise PreparationError(f"{who}: expects a block of shape {wanted}, received shape "
                               f"{array.shape}")
    return array


def _categories(values: Any, who: str) -> tuple[np.ndarray, ...]:
    """One 1-D array of distinct categories per column, all int64 or all str."""
    columns = tuple(np.asarray(c) for c in values)
    if not columns:
        raise PreparationError(f"{who}: categories must name at least one column")
    kinds = set()
    checked = []
    for index, column in enumerate(columns):
        column = category_block(column.reshape(-1, 1), f"{who}: column {index}")[:, 0]
        if len(column) == 0:
            raise PreparationError(f"{who}: column {index} has no category")
        if len(np.unique(column)) != len(column):
            raise PreparationError(f"{who}: column {index} names a category twice: "
                                   f"{column.tolist()}")
        kinds.add(column.dtype.kind)
        checked.append(frozen_array(column, column.dtype))
    if len(kinds) > 1:
        raise PreparationError(f"{who}: every column's categories must be strings, or every "
                               f"column's integers; received both")
    return tuple(checked)


def index_of(categories: np.ndarray, column: np.ndarray, unknown: int) -> np.ndarray:
    """The position of each value of `column` among `categories` (int64), `unknown` where absent."""
    order = np.argsort(categories, kind="stable")
    ranked = categories[order]
    at = np.clip(np.searchsorted(ranked, column), 0, len(ranked) - 1)
    return np.where(ranked[at] == column, order[at], unknown).astype(np.int64)


class _Encoder(Preparation):
    """What one-hot and the index encoding share: categories per column, fitted sorted."""

    categories: tuple[np.ndarray, ...]
    takes = CATEGORIES

    @property
    def width_in(self) -> int:
        return len(self.categories)

    @property
    def input_dtype(self) -> str:
        return STRING if self.categories[0].dtype.kind == "U" else INT64

    def block(self, x: Any) -> np.ndarray:
        block = category_block(x, self.name(), self.width_in)
        if (block.dtype.kind == "U") != (self.input_dtype == STRING):
            raise PreparationError(f"{self.name()}: the categories are {self.input_dtype}s, "
                                   f"received an array of {block.dtype}")
        return block

    @classmethod
    def fitted_categories(cls, x: Any) -> tuple[np.ndarray, ...]:
        block = category_block(x, f"{cls.__name__}.fit")
        if len(block) == 0:
            raise PreparationError(f"{cls.__name__}.fit: needs at least one row, received none")
        return tuple(np.unique(column) for column in block.T)


@dataclass(frozen=True, eq=False)
class OneHot(_Encoder):
    """Each categorical column -> one float32 column per category: 1 where the row holds it, 0
    elsewhere; an unknown category is a row of zeros. `fit` takes each column's categories in
    sorted order.

        encode = OneHot.fit(np.array([["red"], ["green"], ["red"]]))  # categories green, red
        encode(np.array([["red"], ["blue"]]))                        # [[0, 1], [0, 0]]
    """

    categories: tuple[np.ndarray, ...]
    kind = "one_hot"

    def __post_init__(self) -> None:
        object.__setattr__(self, "categories", _categories(self.categories, "OneHot"))

    @classmethod
    def fit(cls, x: Any) -> "OneHot":
        return cls(cls.fitted_categories(x))

    @property
    def width_out(self) -> int:
        return sum(len(c) for c in self.categories)

    def apply(self, x: np.ndarray) -> np.ndarray:
        blocks = [index_of(c, x[:, j], -1)[:, None] == np.arange(len(c))
                  for j, c in enumerate(self.categories)]
        return np.concatenate(blocks, axis=1).astype(np.float32)


@dataclass(frozen=True, eq=False)
class IndexEncoder(_Encoder):
    """Each categorical column -> the category's position among its categories, as a float32
    number; an unknown category gives `unknown` (an integer that is no position: -1 by default).

        encode = IndexEncoder.fit(np.array([[3], [7], [3]]))   # categories 3, 7
        encode(np.array([[7], [5]]))                           # [[1], [-1]]
    """

    categories: tuple[np.ndarray, ...]
    unknown: int = -1
    kind = "index_encoder"

    def __post_init__(self) -> None:
        object.__setattr__(self, "categories", _categories(self.categories, "IndexEncoder"))
        unknown = self.unknown
        if (not isinstance(unknown, (int, np.integer)) or isinstance(unknown, bool)
                or 0 <= unknown < max(len(c) for c in self.categories)):
            raise PreparationError(f"IndexEncoder: unknown must be an integer that is no "
                                   f"category's position, received {unknown!r}")
        object.__setattr__(self, "unknown", int(unknown))

    @classmethod
    def fit(cls, x: Any, unknown: int = -1) -> "IndexEncoder":
        return cls(cls.fitted_categories(x), unknown)

    @property
    def width_out(self) -> int:
        return len(self.categories)

    def apply(self, x: np.ndarray) -> np.ndarray:
        return np.stack([index_of(c, x[:, j], self.unknown) for j, c in enumerate(self.categories)],
                        axis=1).astype(np.float32)
