"""The fuzz harness shared by the suite's fuzz tests and `scripts/fuzz_campaign.py`.

A *target* takes the bytes of one case and calls a public entry point on them (reading a graph,
loading a network file, restoring a checkpoint, checking annotations, inspecting). Its outcome
is one of:

- "accepted": the entry point took the input;
- "refused": it raised one of the project's errors (DeepsharpError, OnnxError);
- "failure:<Type>@<file>:<line>": anything else (the innermost project frame names the site).

*Mutators* make a case from a seed: byte-level (flip, set, insert, delete, truncate, splice) and
structured (an ONNX field, a safetensors header's JSON), each drawn from a numpy generator, so a
case is rebuilt from (campaign, seed, index).
"""

from __future__ import annotations

import io
import json
import os
import tempfile
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np
import onnx

from deepsharp import Adam, BinaryCrossEntropy, CrossEntropy, RandomStream, Sequential, Shape
from deepsharp.errors import DeepsharpError
from deepsharp_export_onnx import OnnxExport, OnnxFile
from deepsharp_export_onnx.errors import OnnxError

PROJECT_ERRORS = (DeepsharpError, OnnxError)
ROOTS = ("deepsharp", "deepsharp_export_onnx", "layout")


def outcome(call: Callable[[], object]) -> str:
    """What `call` did: accepted (or the label it returned, such as a command's "exit 1"),
    refused, or failure naming the exception type and site."""
    try:
        label = call()
    except PROJECT_ERRORS:
        return "refused"
    except Exception as error:  # noqa: BLE001 - this is what the fuzz looks for
        return f"failure:{type(error).__name__}@{_site(error)}"
    return label if isinstance(label, str) else "accepted"


def _site(error: BaseException) -> str:
    """The innermost frame in the project's packages (else the innermost frame at all)."""
    frames = traceback.extract_tb(error.__traceback__)
    ours = [f for f in frames if any(f"{os.sep}{root}{os.sep}" in f.filename for root in ROOTS)]
    frame = (ours or frames or [None])[-1]
    if frame is None:
        return "?"
    parts = Path(frame.filename).parts
    for root in ROOTS:
        if root in parts:
            return "/".join(parts[parts.index(root):]) + f":{frame.lineno}"
    return f"{Path(frame.filename).name}:{frame.lineno}"


# -- seeds ---------------------------------------------------------------------------------------
def _dense():
    return Sequential().dense(5).relu().dropout(0.1).dense(3).lower(Shape(4), RandomStream(1))


def _series():
    return (Sequential().conv1d(4, kernel=3).relu().layer_norm().lstm(3).dense(2)
            .lower(Shape(6, 2), RandomStream(2)))


def _image():
    return (Sequential().conv2d(3, kernel=3, padding="same").batch_norm().relu().max_pool2d(2)
            .flatten().dense(2).lower(Shape(4, 4, 1), RandomStream(3)))


NETWORKS = {"dense": _dense, "series": _series, "image": _image}


def onnx_seeds() -> list[bytes]:
    """Graphs the exporter writes (dense, a series, an image), the raw material of ONNX cases."""
    return [OnnxExport(network.input_shape).to_bytes(network, CrossEntropy())
            for network in (make() for make in NETWORKS.values())]


def network_file_seeds() -> list[bytes]:
    found = []
    for make in NETWORKS.values():
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / "n.safetensors"
            make().save(path)
            found.append(path.read_bytes())
    return found


def checkpoint_seeds() -> list[bytes]:
    network, optimizer = _dense(), Adam()
    optimizer.bind(network.trainable_parameters())
    x = np.random.default_rng(0).standard_normal((8, 4)).astype(np.float32)
    y = np.eye(3, dtype=np.float32)[np.arange(8) % 3]
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "run.ckpt"
        network.fit(x, y, loss=CrossEntropy(), optimizer=optimizer, epochs=1, batch_size=4,
                    checkpoint=path, progress=False)
        return [path.read_bytes()]


# -- mutators ------------------------------------------------------------------------------------
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


