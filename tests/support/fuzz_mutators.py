"""The fuzz harness's mutators: how a case is made from a seed, byte by byte or field by field.

Each takes the seed's bytes and a numpy generator and returns the case's bytes, so a case is
rebuilt from (campaign, seed, index). Used by tests/support/fuzz.py's campaigns.
"""

from __future__ import annotations

import json

import numpy as np
import onnx

def mutate_bytes(data: bytes, rng: np.random.Generator) -> bytes:
    """One to four byte-level changes: flip a bit, set a byte, insert, delete, truncate, splice."""
    out = bytearray(data)
    for _ in range(int(rng.integers(1, 5))):
        kind = int(rng.integers(0, 6))
        at = int(rng.integers(0, max(len(out), 1)))
        if kind == 0 and out:
            out[at] ^= 1 << int(rng.integers(0, 8))
        elif kind == 1 and out:
            out[at] = int(rng.choice([0, 1, 0x7F, 0x80, 0xFF, int(rng.integers(0, 256))]))
        elif kind == 2:
            out[at:at] = rng.bytes(int(rng.integers(1, 9)))
        elif kind == 3 and out:
            del out[at:at + int(rng.integers(1, 9))]
        elif kind == 4:
            del out[at:]
        elif kind == 5 and out:
            start = int(rng.integers(0, len(out)))
            out[at:at] = out[start:start + int(rng.integers(1, 33))]
    return bytes(out)


_INTS = [0, 1, -1, 2, 3, 7, 255, 2**31 - 1, 2**31, 2**40, 2**62, -(2**31)]
_STRINGS = ["", "0", "x", "..", "../w.bin", "/etc/passwd", "9" * 30, "\u00ff", "NaN", "[", "{}",
            "1000000000", "4x4", "input", "output", "0.dense", "Relu", "Softmax"]


def mutate_onnx(data: bytes, rng: np.random.Generator) -> bytes:
    """A structured change to one field of a graph: a dim, an attribute, a name, an op type,
    tensor bytes, external-data entries, metadata, opset; or, one time in four, bytes."""
    if rng.random() < 0.25:
        return mutate_bytes(data, rng)
    model = onnx.load_from_string(data)
    graph = model.graph
    for _ in range(int(rng.integers(1, 3))):
        _ONNX_MUTATIONS[int(rng.integers(0, len(_ONNX_MUTATIONS)))](model, graph, rng)
    return model.SerializeToString()


def _pick(items, rng):
    return items[int(rng.integers(0, len(items)))] if len(items) else None


def _m_dims(model, graph, rng):
    tensor = _pick(list(graph.initializer), rng)
    if tensor is not None and len(tensor.dims):
        tensor.dims[int(rng.integers(0, len(tensor.dims)))] = int(rng.choice(_INTS))


def _m_attribute(model, graph, rng):
    node = _pick(list(graph.node), rng)
    if node is None or not node.attribute:
        return
    attribute = _pick(list(node.attribute), rng)
    if attribute.type == onnx.AttributeProto.INT:
        attribute.i = int(rng.choice(_INTS))
    elif attribute.type == onnx.AttributeProto.INTS and len(attribute.ints):
        attribute.ints[int(rng.integers(0, len(attribute.ints)))] = int(rng.choice(_INTS))
    elif attribute.type == onnx.AttributeProto.FLOAT:
        attribute.f = float(rng.choice([0.0, -1.0, np.nan, np.inf, 1e30]))
    else:
        attribute.name = str(rng.choice(_STRINGS))


def _m_name(model, graph, rng):
    node = _pick(list(graph.node), rng)
    if node is None:
        return
    names = [n for n in [*node.input, *node.output]] or [""]
    pool = [t.name for t in graph.initializer] + [i.name for i in graph.input] + \
           [o for n in graph.node for o in n.output] + _STRINGS
    target = node.input if rng.random() < 0.5 and len(node.input) else node.output
    if len(target):
        target[int(rng.integers(0, len(target)))] = str(_pick(pool, rng))
    del names


def _m_op_type(model, graph, rng):
    node = _pick(list(graph.node), rng)
    if node is not None:
        node.op_type = str(_pick(["Relu", "Softmax", "MatMul", "Add", "Gemm", "Reshape", "Transpose",
                                  "Conv", "LSTM", "Loop", "If", "Mystery", "Identity", "ReduceMean",
                                  "Flatten", "Concat", "Constant"], rng))


def _m_tensor_bytes(model, graph, rng):
    tensor = _pick(list(graph.initializer), rng)
    if tensor is not None:
        choice = int(rng.integers(0, 4))
        if choice == 0:
            tensor.raw_data = tensor.raw_data[: int(rng.integers(0, len(tensor.raw_data) + 1))]
        elif choice == 1:
            tensor.data_type = int(rng.choice([0, 2, 3, 6, 7, 8, 9, 10, 16, 99]))
        elif choice == 2:
            tensor.ClearField("raw_data")
            tensor.float_data.extend([1.0] * int(rng.integers(0, 4)))
        else:
            tensor.dims.append(int(rng.choice(_INTS)))


