"""What an export wrote: its form, its size, and how far its answers are from the float32
network's on the caller's rows.

    export = OnnxExport(Shape(30), weights="float16", compare_on=x_test)
    export.write(network, loss, "model.onnx")
    print(export.report)
    # float16 weights: 7,412 bytes; largest difference from the float32 network on 114 rows: 2.4e-04
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from deepsharp.preparation import Preparation, as_columns
from deepsharp_export_onnx.errors import ExportRefused


@dataclass(frozen=True)
class ExportReport:
    """`form`: "float32", "float16 weights" or "int8 weights (dynamic)"; `graph_bytes`: the
    graph (the .onnx file, or the bytes written); `data_bytes`: its external data file (0 when
    none); `largest_difference`: the largest absolute difference between the graph's answers in
    ONNX Runtime and the float32 network's (`prepare` then `network.predict`) on the rows given
    as `compare_on` (`rows` of them), None when none were given."""

    form: str
    graph_bytes: int
    data_bytes: int = 0
    largest_difference: float | None = None
    rows: int | None = None

    @property
    def size(self) -> int:
        return self.graph_bytes + self.data_bytes

    def __str__(self) -> str:
        text = f"{self.form}: {self.size:,} bytes"
        if self.data_bytes:
            text += f" ({self.graph_bytes:,} graph + {self.data_bytes:,} external data)"
        if self.largest_difference is not None:
            text += (f"; largest difference from the float32 network on {self.rows} rows: "
                     f"{self.largest_difference:.3g}")
        return text


def _session(graph: bytes | Path) -> Any:
    try:
        import onnxruntime as ort
    except ImportError:
        raise ExportRefused(["compare_on needs onnxruntime, which is not installed (pip install "
                             "onnxruntime, or deepsharp[runtime])"]) from None
    options = ort.SessionOptions()
    options.log_severity_level = 3
    source = str(graph) if isinstance(graph, Path) else graph
    return ort.InferenceSession(source, options, providers=["CPUExecutionProvider"])


def feeds(prepare: Preparation | None, rows: Any, input_name: str, dtype: Any) -> dict[str, Any]:
    """The graph's inputs for raw `rows`: each prepared column as the graph takes it, or the
    rows themselves as the network's input."""
    if prepare is None:
        return {input_name: np.asarray(rows, dtype=dtype)}
    columns = as_columns(prepare, input_name)
    return columns.inputs(rows if columns is prepare else {input_name: rows})


def largest_difference(graph: bytes | Path, network: Any, loss: Any, prepare: Preparation | None,
                       rows: Any, input_name: str, dtype: Any) -> tuple[float, int]:
    """(largest |graph - network|, the number of rows): NaN where both answer NaN counts as
    agreement, NaN on one side only as an infinite difference."""
    expected = network.predict(prepare(rows) if prepare is not None else rows, loss)
    answer = _session(graph).run(None, feeds(prepare, rows, input_name, dtype))[0]
    both = np.isnan(answer) & np.isnan(expected)
    difference = np.where(both, 0.0, np.abs(answer.astype(np.float64) - expected))
    worst = float(np.nanmax(difference)) if difference.size else 0.0
    if np.isnan(difference).any():
        worst = float("inf")
    return worst, len(expected)
