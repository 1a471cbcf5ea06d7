"""Tracing a Module: every parameter and buffer named by its state_dict path, the evaluation pass
recorded from example inputs."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

from deepsharp.errors import TraceErrorKind, TraceException
from deepsharp.tracing.model import TracedModel
from deepsharp.tracing.tracer import Tracer

if TYPE_CHECKING:
    from deepsharp.module import Module

AxisNames = Mapping[int, str]


def _named(values: Any, names: Sequence[str] | None, stem: str) -> dict[str, Any]:
    """`values` (a mapping, a sequence or one value) by name: the given names, or `stem`
    (`input`), or `stem_0`, `stem_1`, ... for several."""
    if isinstance(values, Mapping):
        return {str(k): v for k, v in values.items()}
    values = list(values) if isinstance(values, (list, tuple)) else [values]
    if names is None:
        names = [stem] if len(values) == 1 else [f"{stem}_{i}" for i in range(len(values))]
    if len(names) != len(values):
        raise TraceException(TraceErrorKind.INVALID_USAGE, f"trace: {len(names)} {stem} names "
                             f"for {len(values)} {stem}s")
    return dict(zip(names, values))


def _inputs(examples: Any, names: Sequence[str] | None) -> tuple[list[str], list[Any]]:
    named = _named(examples, names, "input")
    return list(named), list(named.values())


def normalize_axis_names(axis_names: Any, names: list[str]) -> list[AxisNames]:
    """One mapping for every input (int keys), one per input name (str keys), or a list."""
    if axis_names is None:
        return [{} for _ in names]
    if isinstance(axis_names, Mapping):
        if all(isinstance(k, str) for k in axis_names):
            unknown = sorted(set(axis_names) - set(names))
            if unknown:
                raise TraceException(TraceErrorKind.INVALID_USAGE, f"trace: axis_names for "
                                     f"unknown inputs {unknown}; inputs: {names}")
            return [dict(axis_names.get(n, {})) for n in names]
        return [dict(axis_names) for _ in names]
    axis_names = list(axis_names)
    if len(axis_names) != len(names):
        raise TraceException(TraceErrorKind.INVALID_USAGE, f"trace: {len(axis_names)} axis_names "
                             f"mappings for {len(names)} inputs")
    return [dict(a or {}) for a in axis_names]


def _outputs(result: Any, names: Sequence[str] | None) -> dict[str, Any]:
    return _named(result, names, "output")


def trace_module(module: "Module", examples: Any, axis_names: Any = None, *,
                 input_names: Sequence[str] | None = None,
                 output_names: Sequence[str] | None = None,
                 call: Callable[..., Any] | None = None) -> TracedModel:
    """Trace `module`'s evaluation pass (`call(*inputs)`, by default `module.forward`) on
    `examples`; see `Module.trace`."""
    names, arrays = _inputs(examples, input_names)
    per_input = normalize_axis_names(axis_names, names)
    was_training = module.training
    module.eval()
    try:
        with Tracer() as tracer:
            for path, tensor in module._slots().items():
                tracer.parameter(path, tensor)
            xs = [tracer.input(n, a, ax) for n, a, ax in zip(names, arrays, per_input)]
            result = (call or module.forward)(*xs)
            return tracer.finish(_outputs(result, output_names))
    finally:
        module.train(was_training)


__all__ = ["normalize_axis_names", "trace_module"]
