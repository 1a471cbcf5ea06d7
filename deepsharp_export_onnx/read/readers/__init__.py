"""Importing this package registers every reader (one module per op family)."""

from deepsharp_export_onnx.read.readers import activations, dense, outputs  # noqa: F401
from deepsharp_export_onnx.read.readers import (  # noqa: F401
    compositions, conv, norm, pool, resample, reshape, windows,
)
from deepsharp_export_onnx.read.readers import attention, recurrent, sequences  # noqa: F401
from deepsharp_export_onnx.read.readers import attention_region  # noqa: F401  (after attention)
from deepsharp_export_onnx.read.readers import masked  # noqa: F401
from deepsharp_export_onnx.read.readers import composite  # noqa: F401  (its fork reader goes last)
from deepsharp_export_onnx.read.readers.base import (
    FORK_READERS, PATTERN_READERS, READERS, Read, Reading, Unreadable, reads, reads_fork,
    reads_pattern,
)
from deepsharp_export_onnx.read.readers.view import GraphView

__all__ = ["FORK_READERS", "GraphView", "PATTERN_READERS", "READERS", "Read", "Reading",
           "Unreadable", "reads", "reads_fork", "reads_pattern"]
