"""Importing this package registers every writer (one module per step family)."""

from deepsharp_export_onnx.write.writers import activations, dense, outputs  # noqa: F401
from deepsharp_export_onnx.write.writers import conv, norm, pool, resample, reshape  # noqa: F401
from deepsharp_export_onnx.write.writers import attention, composite, sequences  # noqa: F401
from deepsharp_export_onnx.write.writers import data_format  # noqa: F401
from deepsharp_export_onnx.write.writers.base import WRITERS, Refusal, Writing, writer_for, writes

__all__ = ["WRITERS", "Refusal", "Writing", "writer_for", "writes"]
