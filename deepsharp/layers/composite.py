"""Composite layers: branches that are stacks of their own.

- `residual(branch)`: x + branch(x);
- `gate(branch)`: x * branch(x), the branch's output broadcast over x (squeeze-and-excitation);
- `concat(branch_a, branch_b, ...)`: the branches' outputs side by side along the last axis;
- `columns(start, stop)`: the block x[..., start:stop] of the last axis.

A branch is a `Sequential`, lowered at the composite's place: `residual` at place 3 holds its
branch's steps at `3.branch.0`, `3.branch.1`, ... (slots `3.branch.0.weight`), `concat` its k-th
branch's at `3.branches.k.0`, .... Branches see the series' mask as the composite does.

The helpers at the end walk a stack's specs through every branch by place; the exporter and the
importer use them to put training-only layers back where they were, and `with_low_rank` to find
the dense layers it adapts.
"""

from __future__ import annotations

import re
from typing import Any, ClassVar, Iterator

from pydantic import NonNegativeInt, PositiveInt, ValidationInfo, field_validator

from deepsharp.errors import ShapeError, SpecError
from deepsharp.layers.base import Flow, LayerSpec, Lowering, Step, layer, make_spec
from deepsharp.module import Module
from deepsharp.sequential import Sequential
from deepsharp.shape import Shape
from deepsharp.tensors import Tensor, apply


class CompositeSpec(LayerSpec):
    """A layer holding branches; each is named by the infix its steps' places carry."""

    def branch_specs(self) -> list[tuple[str, Sequential]]:
        return []

    def with_branch_specs(self, branches: list[Sequential]) -> "CompositeSpec":
        return self


def _as_branch(verb: str, label: str, value: Any) -> Sequential:
    """A verb's branch argument, refused by name when it is not a `Sequential`."""
    if not isinstance(value, Sequential):
        raise SpecError(f"{verb}: {label} must be a Sequential, received {type(value).__name__}")
    return value


class _OneBranch(CompositeSpec):
    """A composite of one branch whose output is joined to x (added, multiplied)."""

    branch: Sequential
    EMPTY: ClassVar[str] = ""  # why an empty branch is refused

    @classmethod
    def from_verb(cls, branch: Any) -> "_OneBranch":
        return make_spec(cls, cls.kind, branch=_as_branch(cls.kind, "branch", branch))

    @field_validator("branch")
    @classmethod
    def _not_empty(cls, branch: Sequential) -> Sequential:
        if not len(branch):
            raise ValueError(f"must hold at least one layer ({cls.EMPTY})")
        return branch

    def branch_specs(self) -> list[tuple[str, Sequential]]:
        return [("branch", self.branch)]

    def with_branch_specs(self, branches: list[Sequential]) -> "_OneBranch":
        return type(self)(branch=branches[0])

    def describe(self) -> str:
        return f"{self.kind}({self.branch!r})"


@layer("residual")
class Residual(_OneBranch):
    """x + branch(x): the branch must give back the shape it takes.

    >>> Sequential().residual(Sequential().layer_norm().multi_head_attention(4, 128))
    """

    EMPTY: ClassVar[str] = "x + x is not a residual"

    def build(self, shape: Shape, at: Lowering) -> "ResidualStep":
        branch = self.branch.lower(shape, at.random, place=f"{at.place}.branch.")
        if branch.output_shape != shape:
            raise ShapeError(f"the branch gives {branch.output_shape}; a residual needs it to give "
                             f"back the shape it takes, {shape}")
        return ResidualStep(self, at.place, shape, shape, branch)


class ResidualStep(Step):
    def __init__(self, spec: Residual, place: str, input_shape: Shape, output_shape: Shape,
                 branch: Module) -> None:
        super().__init__(spec, place, input_shape, output_shape)
        self.branch = branch

    def call(self, flow: Flow) -> Flow:
        out = self.branch.call(flow)
        return Flow(apply("add", flow.value, out.value), flow.mask)

    def forward(self, x: Tensor) -> Tensor:
        return self.call(Flow(x)).value


