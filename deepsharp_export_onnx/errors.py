"""The errors of the ONNX package: a small hierarchy, one module.

Each message names the offender (a step's place and kind, a node's name and op), what was
received and what would be accepted; faults are collected and raised once.
"""

from __future__ import annotations

from typing import Sequence


class OnnxError(Exception):
    """Base of the errors this package raises on purpose."""


class _Faults(OnnxError):
    """An error carrying every fault found, one line each."""

    headline = ""

    def __init__(self, faults: Sequence[str], headline: str | None = None) -> None:
        self.faults = list(faults)
        head = headline or self.headline
        body = "\n".join(f"  - {fault}" for fault in self.faults)
        super().__init__(f"{head}:\n{body}" if self.faults else head)


class ExportRefused(_Faults):
    """The network cannot be written as ONNX; nothing was written."""

    headline = "export refused"


class ImportRefused(_Faults):
    """The ONNX graph cannot be read as a network."""

    headline = "import refused"