# -- targets -------------------------------------------------------------------------------------
PROBE_LIMIT = 1 << 20  # a network read is run on a probe batch only when an example is this small


def _probe(network, loss) -> None:
    """Run what was read on two zero examples (an example of 10**10 steps is a valid declaration
    that no probe should allocate)."""
    if network.input_shape.size <= PROBE_LIMIT:
        network.predict(np.zeros((2, *network.input_shape), np.float32), loss)


def read_onnx(data: bytes) -> None:
    """OnnxFile.read on bytes (the loss picked by the graph's last node)."""
    loss = BinaryCrossEntropy() if b"Sigmoid" in data else CrossEntropy()
    _probe(OnnxFile(loss).read(data), loss)


def _in_file(data: bytes, suffix: str, use: Callable[[Path], object]) -> None:
    """`use` the case written to a fresh file (its folder holds nothing else to read)."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / f"case{suffix}"
        path.write_bytes(data)
        use(path)


def load_network(data: bytes) -> None:
    import deepsharp

    def use(path):
        _probe(deepsharp.load(path), CrossEntropy())

    _in_file(data, ".safetensors", use)


def load_checkpoint(data: bytes) -> None:
    from deepsharp.io import load_checkpoint as restore

    network, optimizer = _dense(), Adam()
    optimizer.bind(network.trainable_parameters())
    _in_file(data, ".ckpt", lambda path: restore(path, network, optimizer, [], seed=0, batch_size=4))


def inspect_onnx(data: bytes) -> str:
    """`deepsharp inspect` on the case: "exit 0" or "exit 2" (anything else is a failure)."""
    from deepsharp_export_onnx.commands import inspect_main

    return _command(inspect_main, data, (0, 2))


def check_onnx(data: bytes) -> str:
    """`deepsharp check` on the case: "exit 0", "exit 1" or "exit 2"."""
    from deepsharp_export_onnx.commands import check_main

    return _command(check_main, data, (0, 1, 2))


def _command(main: Callable[[list[str]], int], data: bytes, codes: tuple[int, ...]) -> str:
    found = []
    with _quiet():
        _in_file(data, ".onnx", lambda path: found.append(main([str(path)])))
    if found[0] not in codes:
        raise AssertionError(f"exit {found[0]}")
    return f"exit {found[0]}"


class _quiet:
    """Silence the commands' printing (to stdout and stderr) while a case runs."""

    def __enter__(self):
        import contextlib

        self._stack = contextlib.ExitStack()
        self._stack.enter_context(contextlib.redirect_stdout(io.StringIO()))
        self._stack.enter_context(contextlib.redirect_stderr(io.StringIO()))
        return self

    def __exit__(self, *exc):
        return self._stack.__exit__(*exc)


# -- bad calls: fit, predict, export, the verbs, the optimizers ---------------------------------
_X = np.random.default_rng(5).standard_normal((8, 4)).astype(np.float32)
_Y = np.eye(3, dtype=np.float32)[np.arange(8) % 3]
TOKENS: dict[str, Callable[[], object]] = {
    "true": lambda: True, "np_int": lambda: np.int64(2), "np_float": lambda: np.float32(0.5),
    "str": lambda: "2", "none": lambda: None, "neg": lambda: -1, "zero": lambda: 0,
    "float": lambda: 1.5, "nan": lambda: float("nan"), "inf": lambda: float("inf"),
    "list": lambda: [], "dict": lambda: {}, "big": lambda: 10**12, "bytes": lambda: b"x",
    "object": lambda: object(), "empty_rows": lambda: np.zeros((0, 4), np.float32),
    "wrong_width": lambda: np.zeros((8, 5), np.float32), "nan_rows": lambda: np.full((8, 4), np.nan, np.float32),
    "ints": lambda: np.arange(8), "strings": lambda: np.array(["a"] * 8), "tuple": lambda: (_X, _Y),
    "rows": lambda: _X, "answers": lambda: _Y, "shape": lambda: Shape(4), "loss": lambda: CrossEntropy(),
}
CALLS = {
    "fit": ["x", "y", "loss", "optimizer", "epochs", "batch_size", "validation", "early_stopping",
            "seed", "callbacks", "shuffle", "progress"],
    "predict": ["x", "loss", "batch_size"],
    "export": ["shape", "features", "max_opset", "input_name", "output_name", "loss", "network"],
    "optimizer": ["lr", "weight_decay", "clip_norm", "betas", "eps", "momentum", "schedule"],
}