@layer("gate")
class Gate(_OneBranch):
    """x * branch(x): the branch's output broadcast over x's shape, each of its axes x's size or
    1. A squeeze-and-excitation block (MobileNetV3's, EfficientNet's) is a gate whose branch
    pools the places away and weighs each channel:

    >>> Sequential().gate(Sequential().global_avg_pool(keep_axes=True).conv2d(4, 1).relu()
    ...                   .conv2d(16, 1).hard_sigmoid())
    """

    EMPTY: ClassVar[str] = "x * x is not a gate"

    def build(self, shape: Shape, at: Lowering) -> "GateStep":
        branch = self.branch.lower(shape, at.random, place=f"{at.place}.branch.")
        out = branch.output_shape
        if out.rank != shape.rank or any(b not in (1, d) for b, d in zip(out, shape)):
            raise ShapeError(f"the branch gives {out}; a gate multiplies x {shape} by it, so "
                             f"each of its axes must be x's size or 1")
        return GateStep(self, at.place, shape, shape, branch)


class GateStep(ResidualStep):
    """A residual's step with the branch multiplied in instead of added."""

    def call(self, flow: Flow) -> Flow:
        out = self.branch.call(flow)
        return Flow(apply("mul", flow.value, out.value), flow.mask)


class _Branches(Module):
    """The branches of a concat, as children named 0, 1, ... (slot paths `3.branches.1.0.weight`)."""

    def __init__(self, networks: list[Module]) -> None:
        super().__init__()
        for index, network in enumerate(networks):
            self.add_module(str(index), network)


@layer("concat")
class Concat(CompositeSpec):
    """The branches' outputs side by side along the last axis; an empty branch (`Sequential()`)
    passes x as it is. Every branch must give the same shape but for the last axis.

    >>> Sequential().concat(Sequential(), Sequential().dense(8).relu())
    """

    branches: tuple[Sequential, ...]

    @staticmethod
    def from_verb(*branches: Any) -> "Concat":
        branches = tuple(_as_branch("concat", f"branch {i}", b) for i, b in enumerate(branches))
        return make_spec(Concat, "concat", branches=branches)

    @field_validator("branches")
    @classmethod
    def _two_or_more(cls, branches: tuple[Sequential, ...]) -> tuple[Sequential, ...]:
        if len(branches) < 2:
            raise ValueError("must be two or more")
        return branches

    def branch_specs(self) -> list[tuple[str, Sequential]]:
        return [(f"branches.{k}", b) for k, b in enumerate(self.branches)]

    def with_branch_specs(self, branches: list[Sequential]) -> "Concat":
        return Concat(branches=tuple(branches))

    def describe(self) -> str:
        return f"concat({', '.join(repr(b) for b in self.branches)})"

    def build(self, shape: Shape, at: Lowering) -> "ConcatStep":
        networks = [b.lower(shape, at.random, place=f"{at.place}.branches.{k}.")
                    for k, b in enumerate(self.branches)]
        shapes = [n.output_shape for n in networks]
        if any(s.rank != shapes[0].rank or s.rank == 0 or s[:-1] != shapes[0][:-1]
               for s in shapes):
            raise ShapeError(f"the branches give {', '.join(str(s) for s in shapes)}; a concat "
                             f"needs them equal but for the last axis")
        out = Shape(*shapes[0][:-1], sum(s[-1] for s in shapes))
        return ConcatStep(self, at.place, shape, out, networks)


class ConcatStep(Step):
    def __init__(self, spec: Concat, place: str, input_shape: Shape, output_shape: Shape,
                 networks: list[Module]) -> None:
        super().__init__(spec, place, input_shape, output_shape)
        self.branches = _Branches(networks)

    @property
    def networks(self) -> list[Module]:
        return list(self.branches._modules.values())

    def mask_refusal(self) -> None:
        return None  # each branch honours the mask or refuses it; reduced branches use it up

    def call(self, flow: Flow) -> Flow:
        outs = [network.call(flow).value for network in self.networks]
        y = apply("concat", *outs, axis=outs[0].ndim - 1)
        keeps = flow.mask is not None and y.ndim >= 3 and y.shape[:2] == flow.value.shape[:2]
        return Flow(y, flow.mask if keeps else None)

    def forward(self, x: Tensor) -> Tensor:
        return self.call(Flow(x)).value


