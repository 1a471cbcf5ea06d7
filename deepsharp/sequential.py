"""Sequential: an immutable, declarative stack of layer specs with fluent verbs.

Every verb (`dense`, `relu`, ... and those of every layer family, see `deepsharp.layers`) returns
a new builder; invalid arguments are refused when the verb is called. `lower(shape, random)`
turns the specs into a Network of steps for examples of `shape`.

    spec = Sequential().dense(16).relu().dropout(0.1).dense(1)
    network = spec.lower(Shape(14), RandomStream(1))
    Sequential.from_json(spec.to_json()) == spec   # True
"""

from __future__ import annotations

import json
from typing import Any, Iterator

from pydantic import BaseModel, ConfigDict, field_serializer, field_validator

from deepsharp import layers as _layers  # noqa: F401  (registers every layer kind)
from deepsharp.errors import ShapeError, SpecError
from deepsharp.layers.base import LayerSpec, Lowering, attach_verbs, parse_spec
from deepsharp.random import RandomStream
from deepsharp.shape import Shape


@attach_verbs
class Sequential(BaseModel):
    """A stack of layer specs. Build it with verbs; lower it with `lower(shape, random)`."""

    model_config = ConfigDict(frozen=True)
    layers: tuple[Any, ...] = ()

    @field_validator("layers", mode="before")
    @classmethod
    def _parse_layers(cls, value: Any) -> tuple[LayerSpec, ...]:
        return tuple(parse_spec(item) for item in value)

    @field_serializer("layers")
    def _dump_layers(self, layers: tuple[LayerSpec, ...]) -> list[dict[str, Any]]:
        return [spec.dump() for spec in layers]

    def _append(self, spec: LayerSpec) -> "Sequential":
        return Sequential(layers=self.layers + (spec,))

    def then(self, other: "Sequential") -> "Sequential":
        """This stack followed by `other`'s layers."""
        return Sequential(layers=self.layers + other.layers)

    def __len__(self) -> int:
        return len(self.layers)

    def __iter__(self) -> Iterator[LayerSpec]:  # type: ignore[override]
        return iter(self.layers)

    def __getitem__(self, index: int) -> LayerSpec:
        return self.layers[index]

    def __repr__(self) -> str:
        return "Sequential()" + "".join(f".{spec.describe()}" for spec in self.layers)

    __str__ = __repr__

    def to_json(self) -> str:
        return self.model_dump_json()

    @classmethod
    def from_json(cls, text: str) -> "Sequential":
        """The spec `to_json` wrote; an unknown kind or a bad argument is a SpecError naming it."""
        data = json.loads(text)
        if not isinstance(data, dict) or not isinstance(data.get("layers"), list):
            raise SpecError(f"a Sequential spec is an object with a 'layers' list, received {text[:80]!r}")
        return cls(layers=tuple(parse_spec(item) for item in data["layers"]))

    def shape_after(self, count: int, shape: Shape) -> Shape | None:
        """The shape the first `count` layers give for examples of `shape`, or None when they
        cannot take it (lowered for it: their parameters are made, then dropped)."""
        try:
            return Sequential(layers=self.layers[:count]).lower(shape).output_shape
        except (ShapeError, SpecError):
            return None

    def lower(self, shape: Shape, random: RandomStream | None = None, *,
              place: str = "") -> "Network":
        """The stack of steps for examples of `shape`, parameters drawn from `random`.

        A verb that cannot take the shape reaching it is refused with its place and that shape.
        """
        from deepsharp.network import Network

        if not isinstance(shape, Shape):
            raise SpecError(f"lower: shape must be a Shape, received {shape!r}")
        random = RandomStream(0) if random is None else random
        steps = []
        current = shape
        for index, spec in enumerate(self.layers):
            at = Lowering(f"{place}{index}", random)
            if index > 0 and spec.input_dtype != "float32":  # no layer gives ids: only the input holds them
                raise ShapeError(f"{spec.describe()} at place {at.place} reads {spec.input_dtype} "
                                 f"ids, so it must come first; here it follows "
                                 f"{self.layers[index - 1].describe()}, which gives float32 values")
            try:
                step = spec.build(current, at)
            except ShapeError as error:
                raise ShapeError(f"{spec.describe()} at place {at.place} cannot take an input of "
                                 f"shape {current}: {error}") from None
            steps.append(step)
            current = step.output_shape
        return Network(self, shape, steps)
