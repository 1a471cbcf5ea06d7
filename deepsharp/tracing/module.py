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


def _inputs(examples: Any, names: Sequence[str] | None) -> tuple[list[str], list[Any]]:
    if isinstance(examples, Mapping):
        return [str(k) for k in examples], list(examples.values())
    arrays = list(examples) if isinstance(examples, (list, tuple)) else [examples]
    if names is None:
        names = ["input"] if len(arrays) == 1 else [f"input_{i}" for i in range(len(arrays))]
    if len(names) != len(arrays):
        raise TraceException(TraceErrorKind.INVALID_USAGE, f"trace: {len(names)} input names for "
                             f"{len(arrays)} example inputs")
    return list(names), arrays


def _axis_names(axis_names: Any, names: list[str]) -> list[AxisNames]:
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
    if isinstance(result, Mapping):
        return dict(result)
    values = list(result) if isinstance(result, (list, tuple)) else [result]
    if names is None:
        names = ["output"] if len(values) == 1 else [f"output_{i}" for i in range(len(values))]
    if len(names) != len(values):
        raise TraceException(TraceErrorKind.INVALID_USAGE, f"trace: {len(names)} output names "
                             f"for {len(values)} outputs")
    return dict(zip(names, values))


def trace_module(module: "Module", examples: Any, axis_names: Any = None, *,
                 input_names: Sequence[str] | None = None,
                 output_names: Sequence[str] | None = None,
                 call: Callable[..., Any] | None = None) -> TracedModel:
    """Trace `module`'s evaluation pass (`call(*inputs)`, by default `module.forward`) on
    `examples`; see `Module.trace`."""
    names, arrays = _inputs(examples, input_names)
    per_input = _axis_names(axis_names, names)
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


__all__ = ["trace_module"]