@layer("columns")
class Columns(LayerSpec):
    """x[..., start:stop]: a block of the last axis (start included, stop excluded).

    >>> Sequential().concat(Sequential().columns(0, 4).dense(8), Sequential().columns(4, 10))
    """

    start: NonNegativeInt
    stop: PositiveInt

    @field_validator("stop")
    @classmethod
    def _ordered(cls, stop: int, info: ValidationInfo) -> int:
        start = info.data.get("start")
        if start is not None and stop <= start:
            raise ValueError(f"must be above start ({start})")
        return stop

    def build(self, shape: Shape, at: Lowering) -> "ColumnsStep":
        if shape.rank == 0:
            raise ShapeError("needs at least one axis, received a scalar")
        if self.stop > shape[-1]:
            raise ShapeError(f"stop {self.stop} is beyond the {shape[-1]} channels of the last axis")
        return ColumnsStep(self, at.place, shape, Shape(*shape[:-1], self.stop - self.start))


class ColumnsStep(Step):
    def forward(self, x: Tensor) -> Tensor:
        return x[..., self.spec.start:self.spec.stop]


# -- walking a stack's specs through its branches ---------------------------------------------------
_BRANCH = re.compile(r"^(\d+)(?:\.(branch|branches\.\d+)\.(.+))?$")


def walk_specs(stack: Sequential, prefix: str = "") -> Iterator[tuple[str, LayerSpec]]:
    """Every spec of `stack` and of its branches, with its place (`3`, `3.branch.0`, ...)."""
    for index, spec in enumerate(stack.layers):
        place = f"{prefix}{index}"
        yield place, spec
        if isinstance(spec, CompositeSpec):
            for infix, branch in spec.branch_specs():
                yield from walk_specs(branch, f"{place}.{infix}.")


def _split(place: str) -> tuple[int, str | None, str | None]:
    match = _BRANCH.match(place)
    if match is None:
        raise SpecError(f"place {place!r} is not a place in a stack (3, 3.branch.0, "
                        f"3.branches.1.0, ...)")
    return int(match.group(1)), match.group(2), match.group(3)


def spec_at(stack: Sequential, place: str, whole: str | None = None) -> LayerSpec:
    """The spec at `place` (SpecError naming the place when there is none)."""
    whole = whole or place
    index, infix, rest = _split(place)
    if index >= len(stack):
        raise SpecError(f"place {whole!r}: the stack has {len(stack)} layers")
    spec = stack[index]
    if infix is None:
        return spec
    branches = dict(spec.branch_specs()) if isinstance(spec, CompositeSpec) else {}
    if infix not in branches:
        raise SpecError(f"place {whole!r}: layer {index} ({spec.describe()}) has no {infix}")
    return spec_at(branches[infix], rest, whole)


def edit_at(stack: Sequential, place: str, edit) -> Sequential:
    """`stack` with the layer list holding `place` changed by `edit(layers, index) -> layers`."""
    index, infix, rest = _split(place)
    layers = list(stack.layers)
    if infix is None:
        return Sequential(layers=tuple(edit(layers, index)))
    spec = layers[index] if index < len(layers) else None
    if not isinstance(spec, CompositeSpec) or infix not in dict(spec.branch_specs()):
        raise SpecError(f"place {place!r}: no branch {infix} at layer {index}")
    branches = [edit_at(b, rest, edit) if name == infix else b for name, b in spec.branch_specs()]
    layers[index] = spec.with_branch_specs(branches)
    return Sequential(layers=tuple(layers))


def replace_at(stack: Sequential, place: str, spec: LayerSpec) -> Sequential:
    def put(layers: list, index: int) -> list:
        layers[index] = spec
        return layers

    return edit_at(stack, place, put)


def insert_at(stack: Sequential, place: str, spec: LayerSpec) -> Sequential:
    """`stack` with `spec` inserted so that it holds `place`."""
    def put(layers: list, index: int) -> list:
        if index > len(layers):
            raise SpecError(f"place {place!r} is beyond the {len(layers)} layers there")
        layers.insert(index, spec)
        return layers

    return edit_at(stack, place, put)
