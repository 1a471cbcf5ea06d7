"""A dictionary keyed weakly by object identity.

`weakref.WeakKeyDictionary` compares live keys with `==`, which on tensors is elementwise (it makes
a bool tensor, as PyTorch's does); a map from tensors to anything must key them by identity, as
PyTorch's `WeakIdKeyDictionary` does.
"""

from __future__ import annotations

import weakref
from typing import Any, Generic, Iterator, TypeVar

K = TypeVar("K")
V = TypeVar("V")


class WeakIdKeyDictionary(Generic[K, V]):
    """key -> value by `id(key)`, the entry dropped when the key is collected."""

    def __init__(self) -> None:
        self._data: dict[int, tuple[weakref.ref, Any]] = {}

    def _drop(self, key_id: int) -> Any:
        def drop(ref: weakref.ref) -> None:
            entry = self._data.get(key_id)
            if entry is not None and entry[0] is ref:
                del self._data[key_id]

        return drop

    def __setitem__(self, key: K, value: V) -> None:
        self._data[id(key)] = (weakref.ref(key, self._drop(id(key))), value)

    def _entry(self, key: K) -> tuple[weakref.ref, Any] | None:
        entry = self._data.get(id(key))
        return entry if entry is not None and entry[0]() is key else None

    def __contains__(self, key: K) -> bool:
        return self._entry(key) is not None

    def __getitem__(self, key: K) -> V:
        entry = self._entry(key)
        if entry is None:
            raise KeyError(key)
        return entry[1]

    def get(self, key: K, default: Any = None) -> Any:
        entry = self._entry(key)
        return default if entry is None else entry[1]

    def __len__(self) -> int:
        return len(self._data)

    def __iter__(self) -> Iterator[K]:
        return (k for k in (ref() for ref, _ in list(self._data.values())) if k is not None)
