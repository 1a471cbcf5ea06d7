"""A graph value as the exporter tracks it: its name, its dims (symbols for the batch and a
series' steps, numbers elsewhere), the order of its axes, and the mask riding with a series."""

from __future__ import annotations

from dataclasses import dataclass, replace

from onnx import TensorProto

from layout import Order

Dims = tuple[int | str, ...]


@dataclass(frozen=True)
class Value:
    name: str
    dims: Dims
    order: Order = Order.CHANNELS_LAST
    mask: str | None = None          # a graph value saying which steps of a series are real
    elem_type: int = TensorProto.FLOAT
    # for order FLAT_CHANNELS_FIRST: the (channels-last) example shape of the image flattened
    image: tuple[int, ...] | None = None

    @property
    def rank(self) -> int:
        return len(self.dims)

    def renamed(self, name: str, **changes) -> "Value":
        return replace(self, name=name, **changes)
