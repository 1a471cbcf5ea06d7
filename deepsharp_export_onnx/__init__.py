"""Write deepsharp networks as ONNX graphs and read such graphs back as networks.

    from deepsharp_export_onnx import OnnxExport, OnnxFile
    OnnxExport(Shape(14)).write(network, BinaryCrossEntropy(), stream)
    network = OnnxFile(BinaryCrossEntropy()).read(stream)
"""

from deepsharp_export_onnx.errors import ExportRefused, ImportRefused, OnnxError
from deepsharp_export_onnx.export import OnnxExport
from deepsharp_export_onnx.read import OnnxFile

__all__ = ["ExportRefused", "ImportRefused", "OnnxError", "OnnxExport", "OnnxFile"]
