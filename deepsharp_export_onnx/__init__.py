"""Write deepsharp networks as ONNX graphs, read such graphs back as networks, and check a graph's
shape annotations on a run.

    from deepsharp_export_onnx import OnnxExport, OnnxFile, check_annotations
    OnnxExport(Shape(14)).write(network, BinaryCrossEntropy(), stream)
    network = OnnxFile(BinaryCrossEntropy()).read(stream)
    bindings = check_annotations(model, {"input": x})     # {"batch": 7}
"""

from deepsharp_export_onnx.annotations import check_annotations, check_inputs, run_annotation_check
from deepsharp_export_onnx.errors import AnnotationViolation, ExportRefused, ImportRefused, OnnxError
from deepsharp_export_onnx.export import OnnxExport
from deepsharp_export_onnx.read import OnnxFile

__all__ = ["AnnotationViolation", "ExportRefused", "ImportRefused", "OnnxError", "OnnxExport",
           "OnnxFile", "check_annotations", "check_inputs", "run_annotation_check"]
