"""Layer specs, steps, and the table that makes each spec a verb of `Sequential`.

A *spec* is a frozen pydantic model holding configuration only, checked when made. Lowering it
(`spec.build(shape, at)`) takes the shape reaching it and the random stream and returns a *step*: a
Module holding numpy parameters, its input and output shapes, and `forward` over tensors.

Registering a spec with `@layer` adds it to `SPEC_KINDS` (so a JSON spec finds its class by
`kind`) and adds a verb of the same name to `Sequential`, whose arguments are the spec's fields in
order (or `from_verb`'s, where the spec defines one).
"""

from __future__ import annotations

import inspect
import typing
from abc import abstractmethod
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Callable, ClassVar

import numpy as np
from pydantic import BaseModel, ConfigDict, ValidationError

from deepsharp.errors import ShapeError, SpecError
from deepsharp.layers.masks import refuse_mask
from deepsharp.module import Module
from deepsharp.random import RandomStream
from deepsharp.shape import Shape
from deepsharp.tensors import Tensor

SPEC_KINDS: dict[str, type["LayerSpec"]] = {}
VERB_TARGETS: list[type] = []  # the builder class(es) verbs are attached to (Sequential)


@dataclass(frozen=True)
class Lowering:
    """Where a spec is being lowered: its place in the stack (`3`, `2.branch.0`) and the stream."""

    place: str
    random: RandomStream

    def generator(self, purpose: str = "initialise") -> np.random.Generator:
        generator = self.random.generator(f"{purpose}:{self.place}")
        return generator if _BUDGET.get() is None else _Budgeted(generator)  # type: ignore[return-value]

    def child(self, name: str) -> "Lowering":
        return Lowering(f"{self.place}.{name}", self.random)


# -- allocation budget -----------------------------------------------------------------------
# A file of a few hundred bytes can declare a spec whose lowering would draw gigabytes (dense(10**9)).
# Loading a file lowers under a budget of the elements the file can hold: every draw and every
# large array a step makes at lowering claims its elements first, and the claim that would pass
# the budget is refused (a ShapeError, which `lower` names with the layer's place) before a byte
# is allocated.
_BUDGET: ContextVar["list[int] | None"] = ContextVar("lowering_budget", default=None)
_SIZE_ARGUMENT = {"uniform": 2, "normal": 2, "standard_normal": 0, "random": 0, "integers": 2}


@contextmanager
def allocation_budget(elements: int):
    """Within the block, lowering may make at most `elements` numbers (claimed with `claim`)."""
    token = _BUDGET.set([int(elements)])
    try:
        yield
    finally:
        _BUDGET.reset(token)


def claim(elements: int, what: str) -> None:
    """Count `elements` numbers about to be made for `what` against the active budget (if any)."""
    left = _BUDGET.get()
    if left is None:
        return
    if elements > left[0]:
        raise ShapeError(f"{what} declares {elements:,} numbers, more than the {left[0]:,} left in "
                         f"the budget of what is being read")
    left[0] -= int(elements)


class _Budgeted:
    """A numpy Generator whose draws claim their size first."""

    def __init__(self, generator: np.random.Generator) -> None:
        self._generator = generator

    def __getattr__(self, name: str) -> Any:
        method = getattr(self._generator, name)
        if name not in _SIZE_ARGUMENT:
            return method

        def drawing(*args: Any, **kwargs: Any) -> Any:
            index = _SIZE_ARGUMENT[name]
            size = kwargs.get("size", args[index] if len(args) > index else None)
            dims = () if size is None else (size,) if np.ndim(size) == 0 else tuple(size)
            count = 1
            for dim in dims:
                count *= max(int(dim), 0)
            claim(count, f"a draw of shape {size}")
            return method(*args, **kwargs)

        return drawing


@dataclass(frozen=True)
class Flow:
    """What passes between steps: the values and, for series, which steps are real.

    `mask` is a bool tensor (batch, steps) or None; a step that keeps the steps axis passes it on.
    It is a tensor made by primitives from the input (not a numpy array) so that a tracer records
    how it is computed instead of freezing one batch's mask into the graph.
    """

    value: Tensor
    mask: Tensor | None = None


