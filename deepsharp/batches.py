"""Where `fit`'s batches come from: arrays (or memmaps) held whole, a sequence of batches, or an
iterator of batches.

- Arrays: `x`, `y` and `sample_weight` as arrays, tuples or dicts of arrays with one row per
  example. A batch reads only its own rows: in order a slice (a view), shuffled its rows in the
  epoch's order (from a memmap, the batch's indices sorted first, so it reads runs of rows from
  disk). Floats
  become float32 one batch at a time, so a float64 memmap is never copied whole.
- A sequence: any object with `__len__` and `__getitem__(i)` giving batch i as `(x, y)` or
  `(x, y, sample_weight)` (as a Keras `PyDataset`); shuffling reorders the batches;
  `on_epoch_end()` is called after every epoch when it has one.
- An iterator (a generator): `steps_per_epoch` batches per epoch, read on from where the last
  epoch stopped.
"""

from __future__ import annotations

import math
from collections.abc import Mapping  # (typing's alias: an isinstance costs microseconds)
from dataclasses import dataclass
from typing import Any, Callable, Iterator

import numpy as np

from deepsharp.errors import SpecError, TargetError
from deepsharp.random import RandomStream


class Exhausted(Exception):
    """An iterator ran out of batches before the epochs asked for were done."""


@dataclass
class Batch:
    x: Any          # a tuple or dict of arrays: the module's inputs
    y: Any          # answers: an array, or a tuple/dict of arrays by output
    w: Any = None   # sample weights: None, an array, or a tuple/dict by output
    where: str = ""  # how to name the batch in an error
    start: int = 0   # the first example's index, where the source knows it

    @property
    def rows(self) -> int:
        return len(first_leaf(self.x))


# -- structures of arrays --------------------------------------------------------------------------
def leaves(value: Any) -> list[tuple[str, Any]]:
    """The arrays of a structure by name: `x`, `x[0]`, `x['ids']` (the name of the whole given)."""
    if isinstance(value, Mapping):
        return [(f"[{k!r}]", v) for k, v in value.items()]
    if isinstance(value, (tuple, list)) and not _is_plain(value):
        return [(f"[{i}]", v) for i, v in enumerate(value)]
    return [("", value)]


def _is_plain(value: Any) -> bool:
    """A list of numbers (or nested lists) is one array, not several."""
    return isinstance(value, list) and (not value or not hasattr(value[0], "shape"))


def first_leaf(value: Any) -> Any:
    if type(value) is tuple and value:  # (fit's usual inputs: leaves' first, without its names)
        return value[0]
    return leaves(value)[0][1]


def map_leaves(fn, value: Any) -> Any:
    # (an array or a plain tuple first: neither is a Mapping, and asking the ABC costs more
    # than the rest of a batch's bookkeeping)
    if type(value) is np.ndarray:
        return fn(value)
    if type(value) is tuple:
        return tuple([fn(v) for v in value])
    if isinstance(value, Mapping):
        return {k: fn(v) for k, v in value.items()}
    if isinstance(value, tuple):
        return tuple(fn(v) for v in value)
    if isinstance(value, list) and not _is_plain(value):
        return [fn(v) for v in value]
    return fn(value)


def as_array(value: Any, name: str, verb: str = "fit") -> Any:
    """An array (a memmap stays one: nothing is read), or the argument named in the error."""
    if isinstance(value, (str, bytes)) or value is None:
        raise SpecError(f"{verb}: {name} must be an array, received {value!r}")
    try:
        array = value if isinstance(value, np.ndarray) else np.asarray(value)
    except (ValueError, TypeError) as error:
        raise SpecError(f"{verb}: {name} cannot be read as an array ({error})") from None
    if array.dtype.kind not in "biuf":
        raise SpecError(f"{verb}: {name} must be an array of numbers, received a "
                        f"{type(value).__name__} read as dtype {array.dtype}")
    if array.ndim == 0:
        raise SpecError(f"{verb}: {name} must have one row per example, received a single "
                        f"{array.dtype} value")
    return array


def as_float32(array: np.ndarray) -> np.ndarray:
    """Floats as float32 (this batch only); other types as they are."""
    array = np.asarray(array)
    return array.astype(np.float32) if array.dtype.kind == "f" and array.dtype != np.float32 \
        else array