def _m_external(model, graph, rng):
    tensor = _pick(list(graph.initializer), rng)
    if tensor is None:
        return
    tensor.ClearField("raw_data")
    tensor.data_location = onnx.TensorProto.EXTERNAL
    for key in ("location", "offset", "length"):
        if rng.random() < 0.7:
            tensor.external_data.add(key=key, value=str(_pick(_STRINGS, rng)))


def _m_metadata(model, graph, rng):
    keys = ["features", "deepsharp.example_shape", "deepsharp.training_only",
            "deepsharp.training_settings"]
    key = str(_pick(keys, rng))
    values = _STRINGS + ['[{"place": "1", "layer": {"kind": "dropout", "rate": 0.5}}]',
                         '[{"place": "9", "layer": {"kind": "dense", "units": 1000000000}}]',
                         '{"0": {"momentum": 2}}', '{"1": {"momentum": 0.5}}', '["a", "b"]',
                         "[" * 5000, "4000000000", "2x2x2x2x2x2x2x2x2x2x2x2x2x2x2x2x2x2"]
    entries = {p.key: p for p in model.metadata_props}
    value = str(_pick(values, rng))
    if key in entries:
        entries[key].value = value
    else:
        model.metadata_props.add(key=key, value=value)


def _m_structure(model, graph, rng):
    choice = int(rng.integers(0, 5))
    if choice == 0 and len(graph.node):
        del graph.node[int(rng.integers(0, len(graph.node)))]
    elif choice == 1 and len(graph.node):
        graph.node.append(graph.node[int(rng.integers(0, len(graph.node)))])
    elif choice == 2 and len(graph.initializer):
        graph.initializer.append(graph.initializer[int(rng.integers(0, len(graph.initializer)))])
    elif choice == 3:
        model.opset_import[0].version = int(rng.choice([0, 1, 6, 9, 12, 13, 17, 21, 22, 99]))
    else:
        model.ir_version = int(rng.choice([0, 1, 3, 4, 7, 8, 10, 11, 99]))


def _m_value_info(model, graph, rng):
    infos = [*graph.input, *graph.output, *graph.value_info]
    info = _pick(infos, rng)
    if info is None or not info.type.HasField("tensor_type"):
        return
    dims = info.type.tensor_type.shape.dim
    if len(dims) and rng.random() < 0.6:
        dim = dims[int(rng.integers(0, len(dims)))]
        if rng.random() < 0.5:
            dim.dim_value = int(rng.choice(_INTS[:9]))
        else:
            dim.dim_param = str(_pick(_STRINGS, rng))
    else:
        info.type.tensor_type.shape.dim.add().dim_value = int(rng.choice([1, 2, 3]))


_ONNX_MUTATIONS = [_m_dims, _m_attribute, _m_name, _m_op_type, _m_tensor_bytes, _m_external,
                   _m_metadata, _m_structure, _m_value_info]


def mutate_safetensors(data: bytes, rng: np.random.Generator) -> bytes:
    """A change to a safetensors file's header JSON (a metadata value, a dtype, a shape, an
    offset), or, one time in three, bytes."""
    if rng.random() < 1 / 3 or len(data) < 8:
        return mutate_bytes(data, rng)
    length = int.from_bytes(data[:8], "little")
    header = json.loads(data[8:8 + length])
    body = data[8 + length:]
    names = [k for k in header if k != "__metadata__"]
    metadata = header.get("__metadata__", {})
    choice = int(rng.integers(0, 4))
    if choice == 0 and metadata:
        key = str(_pick(sorted(metadata), rng))
        metadata[key] = _metadata_value(metadata[key], rng)
    elif choice == 1 and names:
        entry = header[str(_pick(names, rng))]
        entry["dtype"] = str(_pick(["U8", "BOOL", "I32", "F16", "F64", "BF16", "I64", "XX"], rng))
    elif choice == 2 and names:
        entry = header[str(_pick(names, rng))]
        entry["shape"] = [int(rng.choice([0, 1, 2, 3, 1000, 2**31, -1]))
                          for _ in range(int(rng.integers(0, 4)))]
    elif names:
        entry = header[str(_pick(names, rng))]
        entry["data_offsets"] = [int(rng.choice(_INTS[:10])) for _ in range(2)]
    text = json.dumps(header).encode()
    return len(text).to_bytes(8, "little") + text + body


def _metadata_value(value: str, rng: np.random.Generator) -> str:
    """A metadata string changed the way damage or a hostile writer would change it."""
    kind = int(rng.integers(0, 5))
    if kind == 0:
        return str(_pick(_STRINGS, rng))
    if kind == 1 and value:
        at = int(rng.integers(0, len(value)))
        return value[:at] + str(_pick(["", "[", "]", "{", '"', "9999999999", "-1", "true", "null"], rng)) + value[at + 1:]
    if kind == 2:
        return value.replace(str(_pick(list("0123456789"), rng)), str(rng.choice(["1000000000", "0", "-3"])), 1)
    if kind == 3:
        return value.replace('"dense"', str(_pick(['"nope"', '["dense"]', '"lstm"', '"embedding"'], rng)), 1)
    return "[" * int(rng.integers(1, 20000))