def make_call(data: bytes, rng: np.random.Generator) -> bytes:
    """A bad call, as JSON: an entry point, one or two arguments and the tokens given them."""
    api = str(_pick(sorted(CALLS) + ["verb"], rng))
    if api == "verb":
        from deepsharp.layers.base import SPEC_KINDS

        kind = str(_pick(sorted(SPEC_KINDS), rng))
        values = [str(_pick(sorted(TOKENS), rng)) for _ in range(int(rng.integers(0, 3)))]
        return json.dumps({"api": "verb", "kind": kind, "values": values}).encode()
    arguments = {str(_pick(CALLS[api], rng)): str(_pick(sorted(TOKENS), rng))
                 for _ in range(int(rng.integers(1, 3)))}
    if arguments.get("epochs") == "big":  # a valid request to train 10**12 epochs: it would
        arguments["epochs"] = "zero"       # run as long as asked, which is no fault
    return json.dumps({"api": api, "arguments": arguments}).encode()


def run_call(data: bytes) -> None:
    """Make the call `make_call` described (each token made fresh)."""
    import deepsharp

    call = json.loads(data)
    if call["api"] == "verb":
        getattr(Sequential(), call["kind"])(*(TOKENS[t]() for t in call["values"]))
        return
    given = {name: TOKENS[token]() for name, token in call["arguments"].items()}
    network = _dense()
    if call["api"] == "fit":
        options = {"loss": CrossEntropy(), "optimizer": Adam(), "epochs": 1, "batch_size": 4,
                   "progress": False, **given}
        network.fit(options.pop("x", _X), options.pop("y", _Y), **options)
    elif call["api"] == "predict":
        network.predict(given.get("x", _X), given.get("loss", CrossEntropy()),
                        batch_size=given.get("batch_size"))
    elif call["api"] == "export":
        options = {k: v for k, v in given.items() if k not in ("shape", "loss", "network")}
        exporter = OnnxExport(given.get("shape", Shape(4)), **options)
        exporter.to_bytes(given.get("network", network), given.get("loss", CrossEntropy()))
    else:
        optimizer = deepsharp.Adam(**{k: v for k, v in given.items() if k != "momentum"}) \
            if "momentum" not in given else deepsharp.SGD(momentum=given["momentum"])
        optimizer.bind(network.trainable_parameters())


@dataclass(frozen=True)
class Campaign:
    """A target, the seeds it starts from, and how a case is made from a seed."""

    name: str
    target: Callable[[bytes], None]
    seeds: Callable[[], list[bytes]]
    mutate: Callable[[bytes, np.random.Generator], bytes]


CAMPAIGNS = {
    "onnx-bytes": Campaign("onnx-bytes", read_onnx, onnx_seeds, mutate_bytes),
    "onnx-fields": Campaign("onnx-fields", read_onnx, onnx_seeds, mutate_onnx),
    "network-files": Campaign("network-files", load_network, network_file_seeds, mutate_safetensors),
    "checkpoints": Campaign("checkpoints", load_checkpoint, checkpoint_seeds, mutate_safetensors),
    "inspect": Campaign("inspect", inspect_onnx, onnx_seeds, mutate_onnx),
    "check": Campaign("check", check_onnx, onnx_seeds, mutate_onnx),
    "calls": Campaign("calls", run_call, lambda: [b""], make_call),
}


def make_case(campaign: Campaign, seeds: list[bytes], seed: int, index: int) -> bytes:
    """Case `index` of a campaign run with `seed`: rebuilt the same from the same numbers."""
    rng = np.random.default_rng([seed, index, sum(map(ord, campaign.name))])
    return campaign.mutate(seeds[index % len(seeds)], rng)


__all__ = ["CAMPAIGNS", "Campaign", "make_case", "outcome"]
