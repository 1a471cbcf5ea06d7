"""The fuzz harness shared by the suite's fuzz tests and `scripts/fuzz_campaign.py`.

A *target* takes the bytes of one case and calls a public entry point on them (reading a graph,
loading a network file, restoring a checkpoint, checking annotations, inspecting). Its outcome
is one of:

- "accepted": the entry point took the input;
- "refused": it raised one of the project's errors (DeepsharpError, OnnxError);
- "failure:<Type>@<file>:<line>": anything else (the innermost project frame names the site).

*Mutators* (tests/support/fuzz_mutators.py) make a case from a seed: byte-level (flip, set,
insert, delete, truncate, splice) and structured (an ONNX field, a safetensors header's JSON), each
drawn from a numpy generator, so a case is rebuilt from (campaign, seed, index).
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

from deepsharp import (
    Adam, BinaryCrossEntropy, CrossEntropy, MeanSquaredError, RandomStream, Sequential, Shape,
)
from deepsharp.errors import DeepsharpError
from deepsharp_export_onnx import OnnxExport, OnnxFile
from deepsharp_export_onnx.errors import OnnxError
from tests.support.fuzz_mutators import _pick, mutate_bytes, mutate_onnx, mutate_safetensors

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


FOREIGN = Path(__file__).resolve().parents[1] / "fixtures" / "import"
FOREIGN_SEEDS = ("mlp_softmax.ts17", "cnn.dynamo18", "cnn_view.ts17", "conv1d_text.ts13",
                 "lstm2.ts17", "bigru_last.dynamo18", "embedding_lstm.ts18", "encoder.ts17",
                 "encoder_gelu.dynamo18", "attention.ts17", "layer_norm.ts13",
                 "encoder_stack.dynamo18", "attention_fast.dynamo18", "mlp_hard.ts13",
                 "cnn_mobile.dynamo18")


def _prepared_network():
    """A network carrying a preparation of numbers and string categories."""
    from deepsharp.preparation import Columns, FillMissing, OneHot, Standardizer

    table = {"age": np.array([30.0, np.nan, 52.0, 41.0], np.float32),
             "colour": np.array(["red", "blue", "red", "green"])}
    prepare = Columns.fit(table, {"age": [FillMissing, Standardizer], "colour": OneHot})
    network = Sequential().dense(3).lower(Shape(prepare.width_out), RandomStream(4))
    return network.with_preparation(prepare)


def _prepared() -> bytes:
    network = _prepared_network()
    return OnnxExport(network.input_shape).to_bytes(network, CrossEntropy())


def onnx_seeds(foreign: bool = True) -> list[bytes]:
    """Graphs the exporter writes (dense, a series, an image, raw rows through a preparation)
    and, with `foreign`, graphs PyTorch's two exporters wrote (tests/fixtures/import): the raw
    material of ONNX cases."""
    own = [OnnxExport(network.input_shape).to_bytes(network, CrossEntropy())
           for network in (make() for make in NETWORKS.values())] + [_prepared()]
    return own + ([(FOREIGN / f"{name}.onnx").read_bytes() for name in FOREIGN_SEEDS]
                  if foreign else [])


def network_file_seeds() -> list[bytes]:
    found = []
    for make in (*NETWORKS.values(), _prepared_network):
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


# -- targets -------------------------------------------------------------------------------------
PROBE_LIMIT = 1 << 20  # a network read is run on a probe batch only when an example is this small


def _probe(network, loss) -> None:
    """Run what was read on two zero examples (an example of 10**10 steps is a valid declaration
    that no probe should allocate)."""
    if network.input_shape.size <= PROBE_LIMIT:
        steps = network.steps
        ids = bool(steps) and steps[0].spec.input_dtype == "int64"
        network.predict(np.zeros((2, *network.input_shape), np.int64 if ids else np.float32), loss)


LOSS_BY_LAST_OP = {"Sigmoid": BinaryCrossEntropy, "Softmax": CrossEntropy}


def _loss_for(data: bytes):
    """The loss whose output activation makes the graph's output (a graph from elsewhere may end
    without one: MeanSquaredError's identity then); bytes that do not parse take CrossEntropy."""
    import onnx

    try:
        graph = onnx.load_from_string(data).graph
        last = next(n.op_type for n in graph.node if graph.output and graph.output[0].name in n.output)
    except Exception:  # a mutated file: OnnxFile.read itself is what the case tests
        return CrossEntropy()
    return LOSS_BY_LAST_OP.get(last, MeanSquaredError)()


def read_onnx(data: bytes) -> None:
    """OnnxFile.read on bytes (the loss picked by the node making the graph's output)."""
    loss = _loss_for(data)
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
