"""Composing preparation steps: a column selection, a chain of steps on one block, and named
columns each prepared on its own and joined side by side.

    prepare = Columns.fit(table, {
        "age": [FillMissing, Standardizer],          # a class: its fit(block)
        "fare": [partial(FillMissing.fit, strategy="median"), MinMaxScaler],
        "sex": [OneHot],
        "port": [IndexEncoder],
    })
    prepare(table)          # float32 (rows, 1 + 1 + 2 + 1): the columns' outputs in this order

`table` maps column names to arrays (a dict of numpy arrays, or a pandas DataFrame): a 1-D array
is one column, a 2-D one a block of columns prepared together. Columns the table holds and the
preparation does not name are left out.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping, NamedTuple, Sequence

import numpy as np

from deepsharp.errors import PreparationError
from deepsharp.preparation.base import CATEGORIES, Preparation, frozen_array


@dataclass(frozen=True, eq=False)
class SelectColumns(Preparation):
    """x -> x[:, indices]: the numeric columns at `indices` of a block of `width` columns, in
    that order (a column may be taken twice).

        SelectColumns([0, 3], width=5)(x)      # x[:, [0, 3]]
    """

    indices: np.ndarray
    width: int
    kind = "select_columns"

    def __post_init__(self) -> None:
        indices = np.asarray(self.indices)
        if (indices.ndim != 1 or len(indices) == 0 or indices.dtype.kind not in "iu"
                or not isinstance(self.width, (int, np.integer)) or self.width < 1
                or (indices < 0).any() or (indices >= self.width).any()):
            raise PreparationError(f"SelectColumns: indices must be one or more column "
                                   f"positions in 0..width-1, received {indices.tolist()} for "
                                   f"width {self.width!r}")
        object.__setattr__(self, "indices", frozen_array(indices, np.int64))
        object.__setattr__(self, "width", int(self.width))

    @property
    def width_in(self) -> int:
        return self.width

    @property
    def width_out(self) -> int:
        return len(self.indices)

    def apply(self, x: np.ndarray) -> np.ndarray:
        return x[:, self.indices]


@dataclass(frozen=True, eq=False)
class Chain(Preparation):
    """x -> steps[-1](... steps[0](x)): each step takes what the one before gives. Only the
    first may take categories (every step gives numbers).

        Chain((FillMissing.fit(x), Standardizer.fit(FillMissing.fit(x)(x))))
    """

    steps: tuple[Preparation, ...]
    kind = "chain"

    def __post_init__(self) -> None:
        steps = tuple(self.steps)
        if not steps or not all(isinstance(s, Preparation) and not isinstance(s, (Chain, Columns))
                                for s in steps):
            raise PreparationError(f"Chain: steps must be one or more preparation steps (not "
                                   f"chains or columns), received {steps!r}")
        for index, (before, after) in enumerate(zip(steps, steps[1:])):
            if after.takes == CATEGORIES:
                raise PreparationError(f"Chain: step {index + 1} ({after.name()}) takes "
                                       f"categories, but step {index} gives numbers")
            if before.width_out != after.width_in:
                raise PreparationError(f"Chain: step {index} ({before.name()}) gives "
                                       f"{before.width_out} columns, step {index + 1} "
                                       f"({after.name()}) takes {after.width_in}")
        object.__setattr__(self, "steps", steps)

    @property
    def takes(self) -> str:  # type: ignore[override]
        return self.steps[0].takes

    @property
    def input_dtype(self) -> str:
        return self.steps[0].input_dtype

    @property
    def width_in(self) -> int:
        return self.steps[0].width_in

    @property
    def width_out(self) -> int:
        return self.steps[-1].width_out

    def block(self, x: Any) -> np.ndarray:
        return self.steps[0].block(x)

    def apply(self, x: np.ndarray) -> np.ndarray:
        for step in self.steps:
            x = step.apply(x)
        return x


Fitter = Callable[[np.ndarray], Preparation]


def fit_chain(fitters: Sequence[type | Fitter] | type | Fitter, block: Any) -> Preparation:
    """Fit each step on what the steps before it give (a class is fitted by its `fit`); one step
    is itself, several a Chain."""
    if isinstance(fitters, type) or callable(fitters):
        fitters = [fitters]
    steps: list[Preparation] = []
    for fitter in fitters:
        fit = fitter.fit if isinstance(fitter, type) else fitter
        step = fit(block)
        if not isinstance(step, Preparation):
            raise PreparationError(f"fitting with {fitter!r} gave {type(step).__name__}, not a "
                                   f"preparation step")
        steps.append(step)
        block = step(block)
    return steps[0] if len(steps) == 1 else Chain(tuple(steps))


class Column(NamedTuple):
    """One named input: its step (or Chain), and whether it comes as a 1-D column."""

    name: str
    prepare: Preparation
    vector: bool


@dataclass(frozen=True, eq=False)
class Columns(Preparation):
    """table -> the side-by-side join of each named column's prepared rows, in order. A column
    given 1-D (rows,) is one column of width 1; a 2-D one a block (rows, width).

    The graph takes each named column as an input of that name: float32 for numbers, int64 or
    string for categories (see `inputs`)."""

    columns: tuple[Column, ...]
    kind = "columns"

    def __post_init__(self) -> None:
        columns = tuple(Column(*c) for c in self.columns)
        names = [c.name for c in columns]
        if not columns or len(set(names)) != len(names) or not all(
                isinstance(n, str) and n for n in names):
            raise PreparationError(f"Columns: needs one or more distinct non-empty column names, "
                                   f"received {names}")
        for column in columns:
            if not isinstance(column.prepare, Preparation) or isinstance(column.prepare, Columns):
                raise PreparationError(f"Columns: column {column.name!r} must have a preparation "
                                       f"step or Chain, received {column.prepare!r}")
            if column.vector and column.prepare.width_in != 1:
                raise PreparationError(f"Columns: column {column.name!r} comes as one column, "
                                       f"its step takes {column.prepare.width_in}")
        object.__setattr__(self, "columns", columns)

    @classmethod
    def fit(cls, table: Mapping[str, Any],
            recipe: Mapping[str, Sequence[type | Fitter] | type | Fitter]) -> "Columns":
        """Fit each named column's steps on that column of `table`, in `recipe`'s order."""
        columns = []
        for name, fitters in recipe.items():
            block, vector = _column(table, name, "Columns.fit")
            columns.append(Column(name, fit_chain(fitters, block), vector))
        return cls(tuple(columns))

    @property
    def width_in(self) -> int:
        return sum(c.prepare.width_in for c in self.columns)

    @property
    def width_out(self) -> int:
        return sum(c.prepare.width_out for c in self.columns)

    def apply(self, x: np.ndarray) -> np.ndarray:
        raise PreparationError("Columns prepares a table of named columns, not one block: call it "
                               "with a mapping column name -> values")

    def __call__(self, table: Mapping[str, Any]) -> np.ndarray:  # type: ignore[override]
        blocks = self._blocks(table)
        return np.concatenate([c.prepare.apply(b) for c, b in zip(self.columns, blocks)], axis=1)

    def inputs(self, table: Mapping[str, Any]) -> dict[str, np.ndarray]:
        """The graph's inputs for `table`: each named column as the graph takes it (float32
        numbers, int64 or str categories), 1-D or 2-D as fitted."""
        return {column.name: block[:, 0] if column.vector else block
                for column, block in zip(self.columns, self._blocks(table))}

    def _blocks(self, table: Mapping[str, Any]) -> list[np.ndarray]:
        """Each named column of `table`, checked and cast as its step takes it."""
        blocks = []
        for column in self.columns:
            block, vector = _column(table, column.name, "Columns")
            if vector != column.vector:
                raise PreparationError(f"Columns: column {column.name!r} was fitted "
                                       f"{'1-D' if column.vector else '2-D'}, received an array "
                                       f"of shape {np.shape(table[column.name])}")
            blocks.append(column.prepare.block(block))
        return blocks


def _column(table: Mapping[str, Any], name: str, who: str) -> tuple[np.ndarray, bool]:
    try:
        array = np.asarray(table[name])
    except (KeyError, IndexError):
        raise PreparationError(f"{who}: the table has no column {name!r}") from None
    if array.ndim == 1:
        return array.reshape(-1, 1), True
    if array.ndim == 2:
        return array, False
    raise PreparationError(f"{who}: column {name!r} must be 1-D (rows,) or 2-D (rows, width), "
                           f"received shape {array.shape}")


def as_columns(prepare: Preparation, name: str) -> Columns:
    """Any preparation as named columns: a step or Chain on one 2-D block is the column `name`."""
    if isinstance(prepare, Columns):
        return prepare
    return Columns((Column(name, prepare, False),))

