"""Graphs over 2 GiB: the weights beside the graph, in `<name>.onnx.data`.

A protobuf message cannot pass 2 GiB (2^31 - 1 bytes), so a graph whose weights would take it
over keeps them in a file of its own beside it, as ONNX's external data: each initializer of at
least 1 KiB names the file (its bare name: it lies in the model's folder), its offset (a multiple
of 4096, a page, so a runtime may map it) and its length. The arrays are written straight from
the network's own memory: nothing is copied into the protobuf.

    plan = ExternalData("model.onnx.data")
    model = tape.to_model(..., tensor=plan)     # initializers pointing into the file
    plan.write(stream)                          # the file's bytes
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import BinaryIO

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from deepsharp_export_onnx.errors import ExportRefused

LIMIT = 2 ** 31 - 1   # protobuf's largest message
ALIGN = 4096          # every tensor starts on a page
THRESHOLD = 1024      # smaller tensors stay in the graph (onnx's own default)
_CHUNK = 64 * 2 ** 20  # written in pieces of 64 MiB (no bytes object of a whole weight)


def data_path(path: Path) -> Path:
    """`model.onnx` -> `model.onnx.data`, beside it."""
    return path.with_name(path.name + ".data")


class ExternalData:
    """Where each large initializer goes in the data file, and the arrays to write there."""

    def __init__(self, location: str) -> None:
        self.location = location
        self.arrays: dict[str, tuple[np.ndarray, int]] = {}  # name -> (array, offset)
        self.end = 0

    def __call__(self, array: np.ndarray, name: str) -> TensorProto:
        if array.nbytes < THRESHOLD or array.dtype.kind not in "fiub":
            return numpy_helper.from_array(array, name)
        offset = -(-self.end // ALIGN) * ALIGN
        self.arrays[name] = (array, offset)
        self.end = offset + array.nbytes
        tensor = TensorProto(name=name, dims=array.shape,
                             data_type=helper.np_dtype_to_tensor_dtype(array.dtype),
                             data_location=TensorProto.EXTERNAL)
        for key, value in (("location", self.location), ("offset", offset),
                           ("length", array.nbytes)):
            tensor.external_data.add(key=key, value=str(value))
        return tensor

    @property
    def payload(self) -> int:
        return sum(array.nbytes for array, _ in self.arrays.values())

    def inline_size(self, model: onnx.ModelProto) -> int:
        """At most the bytes `model` would take with every planned tensor inside it."""
        return model.ByteSize() + self.payload

    def inline(self, model: onnx.ModelProto) -> None:
        """Put every planned tensor back inside `model` (as `numpy_helper.from_array` writes it:
        the same bytes as a graph written without a plan)."""
        for tensor in model.graph.initializer:
            if tensor.name in self.arrays:
                tensor.CopyFrom(numpy_helper.from_array(self.arrays[tensor.name][0], tensor.name))
        self.arrays.clear()
        self.end = 0

    def write(self, stream: BinaryIO) -> None:
        at = 0
        for array, offset in self.arrays.values():
            stream.write(b"\0" * (offset - at))
            flat = array.reshape(-1).view(np.uint8) if array.flags.c_contiguous else \
                np.ascontiguousarray(array).reshape(-1).view(np.uint8)
            if flat.dtype.byteorder == ">":  # pragma: no cover - ONNX's data is little-endian
                flat = array.astype(array.dtype.newbyteorder("<")).reshape(-1).view(np.uint8)
            for start in range(0, len(flat), _CHUNK):
                stream.write(memoryview(flat[start:start + _CHUNK]))
            at = offset + array.nbytes


def write_files(model: onnx.ModelProto, plan: ExternalData | None, path: Path) -> tuple[int, int]:
    """Write `path` (and its data file when `plan` holds tensors) through temporary files in the
    same folder, renamed once whole: a failure leaves what was there. A data file an earlier
    graph left beside `path` goes when this one has none. Returns (graph bytes, data bytes)."""
    folder = path.parent if str(path.parent) else Path(".")
    temporary: list[Path] = []
    external = plan is not None and bool(plan.arrays)
    try:
        if external:
            data = _temporary(folder, path.name + ".data", temporary)
            with data.open("wb") as stream:
                plan.write(stream)
        graph = _temporary(folder, path.name, temporary)
        graph.write_bytes(model.SerializeToString(deterministic=True))
        if external:
            os.replace(temporary[0], data_path(path))
        os.replace(graph, path)
        temporary.clear()
        if not external and data_path(path).exists():
            data_path(path).unlink()
    except OSError as error:
        raise ExportRefused([f"writing {path}: {error}"]) from None
    finally:
        for leftover in temporary:
            leftover.unlink(missing_ok=True)
    return path.stat().st_size, data_path(path).stat().st_size if external else 0


def _temporary(folder: Path, name: str, made: list[Path]) -> Path:
    temporary = folder / f".{name}.{os.getpid()}.partial"
    made.append(temporary)
    return temporary
