"""Shape: the shape of one example, without the batch axis."""

from __future__ import annotations

from collections.abc import Iterator

from deepsharp.errors import ShapeError


class Shape:
    """The immutable shape of one example, without the batch axis.

    `Shape(14)` is a row of 14 numbers, `Shape(50, 32)` a series of 50 steps of 32 channels,
    `Shape(28, 28, 1)` an image (height x width x channels). It prints as `28x28x1`.

    >>> Shape(28, 28, 1)
    Shape(28, 28, 1)
    >>> str(Shape(28, 28, 1))
    '28x28x1'
    """

    __slots__ = ("_dims",)

    def __init__(self, *dims: int) -> None:
        if len(dims) == 1 and isinstance(dims[0], (tuple, list, Shape)):
            dims = tuple(dims[0])
        checked = []
        for axis, size in enumerate(dims):
            if isinstance(size, bool) or not isinstance(size, (int,)) and not hasattr(size, "__index__"):
                raise ShapeError(f"Shape: axis {axis} must be an integer, received {size!r}")
            size = int(size)
            if size < 0:
                raise ShapeError(f"Shape: axis {axis} must not be negative, received {size}")
            checked.append(size)
        object.__setattr__(self, "_dims", tuple(checked))

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("Shape is immutable")

    @property
    def dims(self) -> tuple[int, ...]:
        return self._dims

    @property
    def rank(self) -> int:
        return len(self._dims)

    @property
    def size(self) -> int:
        total = 1
        for d in self._dims:
            total *= d
        return total

    def __iter__(self) -> Iterator[int]:
        return iter(self._dims)

    def __len__(self) -> int:
        return len(self._dims)

    def __getitem__(self, index):
        result = self._dims[index]
        return Shape(*result) if isinstance(index, slice) else result

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Shape):
            return self._dims == other._dims
        if isinstance(other, tuple):
            return self._dims == other
        return NotImplemented

    def __hash__(self) -> int:
        return hash(("Shape", self._dims))

    def __str__(self) -> str:
        return "x".join(str(d) for d in self._dims) if self._dims else "scalar"

    def __repr__(self) -> str:
        return f"Shape({', '.join(str(d) for d in self._dims)})"

    @classmethod
    def parse(cls, text: str) -> "Shape":
        """The inverse of `str`: `Shape.parse("28x28x1") == Shape(28, 28, 1)`."""
        if text == "scalar":
            return cls()
        return cls(*(int(part) for part in text.split("x")))
