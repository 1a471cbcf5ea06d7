"""A fitted preparation as a record a network file can hold: its settings as JSON, its numeric
arrays as named arrays beside the network's slots, its string categories as JSON lists.

    record, arrays = to_record(prepare)          # JSON-ready dict, {name: array}
    prepare = from_record(record, arrays)        # the same steps (==), checked as when made

Each step is rebuilt by its own constructor, so a record read from a damaged or hostile file is
held to the same checks as a step made in code (a PreparationError naming the step), and to these
bounds: at most MAX_STEPS steps, nested at most MAX_DEPTH deep, MAX_STRINGS category strings.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from deepsharp.errors import PreparationError
from deepsharp.preparation.base import Preparation
from deepsharp.preparation.categories import IndexEncoder, OneHot
from deepsharp.preparation.columns import Chain, Column, Columns, SelectColumns
from deepsharp.preparation.scaling import FillMissing, MinMaxScaler, Standardizer

KINDS: dict[str, type[Preparation]] = {c.kind: c for c in (
    Standardizer, MinMaxScaler, FillMissing, OneHot, IndexEncoder, SelectColumns, Chain, Columns)}
MAX_STEPS, MAX_DEPTH, MAX_STRINGS = 4096, 16, 1 << 20
# the numeric element types a step's arrays hold (strings go into the JSON)
NUMERIC = frozenset("fiub")


def to_record(step: Preparation, prefix: str = "preparation") -> tuple[dict, dict[str, np.ndarray]]:
    """The step's record and its numeric arrays, named `prefix/...` by where they sit."""
    arrays: dict[str, np.ndarray] = {}
    return _encode(step, prefix, arrays), arrays


def _encode(value: Any, at: str, arrays: dict[str, np.ndarray]) -> Any:
    if isinstance(value, Preparation):
        if KINDS.get(value.kind) is not type(value):
            raise PreparationError(f"{type(value).__name__}: a preparation of kind "
                                   f"{value.kind!r} that a network file cannot hold")
        return {"kind": value.kind, "fields": {
            f.name: _encode(getattr(value, f.name), f"{at}/{f.name}", arrays)
            for f in dataclasses.fields(value)}}
    if isinstance(value, Column):
        return {"column": [value.name, _encode(value.prepare, f"{at}/{value.name}", arrays),
                           bool(value.vector)]}
    if isinstance(value, tuple):
        return {"tuple": [_encode(v, f"{at}/{k}", arrays) for k, v in enumerate(value)]}
    if isinstance(value, np.ndarray):
        if value.dtype.kind == "U":  # (its width kept: a step's arrays compare dtype too)
            return {"strings": value.tolist(), "width": value.dtype.itemsize // 4}
        arrays[at] = np.ascontiguousarray(value)
        return {"array": at}
    if isinstance(value, (bool, int, float, str)) or value is None:
        return value
    raise PreparationError(f"a preparation holds a {type(value).__name__}, which a network file "
                           f"cannot hold")


def from_record(record: Any, arrays: dict[str, np.ndarray]) -> Preparation:
    """The step a record describes, its arrays taken from `arrays` (each used once); anything
    that is not such a record is a PreparationError saying where."""
    budget = {"steps": MAX_STEPS, "strings": MAX_STRINGS}
    step = _decode(record, arrays, "preparation", 0, budget)
    if not isinstance(step, Preparation):
        raise PreparationError(f"preparation: expected a step, received {_kind(record)}")
    return step


def _decode(value: Any, arrays: dict[str, np.ndarray], at: str, depth: int,
            budget: dict[str, int]) -> Any:
    if depth > MAX_DEPTH:
        raise PreparationError(f"{at}: nested deeper than {MAX_DEPTH}")
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if not isinstance(value, dict) or len(value) not in (1, 2):
        raise PreparationError(f"{at}: expected a step, a column, a tuple, an array or a "
                               f"number, received {_kind(value)}")
    if "kind" in value:
        return _step(value, arrays, at, depth, budget)
    if "strings" in value:
        return _strings(value, at, budget)
    if len(value) != 1:
        raise PreparationError(f"{at}: expected one part of a preparation, received "
                               f"{_kind(value)}")
    ((tag, inner),) = value.items()
    if tag == "tuple" and isinstance(inner, list):
        return tuple(_decode(v, arrays, f"{at}/{k}", depth + 1, budget)
                     for k, v in enumerate(inner))
    if tag == "column" and isinstance(inner, list) and len(inner) == 3 \
            and isinstance(inner[2], bool):
        return Column(inner[0], _decode(inner[1], arrays, f"{at}/{inner[0]}", depth + 1, budget),
                      inner[2])
    if tag == "array" and isinstance(inner, str):
        if inner not in arrays or arrays[inner].dtype.kind not in NUMERIC:
            raise PreparationError(f"{at}: names the array {inner!r}, which the file does not "
                                   f"hold as numbers")
        return arrays.pop(inner)
    raise PreparationError(f"{at}: {tag!r} is not a part of a preparation")


def _strings(value: dict, at: str, budget: dict[str, int]) -> np.ndarray:
    """Category strings, in an array as wide as saved (none cut: a width too small is refused)."""
    strings, width = value.get("strings"), value.get("width")
    if (set(value) != {"strings", "width"} or not isinstance(strings, list)
            or not all(isinstance(s, str) for s in strings) or not isinstance(width, int)
            or isinstance(width, bool) or not 0 < width <= 1 << 16
            or any(len(s) > width for s in strings)):
        raise PreparationError(f"{at}: expected category strings and a width that holds them, "
                               f"received {_kind(value)}")
    budget["strings"] -= len(strings)
    if budget["strings"] < 0:
        raise PreparationError(f"{at}: more than {MAX_STRINGS:,} category strings")
    return np.array(strings, dtype=f"<U{width}")


def _step(value: dict, arrays: dict[str, np.ndarray], at: str, depth: int,
          budget: dict[str, int]) -> Preparation:
    kind, fields = value.get("kind"), value.get("fields")
    cls = KINDS.get(kind) if isinstance(kind, str) else None
    names = {f.name for f in dataclasses.fields(cls)} if cls is not None else set()
    if cls is None or not isinstance(fields, dict) or not set(fields) <= names:
        raise PreparationError(f"{at}: expected a step of kind {sorted(KINDS)} with its fields, "
                               f"received {_kind(value)}")
    budget["steps"] -= 1
    if budget["steps"] < 0:
        raise PreparationError(f"{at}: more than {MAX_STEPS:,} steps")
    made = {name: _decode(v, arrays, f"{at}/{name}", depth + 1, budget)
            for name, v in fields.items()}
    try:
        return cls(**made)
    except PreparationError:
        raise
    except (TypeError, ValueError) as error:  # a missing field, a value of another kind
        raise PreparationError(f"{at}: {cls.__name__} cannot be made from the record: "
                               f"{str(error)[:200]}") from None


def _kind(value: Any) -> str:
    text = repr(value)
    return f"{type(value).__name__} {text[:80]}{'...' if len(text) > 80 else ''}"
