"""Write deepsharp networks as ONNX graphs, read such graphs back as networks, and check a graph's
shape annotations on a run.

    from deepsharp_export_onnx import OnnxExport, OnnxFile, check_annotations
    OnnxExport(Shape(14)).write(network, BinaryCrossEntropy(), stream)
    network = OnnxFile(BinaryCrossEntropy()).read(stream)
    bindings = check_annotations(model, {"input": x})     # {"batch": 7}

The package has one sub-package per direction, and the shared pieces below them:

    write/   OnnxExport; one writer per step type (writers/); the primitive -> node table
             (nodes, spatial_nodes, sequence_nodes) that layer writers and the tracer share
    read/    OnnxFile; a normalising pass (normalise/), then one reader per op type or pattern
             (readers/)
    check/   the run-time shape-annotation checker and its engines
    trace/   a traced graph lowered through write/'s node table
    graph.py (the tape), opsets.py, values.py, tables.py, compositions.py, errors.py, and
    commands.py (`deepsharp inspect | check`)

Readers never call writers: both call `layout/` and the tape.
"""

from deepsharp_export_onnx.check.annotations import check_annotations, check_inputs, run_annotation_check
from deepsharp_export_onnx.errors import AnnotationViolation, ExportRefused, ImportRefused, OnnxError
from deepsharp_export_onnx.write.export import OnnxExport
from deepsharp_export_onnx.write.report import ExportReport
from deepsharp_export_onnx.read.file import OnnxFile

__all__ = ["AnnotationViolation", "ExportRefused", "ExportReport", "ImportRefused", "OnnxError",
           "OnnxExport", "OnnxFile", "check_annotations", "check_inputs", "run_annotation_check"]
