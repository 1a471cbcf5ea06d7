"""TracedModel: the graph a trace recorded, written as ONNX on demand.

    traced.to_onnx()          # an onnx.ModelProto
    traced.to_bytes()         # its bytes (equal graphs give equal bytes)
    traced.save_onnx(path)
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from deepsharp.tracing.graph import TraceGraph
from deepsharp.tracing.symbols import describe


class TracedModel:
    """The inputs, constants and operations the outputs need, in the order they ran."""

    def __init__(self, graph: TraceGraph) -> None:
        self.graph = graph

    @property
    def input_names(self) -> list[str]:
        return [self.graph.values[v].name for v in self.graph.inputs]

    @property
    def output_names(self) -> list[str]:
        return [name for name, _ in self.graph.outputs]

    def to_onnx(self, max_opset: int | None = None) -> Any:
        """The graph as an `onnx.ModelProto`, in the oldest operator set holding every node
        (`ExportRefused` naming the nodes when that is newer than `max_opset`)."""
        from deepsharp_export_onnx.trace.lower import traced_model_proto

        return traced_model_proto(self.graph, max_opset=max_opset)

    def to_bytes(self, max_opset: int | None = None) -> bytes:
        return self.to_onnx(max_opset).SerializeToString(deterministic=True)

    def save_onnx(self, path: str | os.PathLike, max_opset: int | None = None) -> None:
        """Write the ONNX file; a temporary file is renamed into place, so a refused or failed
        write leaves no half-written file."""
        data = self.to_bytes(max_opset)
        target = Path(path)
        temporary = target.with_name(f".{target.name}.partial")
        temporary.write_bytes(data)
        os.replace(temporary, target)

    def __repr__(self) -> str:
        def side(ids):
            return ", ".join(f"{self.graph.values[v].name} {describe(self.graph.values[v].dims)}"
                             for v in ids)

        outputs = ", ".join(f"{n} {describe(self.graph.values[v].dims)}"
                            for n, v in self.graph.outputs)
        return (f"TracedModel(inputs: {side(self.graph.inputs)}; outputs: {outputs}; "
                f"{len(self.graph.ops)} operations)")