class LayerSpec(BaseModel):
    """The configuration of one layer. Subclasses set `kind` and implement `build`."""

    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)
    kind: ClassVar[str] = ""
    # what the network's input holds when this layer comes first ("int64" for ids)
    input_dtype: ClassVar[str] = "float32"
    # a layer that only acts in training (dropout, noise): an inference graph holds no node of it
    training_only: ClassVar[bool] = False
    # settings that only act in training (batch norm's momentum): no node holds them either
    training_fields: ClassVar[tuple[str, ...]] = ()

    @abstractmethod
    def build(self, shape: Shape, at: Lowering) -> "Step":
        """The step this spec lowers to for inputs of `shape` (ShapeError if it cannot)."""

    def dump(self) -> dict[str, Any]:
        return {"kind": self.kind, **self.model_dump(mode="json")}

    def describe(self) -> str:
        """The verb call that makes this spec: `dense(16)`, `gelu(approximate='tanh')`."""
        args = [repr(getattr(self, name)) for name, field in type(self).model_fields.items()
                if field.is_required()]
        args += [f"{name}={getattr(self, name)!r}" for name, field in type(self).model_fields.items()
                 if not field.is_required() and getattr(self, name) != field.default]
        return f"{self.kind}({', '.join(args)})"


class Step(Module):
    """A lowered layer: parameters as attributes, shapes of one example in and out."""

    def __init__(self, spec: LayerSpec, place: str, input_shape: Shape, output_shape: Shape):
        super().__init__()
        object.__setattr__(self, "spec", spec)
        object.__setattr__(self, "place", place)
        object.__setattr__(self, "input_shape", input_shape)
        object.__setattr__(self, "output_shape", output_shape)

    @property
    def kind(self) -> str:
        return self.spec.kind

    def keeps_steps(self) -> bool:
        """Whether the output keeps the steps axis of a series, so its mask rides on (the rule the
        exporter follows too)."""
        inp, out = self.input_shape, self.output_shape
        return inp.rank >= 2 and out.rank >= 2 and inp[0] == out[0]

    def mask_refusal(self) -> str | None:
        """Why this step cannot honour the mask of a series reaching it, with the way out; None
        when it can. The network (`call`) and the exporter refuse a masked series by this one
        answer, so they agree. By default a step keeping the steps axis acts on each step alone
        (a dense layer, an activation, a layer norm: the mask rides on); one that does not keep
        it, and does not reduce over the real steps itself (overriding this), is refused."""
        if self.keeps_steps():
            return None
        return ("its output does not keep the series' steps, so after it the padded steps would "
                "count as real values; reduce over the steps first (global_max_pool, "
                "global_avg_pool, attention_pool or an lstm's last state), or give series "
                "without a mask")

    def call(self, flow: Flow) -> Flow:
        """Run on a flow: by default forward the values, the mask riding on (the step acts on
        each step alone), or refused by name (`mask_refusal`)."""
        refuse_mask(self, flow.mask)
        out = self.forward(flow.value)
        if flow.mask is not None and out.shape[:2] != flow.value.shape[:2]:
            raise ShapeError(f"{self.kind} at place {self.place}: gives {out.shape[1]} steps for a "
                             f"masked series of {flow.value.shape[1]}, so the mask cannot ride on; "
                             f"give series without a mask")
        return Flow(out, flow.mask)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.place}: {self.spec.describe()}, {self.input_shape} -> {self.output_shape})"


def _field_message(verb: str, error: ValidationError) -> str:
    parts = []
    for item in error.errors():
        loc = ".".join(str(p) for p in item["loc"]) or "arguments"
        msg = item["msg"]
        msg = msg.replace("Input should be", "must be").replace("Value error, ", "")
        msg = msg[0].lower() + msg[1:] if msg else msg
        parts.append(f"{verb}: {loc} {msg}, received {item.get('input')!r}")
    return "; ".join(parts)


def _scalar_kinds(annotation: Any) -> set[type] | None:
    """The scalar types a field's annotation admits (through unions, tuples, Annotated, Literal);
    None when it admits anything (Any, a spec, a stack)."""
    if annotation is Any:
        return None
    if annotation in (bool, int, float, str, type(None)):
        return {annotation}
    origin = typing.get_origin(annotation)
    if origin is typing.Literal:
        return {type(value) for value in typing.get_args(annotation)}
    if origin is typing.Annotated:
        return _scalar_kinds(typing.get_args(annotation)[0])
    if origin is None:
        return None
    kinds: set[type] = set()
    for argument in typing.get_args(annotation):
        if argument is not Ellipsis:
            inner = _scalar_kinds(argument)
            if inner is None:
                return None
            kinds |= inner
    return kinds


def _plain(value: Any) -> Any:
    """numpy scalars as the Python scalars they stand for (np.int64(3) is 3, np.bool_ a bool)."""
    if isinstance(value, np.generic) and value.ndim == 0:
        return value.item()
    if isinstance(value, (tuple, list)):
        return type(value)(_plain(v) for v in value)
    return value


