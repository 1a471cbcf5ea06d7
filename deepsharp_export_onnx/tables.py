"""A table keyed by type, looked up along the method resolution order (a subclass finds its
parent's entry): the writers by step type, the output writers and readers by loss type."""

from __future__ import annotations

from typing import Callable, Generic, TypeVar

T = TypeVar("T")


class TypeTable(Generic[T]):
    def __init__(self, what: str) -> None:
        self.what = what
        self.entries: dict[type, T] = {}

    def add(self, key: type, entry: T) -> None:
        if key in self.entries:
            raise ValueError(f"{key.__name__} has two {self.what}s")
        self.entries[key] = entry

    def register(self, *keys: type) -> Callable[[T], T]:
        """Decorator: the decorated function is the entry for every type in `keys`."""

        def register(entry: T) -> T:
            for key in keys:
                self.add(key, entry)
            return entry

        return register

    def lookup(self, obj: object) -> T | None:
        for cls in type(obj).__mro__:
            if cls in self.entries:
                return self.entries[cls]
        return None

    def names(self) -> str:
        return ", ".join(sorted(t.__name__ for t in self.entries))

    def __contains__(self, key: type) -> bool:
        return key in self.entries
