"""What every preparation step is: a fitted, immutable map from raw rows to the rows a network
takes, holding only numpy arrays and settings, with no ONNX in it (the exporter writes each kind
through its own table in `deepsharp_export_onnx`).

A step takes a 2-D block (rows, columns) of numbers (any real dtype, computed in float32) or of
categories (strings or integers), and gives float32 rows (rows, width_out).
"""

from __future__ import annotations

import dataclasses
from abc import ABC, abstractmethod
from typing import Any, ClassVar

import numpy as np

from deepsharp.errors import PreparationError

NUMBERS = "numbers"
CATEGORIES = "categories"
# the element types a graph input takes for each kind of column
FLOAT32, INT64, STRING = "float32", "int64", "string"


class Preparation(ABC):
    """Base of the fitted preparation steps (frozen dataclasses holding read-only arrays).

    Subclasses set `kind` (the name the graph's metadata records), `takes` (NUMBERS or
    CATEGORIES) and implement `width_in`, `width_out` and `apply` (on a checked block)."""

    kind: ClassVar[str] = ""
    takes: ClassVar[str] = NUMBERS

    @property
    @abstractmethod
    def width_in(self) -> int:
        ...

    @property
    @abstractmethod
    def width_out(self) -> int:
        ...

    @property
    def input_dtype(self) -> str:
        """The element type of the raw block: float32 for numbers; int64 or string categories."""
        return FLOAT32

    @abstractmethod
    def apply(self, x: np.ndarray) -> np.ndarray:
        ...

    def __call__(self, x: Any) -> np.ndarray:
        """The prepared rows (float32, rows x width_out) of the raw block `x` (rows x width_in)."""
        return self.apply(self.block(x))

    def block(self, x: Any) -> np.ndarray:
        """`x` checked and cast as this step takes it (float32 numbers here), or a
        PreparationError naming the step and what it received."""
        return numbers(x, self.name(), self.width_in)

    def name(self) -> str:
        return type(self).__name__

    def __eq__(self, other: object) -> bool:
        """Equal when of the same type with equal settings and arrays (element for element,
        dtype included)."""
        if type(other) is not type(self):
            return NotImplemented
        return all(_same(getattr(self, f.name), getattr(other, f.name))
                   for f in dataclasses.fields(self))

    __hash__ = None  # type: ignore[assignment]


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        a, b = np.asarray(a), np.asarray(b)
        return a.dtype == b.dtype and a.shape == b.shape and bool(np.array_equal(a, b))
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return a == b


def frozen_array(values: Any, dtype: Any) -> np.ndarray:
    """A read-only contiguous copy (a fitted step never changes)."""
    array = np.array(values, dtype=dtype, copy=True, order="C")
    array.setflags(write=False)
    return array


def numbers(x: Any, who: str, width: int | None) -> np.ndarray:
    """`x` as a float32 block (rows, width), or a PreparationError naming `who` and what came."""
    array = np.asarray(x)
    if array.dtype.kind not in "fiub":
        raise PreparationError(f"{who}: expects numbers, received an array of {array.dtype}")
    if array.ndim != 2 or (width is not None and array.shape[1] != width):
        wanted = f"(rows, {width})" if width is not None else "(rows, columns)"
        raise PreparationError(f"{who}: expects a block of shape {wanted}, received shape "
                               f"{array.shape}")
    return array.astype(np.float32, copy=False)


def fitted_columns(x: Any, who: str) -> np.ndarray:
    """The rows a numeric step is fitted on, as float64 (rows, columns); at least one row."""
    array = numbers(x, f"{who}.fit", None).astype(np.float64)
    if len(array) == 0:
        raise PreparationError(f"{who}.fit: needs at least one row, received none")
    return array


def check_every_column_seen(array: np.ndarray, who: str) -> None:
    """Refuse a column with no value to fit on (every row missing)."""
    empty = np.flatnonzero(np.isnan(array).all(axis=0))
    if len(empty):
        raise PreparationError(f"{who}.fit: column(s) {empty.tolist()} hold no value (every row "
                               f"is missing): nothing to fit them on")


def vector(values: Any, who: str, what: str, width: int | None = None) -> np.ndarray:
    """A 1-D float32 array of finite values (one per column)."""
    array = np.asarray(values, dtype=np.float64)
    if array.ndim != 1 or (width is not None and len(array) != width):
        raise PreparationError(f"{who}: {what} must be one value per column"
                               + (f" ({width})" if width is not None else "")
                               + f", received shape {array.shape}")
    if not np.isfinite(array).all():
        raise PreparationError(f"{who}: {what} must be finite, received "
                               f"{array[~np.isfinite(array)][:3].tolist()}")
    return frozen_array(array, np.float32)
