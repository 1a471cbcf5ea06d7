"""Constants: tensors a traced operation uses that do not depend on an input.

Each becomes an initializer holding a contiguous copy of its logical elements at the moment it is
first used, deduplicated by storage (address, shape, strides, dtype); unnamed ones (scalars mixed
into arithmetic, buffers made on the fly) are also deduplicated by content. A constant is named
by its parameter's name (`Tracer.parameter`), `{name}.view_{k}` when it is a differently strided
view of a named parameter's storage (a weight's transpose), or not at all.

Every tensor a constant was made from is watched: if its version moves during the trace (an
in-place write, an optimizer step), `finish` refuses the trace, since the graph holds the values
from before.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from deepsharp.errors import TraceErrorKind, TraceException
from deepsharp.tensors import Tensor

LARGEST_CONSTANT = 2 ** 31 - 1  # bytes: a protobuf (an ONNX file written whole) holds no more
StorageKey = tuple[int, tuple[int, ...], tuple[int, ...], str]


def storage_key(array: np.ndarray) -> StorageKey:
    return (array.__array_interface__["data"][0], array.shape, array.strides, array.dtype.str)


class Constants:
    def __init__(self, new_value: Callable[[np.ndarray, str | None], int],
                 rename: Callable[[int, str], None]) -> None:
        self._new_value = new_value
        self._rename = rename
        self._by_storage: dict[StorageKey, int] = {}
        self._by_content: dict[tuple, int] = {}
        self._unnamed: set[int] = set()
        self._kept: list[np.ndarray] = []  # captured storages stay alive: no address is reused
        self._names: dict[str, Tensor] = {}
        self._name_of: dict[int, str] = {}
        self._views: dict[str, int] = {}
        self._watched: dict[int, tuple[Tensor, int, int, str]] = {}

    # -- names ----------------------------------------------------------------------------------
    def named(self, name: str) -> Tensor | None:
        return self._names.get(name)

    def name_of(self, tensor: Tensor) -> str | None:
        return self._name_of.get(id(tensor))

    def name(self, name: str, tensor: Tensor) -> None:
        """Name `tensor` (a parameter or buffer). A storage already captured unnamed takes it."""
        self._names[name] = tensor
        self._name_of[id(tensor)] = name
        vid = self._by_storage.get(storage_key(tensor._data))
        if vid is not None and vid in self._unnamed:
            self._unnamed.discard(vid)
            self._rename(vid, name)

    def _name_for(self, tensor: Tensor, key: StorageKey) -> str | None:
        if id(tensor) in self._name_of:
            return self._name_of[id(tensor)]
        for name, named in self._names.items():
            if storage_key(named._data) == key:
                return name
        for name, named in self._names.items():
            if np.may_share_memory(tensor._data, named._data):
                k = self._views.get(name, 0)
                self._views[name] = k + 1
                return f"{name}.view_{k}"
        return None

    # -- capture --------------------------------------------------------------------------------
    def capture(self, tensor: Tensor, use: str) -> int:
        """The value id of constant `tensor`, first used by operation `use`."""
        key = storage_key(tensor._data)
        vid = self._by_storage.get(key)
        if vid is None:
            if tensor._data.nbytes > LARGEST_CONSTANT:
                raise TraceException(TraceErrorKind.UNSUPPORTED_OPERATION, f"{use}: a constant of "
                                     f"shape {tensor.shape} holds {tensor._data.nbytes:,} bytes, "
                                     f"more than the {LARGEST_CONSTANT:,} an ONNX file can hold")
            name = self._name_for(tensor, key)
            copy = np.array(tensor._data, copy=True, order="C")
            if name is None:
                content = (copy.dtype.str, copy.shape, copy.tobytes())
                vid = self._by_content.get(content)
                if vid is None:
                    vid = self._new_value(copy, None)
                    self._by_content[content] = vid
                    self._unnamed.add(vid)
            else:
                vid = self._new_value(copy, name)
            self._by_storage[key] = vid
            self._kept.append(tensor._data)
        self._watch(tensor, vid, use)
        return vid

    def _watch(self, tensor: Tensor, vid: int, use: str) -> None:
        stack = [tensor]
        while stack:
            t = stack.pop()
            if id(t) in self._watched:
                continue
            self._watched[id(t)] = (t, t._version, vid, use)
            if t.record is not None:
                stack.extend(t.record.inputs)

    def refresh(self, tensor: Tensor) -> None:
        """`tensor`'s write was recorded (the graph holds its earlier values where they were used
        and the write's result after): its version moving is no fault."""
        watched = self._watched.get(id(tensor))
        if watched is not None:
            self._watched[id(tensor)] = (tensor, tensor._version, *watched[2:])

    def changed(self, describe: Callable[[int], str]) -> list[str]:
        """A line for every watched tensor whose storage version moved since it was captured."""
        faults = []
        for tensor, version, vid, use in self._watched.values():
            if tensor._version != version:
                source = self._name_of.get(id(tensor))
                written = f"its source {source!r}" if source is not None else "it"
                faults.append(f"{describe(vid)}, captured for {use}, changed during the trace "
                              f"({written} was written: version {version} -> {tensor._version}); "
                              f"the graph holds the values from before the write")
        return faults