def rows_of(array: np.ndarray, index: Any) -> np.ndarray:
    """array[index], reading a shuffled index of a memmap in sorted order (runs of rows from
    disk); an array in memory is indexed as it is (one copy, not three)."""
    if isinstance(index, slice) or type(array) is np.ndarray:
        return as_float32(array[index])
    order = np.argsort(index, kind="stable")
    part = np.asarray(array[index[order]])
    out = np.empty_like(part)
    out[order] = part
    return as_float32(out)


def take(value: Any, index: Any) -> Any:
    return None if value is None else map_leaves(lambda a: rows_of(a, index), value)


# -- sources ----------------------------------------------------------------------------------------
class ArraySource:
    """Examples held as arrays, cut into batches of `batch_size`."""

    def __init__(self, x: Any, y: Any, w: Any, batch_size: int, what: str = "training data"):
        self.x, self.y, self.w = x, y, w
        self.batch_size = batch_size
        self.what = what
        named_x = [("", x[0])] if isinstance(x, tuple) and len(x) == 1 else leaves(x)
        counts = [(f"x{n}", len(a)) for n, a in named_x]
        counts += [(f"y{n}", len(a)) for n, a in (leaves(y) if y is not None else [])]
        counts += [(f"sample_weight{n}", len(a)) for n, a in (leaves(w) if w is not None else [])]
        self.count = counts[0][1]
        wrong = [f"{name} has {n}" for name, n in counts if n != self.count]
        if wrong:
            raise TargetError(f"fit: {what} has {self.count} examples ({counts[0][0]}) but "
                              + ", ".join(wrong))
        if self.count == 0:
            raise TargetError(f"fit: {what} is empty")

    @property
    def steps(self) -> int:
        return math.ceil(self.count / self.batch_size)

    def split(self, fraction: float) -> tuple["ArraySource", "ArraySource"]:
        """The first examples for training, the last `fraction` for validation (Keras'
        validation_split: the last rows as given, before any shuffling)."""
        at = int(math.ceil(self.count * (1.0 - fraction)))
        if at == 0 or at == self.count:
            raise SpecError(f"fit: validation_split={fraction} leaves "
                            f"{'no training' if at == 0 else 'no validation'} examples of "
                            f"{self.count}")
        head, tail = slice(0, at), slice(at, self.count)
        cut = lambda value, part: None if value is None else map_leaves(lambda a: a[part], value)  # noqa: E731
        return (ArraySource(cut(self.x, head), cut(self.y, head), cut(self.w, head),
                            self.batch_size, self.what),
                ArraySource(cut(self.x, tail), cut(self.y, tail), cut(self.w, tail),
                            self.batch_size, "validation data"))

    def batches(self, epoch: int, stream: RandomStream, shuffle: bool) -> Iterator[Batch]:
        order = stream.generator(f"shuffle:{epoch}").permutation(self.count) if shuffle else None
        for number, start in enumerate(range(0, self.count, self.batch_size)):
            stop = min(start + self.batch_size, self.count)
            index = order[start:stop] if order is not None else slice(start, stop)
            where = (f"batch {number + 1} (examples {start} to {stop - 1} of this epoch's order)")
            yield Batch(take(self.x, index), take(self.y, index), take(self.w, index), where)

    def chunks(self, size: int, inputs: bool = True) -> Iterator[Batch]:
        """The examples in order, `size` at a time (checking, validating); without `inputs` the
        batches hold only x's first rows (a check of the answers reads no input)."""
        for start in range(0, self.count, size):
            index = slice(start, min(start + size, self.count))
            x = take(self.x, index if inputs else slice(start, start + 1))
            yield Batch(x, take(self.y, index), take(self.w, index),
                        f"examples {start} to {index.stop - 1}", start)

    def chunk_rows(self, budget: int = 1 << 22) -> int:
        """Rows per chunk so that a chunk of every array holds about `budget` bytes."""
        arrays = [a for value in (self.x, self.y, self.w) if value is not None
                  for _, a in leaves(value)]
        row = sum(a.dtype.itemsize * int(np.prod(a.shape[1:])) for a in arrays) or 1
        return max(1, budget // row)

    def first(self) -> Batch:
        return next(self.chunks(1))

    def end_epoch(self) -> None:
        pass


def unpack(item: Any, where: str, inputs: Callable[[Any], Any]) -> Batch:
    """A batch `(x, y)` or `(x, y, sample_weight)` from a sequence or an iterator, its x made the
    module's inputs by `inputs`."""
    if not isinstance(item, tuple) or len(item) not in (2, 3):
        raise SpecError(f"fit: {where} must be a tuple (x, y) or (x, y, sample_weight), received "
                        f"{type(item).__name__}")
    x, y, w = item if len(item) == 3 else (*item, None)
    return Batch(inputs(x), y, w, where)


class SequenceSource:
    """A sequence of batches (`len(data)` of them, or the first `steps` of each epoch's order)."""

    def __init__(self, data: Any, steps: int | None, inputs: Callable[[Any], Any],
                 what: str = "training data") -> None:
        self.data, self.what, self.inputs = data, what, inputs
        try:
            self.count = len(data)
        except Exception as error:
            raise SpecError(f"fit: the {what} sequence's len() failed: {error!r}") from None
        if isinstance(self.count, bool) or not isinstance(self.count, (int, np.integer)) \
                or self.count < 1:
            raise SpecError(f"fit: the {what} sequence must hold at least one batch, its len() is "
                            f"{self.count!r}")
        if steps is not None and steps > self.count:
            raise SpecError(f"fit: steps_per_epoch={steps} is more than the {self.count} batches "
                            f"of the {what} sequence")
        self.steps = steps or int(self.count)

    def _get(self, index: int) -> Batch:
        return unpack(self.data[index], f"batch {index} of the sequence", self.inputs)

    def batches(self, epoch: int, stream: RandomStream, shuffle: bool) -> Iterator[Batch]:
        order = (stream.generator(f"shuffle:{epoch}").permutation(int(self.count)) if shuffle
                 else np.arange(self.count))
        for index in order[:self.steps]:
            yield self._get(int(index))

    def chunks(self, size: int) -> Iterator[Batch]:
        for index in range(self.steps):
            yield self._get(index)

    def first(self) -> Batch:
        return self._get(0)

    def end_epoch(self) -> None:
        if hasattr(self.data, "on_epoch_end"):
            self.data.on_epoch_end()


class IteratorSource:
    """An iterator of batches: `steps` per epoch, each epoch going on where the last stopped."""

    def __init__(self, data: Iterator[Any], steps: int | None, inputs: Callable[[Any], Any],
                 what: str = "training data") -> None:
        if steps is None:
            raise SpecError(f"fit: the {what} is an iterator: give steps_per_epoch (how many "
                            f"batches make an epoch)")
        self.data, self.steps, self.what, self.inputs = data, steps, what, inputs
        self.read = 0
        self.held: Batch | None = None

    def _next(self) -> Batch:
        try:
            item = next(self.data)
        except StopIteration:
            raise Exhausted(f"the {self.what} iterator ran out after {self.read} batches") from None
        self.read += 1
        return unpack(item, f"batch {self.read} of the iterator", self.inputs)

    def first(self) -> Batch:
        if self.held is None:
            self.held = self._next()
        return self.held

    def batches(self, epoch: int, stream: RandomStream, shuffle: bool) -> Iterator[Batch]:
        for _ in range(self.steps):
            if self.held is not None:
                batch, self.held = self.held, None
                yield batch
            else:
                yield self._next()

    def chunks(self, size: int) -> Iterator[Batch]:
        return self.batches(0, RandomStream(0), False)

    def end_epoch(self) -> None:
        pass


def is_sequence(value: Any) -> bool:
    """A sequence of batches: indexable and sized, but not an array, list, tuple or dict."""
    return (hasattr(value, "__len__") and hasattr(value, "__getitem__")
            and not isinstance(value, (np.ndarray, list, tuple, Mapping, str, bytes)))


def is_iterator(value: Any) -> bool:
    return hasattr(value, "__next__") and hasattr(value, "__iter__")
