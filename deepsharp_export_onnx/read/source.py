"""Where a graph's bytes come from, and the one rule for the external data it names.

`OnnxFile.read` takes:

- a path (str or os.PathLike): the file is read (a regular file only: a FIFO or a device is
  refused without blocking), and tensors stored as external data are read from that file's
  folder;
- bytes, a binary stream (anything with `.read()`), or a ModelProto: a graph with external data
  is refused unless the caller names the folder to read it from: `read(stream, folder=...)`.

External data is confined to its folder: a location must be a relative path inside it (no `..`,
no absolute path, no drive, no symbolic link or hard-to-see route leading out: the real path is
checked), naming a regular file; `offset` and `length` must be decimal integers, and the bytes
they name must be present in the file and be exactly what the tensor's declared shape and type
need. The bytes are read only after all of that holds, so a location can never make the importer
read `settings.env` from the working folder, or a length make it allocate what the file does not
hold.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any, Iterator

import onnx
from onnx import TensorProto

from deepsharp.files import read_regular
from deepsharp_export_onnx.errors import ImportRefused

EXTERNAL_KEYS = {"location", "offset", "length", "checksum", "basepath"}


def model_and_folder(source: Any, folder: Any) -> tuple[onnx.ModelProto, Path | None]:
    """The ModelProto `source` holds (a copy where external data will be filled in) and the
    folder its external data may come from (None: none may)."""
    base = None if folder is None else _folder(folder)
    if isinstance(source, (str, os.PathLike)):
        path = Path(os.fspath(source))
        try:
            data = read_regular(path, lambda reason: ImportRefused([f"{path}: {reason}"]))
        except FileNotFoundError:
            raise ImportRefused([f"{path}: no such file"]) from None
        return parse(data, str(path)), base if base is not None else path.resolve().parent
    if isinstance(source, onnx.ModelProto):
        if not any(True for _ in external_tensors(source)):
            return source, base
        copy = onnx.ModelProto()
        copy.CopyFrom(source)  # the caller's proto is not changed by filling in its data
        return copy, base
    if isinstance(source, (bytes, bytearray, memoryview)):
        return parse(bytes(source), "the bytes given"), base
    if hasattr(source, "read"):
        try:
            data = source.read()
        except Exception as error:  # a closed stream, a text stream's decoding error
            raise ImportRefused([f"the stream could not be read: {error}"]) from None
        if not isinstance(data, (bytes, bytearray)):
            raise ImportRefused([f"the stream gave {type(data).__name__}, not bytes: open the file "
                                 f"in binary mode ('rb')"])
        return parse(bytes(data), "the stream"), base
    raise ImportRefused([f"read takes a path, bytes, a binary stream or a ModelProto; received "
                         f"{type(source).__name__}"])


def _folder(folder: Any) -> Path:
    if not isinstance(folder, (str, os.PathLike)):
        raise ImportRefused([f"folder must be a path, received {folder!r}"])
    path = Path(os.fspath(folder))
    if not path.is_dir():
        raise ImportRefused([f"folder {str(path)!r} is not a folder"])
    return path.resolve()


def parse(data: bytes, what: str) -> onnx.ModelProto:
    """The model in `data`: not empty, a protobuf ONNX parses, its names and types UTF-8 text."""
    if not data:
        raise ImportRefused([f"{what}: empty, not an ONNX model"])
    try:
        model = onnx.load_from_string(data)
    except Exception as error:  # protobuf's DecodeError and friends
        raise ImportRefused([f"{what}: not an ONNX model: {str(error)[:200]}"]) from None
    faults = text_faults(model)
    if faults:
        raise ImportRefused(faults)
    return model


def text_faults(model: onnx.ModelProto) -> list[str]:
    """Strings that are not UTF-8 text (protobuf hands them over as bytes): op types, domains,
    names, metadata. Each would break every later step that names or compares them."""
    faults: list[str] = []

    def check(value: Any, what: str) -> None:
        if not isinstance(value, str) and len(faults) < 20:
            faults.append(f"{what} {value!r} is not UTF-8 text")

    def in_graph(graph: onnx.GraphProto, where: str) -> None:
        check(graph.name, f"graph name{where}")
        for info in (*graph.input, *graph.output, *graph.value_info):
            check(info.name, f"value name{where}")
        for tensor in graph.initializer:
            check(tensor.name, f"initializer name{where}")
        for node in graph.node:
            for text, what in ((node.op_type, "op type"), (node.domain, "domain"), (node.name, "node name")):
                check(text, f"{what}{where}")
            for name in (*node.input, *node.output):
                check(name, f"value name{where}")
            for attribute in node.attribute:
                check(attribute.name, f"attribute name{where}")
                for body in ([attribute.g] if attribute.HasField("g") else []) + list(attribute.graphs):
                    in_graph(body, f" in a body{where}")

    in_graph(model.graph, "")
    for entry in model.metadata_props:
        check(entry.key, "metadata key")
        check(entry.value, "metadata value")
    for opset in model.opset_import:
        check(opset.domain, "opset domain")
    return faults


def external_tensors(model: onnx.ModelProto) -> Iterator[tuple[str, TensorProto]]:
    """Every tensor stored as external data, with where it is (main graph, its Constant nodes,
    bodies and functions)."""
    def in_graph(graph: onnx.GraphProto, where: str) -> Iterator[tuple[str, TensorProto]]:
        for tensor in graph.initializer:
            yield f"initializer {tensor.name!r}{where}", tensor
        for sparse in graph.sparse_initializer:
            yield f"sparse initializer {sparse.values.name!r}{where}", sparse.values
            yield f"sparse initializer {sparse.values.name!r} (indices){where}", sparse.indices
        for node in graph.node:
            yield from in_node(node, where)

    def in_node(node: onnx.NodeProto, where: str) -> Iterator[tuple[str, TensorProto]]:
        for attribute in node.attribute:
            label = f"attribute {attribute.name!r} of node {node.name!r} ({node.op_type}){where}"
            if attribute.HasField("t"):
                yield label, attribute.t
            for tensor in attribute.tensors:
                yield label, tensor
            bodies = ([attribute.g] if attribute.HasField("g") else []) + list(attribute.graphs)
            for body in bodies:
                yield from in_graph(body, f" in a body of node {node.name!r}")

    found = in_graph(model.graph, "")
    functions = (pair for f in model.functions for n in f.node
                 for pair in in_node(n, f" in function {f.name!r}"))
    for label, tensor in (*found, *functions):
        if tensor.data_location == TensorProto.EXTERNAL:
            yield label, tensor


def load_external_data(model: onnx.ModelProto, folder: Path | None) -> None:
    """Fill in every external tensor of `model` from `folder` under the rule in the module
    docstring; every fault is collected and raised as one ImportRefused, before any is read."""
    tensors = list(external_tensors(model))
    if not tensors:
        return
    if folder is None:
        raise ImportRefused([f"{label} is stored as external data "
                             f"({_entries(tensor).get('location', '?')!r}); a graph given as bytes, a "
                             f"stream or a ModelProto may not read files: pass its path, or name "
                             f"the folder with read(..., folder=...)" for label, tensor in tensors])
    faults, plans = [], []
    for label, tensor in tensors:
        try:
            plans.append((tensor, *_plan(tensor, folder)))
        except ValueError as error:
            faults.append(f"{label}: {error}")
    if faults:
        raise ImportRefused(faults)
    for tensor, path, offset, length in plans:
        with open(path, "rb") as stream:
            stream.seek(offset)
            tensor.raw_data = stream.read(length)
        del tensor.external_data[:]
        tensor.data_location = TensorProto.DEFAULT


def _entries(tensor: TensorProto) -> dict[str, str]:
    return {entry.key: entry.value for entry in tensor.external_data}


def _plan(tensor: TensorProto, folder: Path) -> tuple[Path, int, int]:
    """(file, offset, length) for one tensor, after every check (ValueError names the fault)."""
    entries = _entries(tensor)
    unknown = sorted(set(entries) - EXTERNAL_KEYS)
    if unknown:
        raise ValueError(f"unknown external-data keys {unknown}")
    path = confined(entries.get("location", ""), folder)
    offset = _decimal(entries.get("offset", "0"), "offset")
    size = os.stat(path).st_size
    length = _decimal(entries["length"], "length") if "length" in entries else size - offset
    needed = declared_bytes(tensor)
    if needed is not None and length != needed:
        raise ValueError(f"external data length {length:,} bytes, but its shape {list(tensor.dims)} "
                         f"of {_type_name(tensor.data_type)} needs {needed:,}")
    if offset + length > size:
        raise ValueError(f"external data bytes {offset:,}..{offset + length:,} pass the end of "
                         f"{path.name} ({size:,} bytes)")
    return path, offset, length


def confined(location: str, folder: Path) -> Path:
    """The regular file `location` names inside `folder` (ValueError for anything leading out)."""
    if not location or "\x00" in location:
        raise ValueError(f"external data location {location!r} is not a file name")
    posix, windows = PurePosixPath(location), PureWindowsPath(location)
    if posix.is_absolute() or windows.is_absolute() or windows.drive or windows.root:
        raise ValueError(f"external data location {location!r} is absolute; only a path inside "
                         f"the model's folder is read")
    if ".." in posix.parts or ".." in windows.parts:
        raise ValueError(f"external data location {location!r} leads out of the model's folder")
    path = (folder / posix).resolve()
    if path != folder and folder not in path.parents:
        raise ValueError(f"external data location {location!r} leads out of the model's folder "
                         f"(through a symbolic link, to {path})")
    try:
        mode = os.stat(path).st_mode
    except OSError:
        raise ValueError(f"external data file {location!r} is not in the model's folder") from None
    if not stat.S_ISREG(mode):
        raise ValueError(f"external data location {location!r} is not a regular file")
    return path


def _decimal(text: str, what: str) -> int:
    if not text.isdigit() or not text.isascii() or len(text) > 18:
        raise ValueError(f"external data {what} must be a decimal integer, received {text[:40]!r}")
    return int(text)


def declared_bytes(tensor: TensorProto) -> int | None:
    """Bytes the tensor's dims and type need when stored raw (None for strings and unknown types)."""
    itemsize = ITEMSIZE.get(tensor.data_type)
    if itemsize is None:
        return None
    count = 1
    for dim in tensor.dims:
        if dim < 0:
            raise ValueError(f"its shape {list(tensor.dims)} has a negative size")
        count *= dim
    return (count * itemsize + 1) // 2 if itemsize == 0.5 else int(count * itemsize)


def _type_name(data_type: int) -> str:
    try:
        return TensorProto.DataType.Name(data_type).lower()
    except ValueError:
        return f"type {data_type}"


# Bytes per element of each numeric type stored raw (4-bit types: half a byte).
ITEMSIZE: dict[int, float] = {
    TensorProto.FLOAT: 4, TensorProto.UINT8: 1, TensorProto.INT8: 1, TensorProto.UINT16: 2,
    TensorProto.INT16: 2, TensorProto.INT32: 4, TensorProto.INT64: 8, TensorProto.BOOL: 1,
    TensorProto.FLOAT16: 2, TensorProto.DOUBLE: 8, TensorProto.UINT32: 4, TensorProto.UINT64: 8,
    TensorProto.COMPLEX64: 8, TensorProto.COMPLEX128: 16, TensorProto.BFLOAT16: 2,
    TensorProto.FLOAT8E4M3FN: 1, TensorProto.FLOAT8E4M3FNUZ: 1, TensorProto.FLOAT8E5M2: 1,
    TensorProto.FLOAT8E5M2FNUZ: 1, TensorProto.UINT4: 0.5, TensorProto.INT4: 0.5,
}
