"""The forms an exporter writes a finished tape in: float16 or int8 weights, the weights beside
the graph (external data) when written to a path, and the report of what was written.

    model = finish(exporter, tape, inputs, metadata)   # OnnxExport.model_of
    save(exporter, network, loss, path)                # OnnxExport.write(network, loss, path)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

import numpy as np
import onnx

import deepsharp
from deepsharp.network import Network
from deepsharp_export_onnx.errors import ExportRefused
from deepsharp_export_onnx.graph import Tape
from deepsharp_export_onnx.write import forms
from deepsharp_export_onnx.write.external import LIMIT, ExternalData, data_path, write_files
from deepsharp_export_onnx.write.preparation import (
    META_PREPARATION, preparation_metadata, write_in_front,
)
from deepsharp_export_onnx.write.report import ExportReport, largest_difference


def finish(exporter: Any, tape: Tape, inputs: Sequence[str], metadata: dict[str, str],
           outputs: Sequence[str]) -> onnx.ModelProto:
    faults = []
    if exporter._front is not None and len(inputs) != 1:
        faults.append(f"prepare: a preparation goes in front of a network with one input; this "
                      f"module has {len(inputs)} ({', '.join(inputs)})")
    elif exporter._front is not None:  # a traced network's preparation, in front of its nodes
        inputs, faults = write_in_front(tape, exporter._front, inputs[0])
        metadata = {**metadata, META_PREPARATION: preparation_metadata(exporter._front,
                                                                       inputs[0])}
    faults += form_faults(exporter, tape)
    if faults:
        raise ExportRefused(faults)
    if exporter.weights == "float16":
        forms.to_float16(tape)
    opset = max(tape.needed_opset(), forms.QUANTIZE_OPSET) if exporter.quantize else None
    model = tape.to_model(list(inputs), list(outputs), opset=opset, metadata=metadata,
                          graph_name="deepsharp", producer=("deepsharp", deepsharp.__version__),
                          tensor=exporter._plan)
    if exporter.quantize:
        model = forms.quantize_dynamic(model, tape.weights)
    return model


def form_faults(exporter: Any, tape: Tape) -> list[str]:
    """What the form asked cannot hold, or where it cannot go (a stream, past 2 GiB)."""
    faults = []
    payload = sum(array.nbytes for array in tape.initializers.values())
    if exporter.quantize and payload > LIMIT:
        faults.append(f"the weights take {payload:,} bytes, past protobuf's limit of {LIMIT:,}: "
                      f"quantize='dynamic' takes graphs under that limit")
    elif exporter._plan is None and (exporter.external_data is True or payload > LIMIT):
        why = ("external_data=True puts the weights beside the graph" if exporter.external_data
               else f"the weights take {payload:,} bytes, past protobuf's limit of {LIMIT:,}: "
                    f"they go beside the graph as external data")
        faults.append(f"{why}, which needs a path: write(network, loss, 'model.onnx')")
    if exporter.weights == "float16":
        faults += forms.float16_faults(tape)
    if exporter.quantize:
        if exporter.max_opset is not None and exporter.max_opset < forms.QUANTIZE_OPSET:
            faults.append(f"quantize='dynamic' writes operator set {forms.QUANTIZE_OPSET} or "
                          f"newer, above max_opset {exporter.max_opset}")
        faults += forms.quantize_faults(tape)
    return faults


def save(exporter: Any, network: Any, loss: Any, path: Path) -> None:
    """Write the graph to `path`, its weights beside it in `<name>.onnx.data` when it would pass
    2 GiB or external_data=True; a refused graph writes nothing."""
    plan = None if exporter.quantize else ExternalData(data_path(path).name)
    exporter._plan = plan
    try:
        model = exporter._model(network, loss)
    finally:
        exporter._plan = None
    if plan is not None and plan.arrays:
        size = plan.inline_size(model)
        if size > LIMIT and exporter.external_data is False:
            raise ExportRefused([f"the graph with its weights inside would take {size:,} bytes, "
                                 f"past protobuf's limit of {LIMIT:,}: external_data=False "
                                 f"refuses it"])
        if exporter.external_data is not True and size <= LIMIT:
            plan.inline(model)
    graph_bytes, data_bytes = write_files(model, plan, path)
    exporter.report = report(exporter, path, graph_bytes, data_bytes, network, loss)


def report(exporter: Any, graph: bytes | Path, graph_bytes: int, data_bytes: int, network: Any,
           loss: Any) -> ExportReport:
    form = ("int8 weights (dynamic)" if exporter.quantize else
            "float16 weights" if exporter.weights == "float16" else "float32")
    difference = rows = None
    if exporter.compare_on is not None:
        ids = getattr(network, "input_dtype", None) == "int64" or (
            isinstance(network, Network) and bool(network.steps)
            and network.steps[0].spec.input_dtype == "int64")
        difference, rows = largest_difference(
            graph, network, loss, exporter._prepare_of(network), exporter.compare_on,
            exporter.input_name, np.int64 if ids else np.float32)
    return ExportReport(form, graph_bytes, data_bytes, difference, rows)
