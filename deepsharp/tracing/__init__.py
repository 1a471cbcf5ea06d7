"""Tracing: record one eager run of a model written as code as a graph, and write it as ONNX.

    from deepsharp.tracing import Tracer
    with Tracer() as tracer:
        x = tracer.input("x", example, axis_names={0: "batch"})
        traced = tracer.finish({"y": model(x)})
    traced.save_onnx("model.onnx")

`Module.trace(example_inputs, axis_names=...)` does the same for a Module, naming every parameter
and buffer by its state_dict path. See docs/tracing.md.
"""

from deepsharp.errors import TraceErrorKind, TraceException
from deepsharp.tracing.model import TracedModel
from deepsharp.tracing.module import trace_module
from deepsharp.tracing.tracer import Tracer

__all__ = ["TraceErrorKind", "TraceException", "TracedModel", "Tracer", "trace_module"]