def _strict_faults(verb: str, name: str, value: Any, kinds: set[type]) -> list[str]:
    """What pydantic's lax mode would silently convert: True to 1, "3" to 3, 3.0 to 3, 1 to True."""
    if isinstance(value, (tuple, list)):
        return [f for item in value for f in _strict_faults(verb, name, item, kinds)]
    words = {bool: "True or False", int: "an integer", float: "a number", str: "a string"}
    expected = " or ".join(sorted({words[k] for k in kinds if k in words}
                                  - ({"an integer"} if float in kinds else set()))) or "None"
    wrong = ((isinstance(value, bool) and bool not in kinds)
             or (isinstance(value, str) and str not in kinds)
             or (isinstance(value, int) and not isinstance(value, bool) and not kinds & {int, float})
             or (isinstance(value, float) and float not in kinds))
    if wrong:
        return [f"{verb}: {name} must be {expected}, received {value!r} ({type(value).__name__})"]
    return []


def make_spec(cls: type[LayerSpec], verb: str, **values: Any) -> LayerSpec:
    """Build a spec, turning pydantic's complaint into one naming the verb, argument and value.

    Values are taken strictly: a bool is not an integer (`dense(True)` is refused, not
    `dense(1)`), a string is not a number, a float is not an integer, an integer is not a bool;
    numpy scalars count as the Python scalars they hold."""
    values = {name: _plain(value) for name, value in values.items()}
    faults = []
    for name, value in values.items():
        field = cls.model_fields.get(name)
        kinds = _scalar_kinds(field.annotation) if field is not None else None
        if kinds is not None:
            faults += _strict_faults(verb, name, value, kinds)
    if faults:
        raise SpecError("; ".join(faults))
    try:
        return cls(**values)
    except ValidationError as error:
        raise SpecError(_field_message(verb, error)) from None


def _verb_signature(cls: type[LayerSpec]) -> inspect.Signature:
    source = getattr(cls, "from_verb", None)
    if source is not None:
        params = list(inspect.signature(source).parameters.values())
        return inspect.Signature([inspect.Parameter("self", inspect.Parameter.POSITIONAL_ONLY)]
                                 + params)
    params = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_ONLY)]
    for name, field in cls.model_fields.items():
        default = inspect.Parameter.empty if field.is_required() else field.default
        params.append(inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD,
                                        default=default, annotation=field.annotation))
    return inspect.Signature(params)


def _make_verb(cls: type[LayerSpec]) -> Callable[..., Any]:
    signature = _verb_signature(cls)
    factory = getattr(cls, "from_verb", None)

    def verb(self, *args: Any, **kwargs: Any):
        try:
            bound = signature.bind(self, *args, **kwargs)
        except TypeError as error:
            raise SpecError(f"{cls.kind}: {error}") from None
        bound.apply_defaults()
        if factory is not None:  # by position and keyword, so a `from_verb(*branches)` works
            return self._append(factory(*bound.args[1:], **bound.kwargs))
        values = dict(list(bound.arguments.items())[1:])
        spec = make_spec(cls, cls.kind, **values)
        return self._append(spec)

    verb.__name__ = verb.__qualname__ = cls.kind
    verb.__signature__ = signature  # type: ignore[attr-defined]
    verb.__doc__ = cls.__doc__
    return verb


def layer(kind: str) -> Callable[[type[LayerSpec]], type[LayerSpec]]:
    """Register a spec class under `kind` and give `Sequential` a verb of that name."""

    def register(cls: type[LayerSpec]) -> type[LayerSpec]:
        if kind in SPEC_KINDS:
            raise SpecError(f"layer kind {kind!r} is registered twice")
        cls.kind = kind
        SPEC_KINDS[kind] = cls
        for target in VERB_TARGETS:
            setattr(target, kind, _make_verb(cls))
        return cls

    return register


def attach_verbs(target: type) -> type:
    """Give `target` (the builder) every registered verb, and those registered later."""
    VERB_TARGETS.append(target)
    for cls in SPEC_KINDS.values():
        setattr(target, cls.kind, _make_verb(cls))
    return target


def parse_spec(data: Any) -> LayerSpec:
    """A spec from its JSON form `{"kind": ..., fields...}` (or a spec, returned as is)."""
    if isinstance(data, LayerSpec):
        return data
    if not isinstance(data, dict) or "kind" not in data:
        raise SpecError(f"a layer spec must be an object with a 'kind', received {data!r}")
    fields = dict(data)
    kind = fields.pop("kind")
    if kind not in SPEC_KINDS:
        raise SpecError(f"unknown layer kind {kind!r}; known: {', '.join(sorted(SPEC_KINDS))}")
    return make_spec(SPEC_KINDS[kind], kind, **fields)


def require_rank(spec: LayerSpec, shape: Shape, ranks: tuple[int, ...], what: str) -> None:
    """Refuse a shape whose rank is not among `ranks` (the caller names the place)."""
    if shape.rank not in ranks:
        raise ShapeError(f"needs {what}, received an input of shape {shape}")
