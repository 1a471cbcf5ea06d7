"""Graphs written by other exporters (tests/fixtures/import, made by
scripts/make_import_fixtures.py): which loss reads each model, and the checks every one passes.

Each fixture is read, compared with PyTorch's (or scikit-learn's) answer, exported again and run
in ONNX Runtime, trained a few steps at two batch sizes, and exported again after training.
"""

from __future__ import annotations

from dataclasses import dataclass
import numpy as np
import onnx

from deepsharp import Adam, BinaryCrossEntropy, CrossEntropy, MeanSquaredError
from deepsharp.losses import Loss
from deepsharp.network import Network
from deepsharp_export_onnx import OnnxExport, OnnxFile
from tests.support.fixtures import FIXTURES

FOREIGN = FIXTURES / "import"

# model -> (the loss whose output activation the graph ends with, the output read)
MODELS: dict[str, tuple[Loss, str | None]] = {
    "mlp": (MeanSquaredError(), None),
    "mlp_softmax": (CrossEntropy(), None),
    "mlp_dropout": (BinaryCrossEntropy(), None),
    "mlp_gelu_tanh": (MeanSquaredError(), None),
    "layer_norm": (MeanSquaredError(), None),
    "cnn": (CrossEntropy(), None),
    "cnn_view": (MeanSquaredError(), None),
    "cnn_ceil": (MeanSquaredError(), None),
    "conv1d_text": (MeanSquaredError(), None),
    "conv1d_series": (MeanSquaredError(), None),
    "lstm": (MeanSquaredError(), None),
    "lstm2": (MeanSquaredError(), None),
    "lstm_out_last": (MeanSquaredError(), None),
    "lstm_time_major": (MeanSquaredError(), None),
    "bigru_tagger": (MeanSquaredError(), None),
    "bigru_last": (BinaryCrossEntropy(), None),
    "embedding_lstm": (MeanSquaredError(), None),
    "encoder": (MeanSquaredError(), None),
    "encoder_gelu": (MeanSquaredError(), None),
    "attention": (MeanSquaredError(), None),
    "attention_fast": (MeanSquaredError(), None),
    "encoder_stack": (MeanSquaredError(), None),
    "mlp_hard": (MeanSquaredError(), None),
    "mlp_softplus": (MeanSquaredError(), None),
    "cnn_mobile": (MeanSquaredError(), None),
    "cnn_prelu": (MeanSquaredError(), None),
    "crnn": (MeanSquaredError(), None),
    "cnn_groupnorm": (MeanSquaredError(), None),
    "skl_classifier": (CrossEntropy(), "probabilities"),
    "skl_regressor": (MeanSquaredError(), None),
    "skl_binary": (BinaryCrossEntropy(), "probabilities"),
}
# graphs taking their series time-major (nn.LSTM's default), read with series="batch_first": the
# network, and so `x` here, take them batch-first
TIME_MAJOR = {"lstm_time_major"}
# where the network read answers otherwise than the graph, by design: the output's dims it gives
OWN_OUTPUT = {
    # both classes' probabilities (1 - p, p) read as BinaryCrossEntropy's one, p
    "skl_binary": ("batch", 1),
}


def fixture_names() -> list[str]:
    """Every graph present, `{model}.{exporter}{opset}` (the script leaves out what an exporter
    could not write, and says why in NOT_WRITTEN.txt)."""
    return sorted(p.name[:-len(".onnx")] for p in FOREIGN.glob("*.onnx"))


@dataclass
class Foreign:
    name: str
    model: onnx.ModelProto
    x: np.ndarray
    y: np.ndarray
    loss: Loss
    output: str | None

    @classmethod
    def load(cls, name: str) -> "Foreign":
        family = name.split(".")[0]
        arrays = np.load(FOREIGN / f"{family}.npz")
        loss, output = MODELS[family]
        x = arrays["x"].transpose(1, 0, 2) if family in TIME_MAJOR else arrays["x"]
        return cls(name, onnx.load(FOREIGN / f"{name}.onnx"), x, arrays["y"], loss, output)

    def read(self) -> Network:
        series = "batch_first" if self.name.split(".")[0] in TIME_MAJOR else None
        return OnnxFile(self.loss, output=self.output, series=series).read(self.model)

    def signature(self, model: onnx.ModelProto, output: str | None = None) -> list[tuple]:
        """(name, element type, dims) of the input and the output read."""
        outputs = [o for o in model.graph.output if output is None or o.name == output]
        inputs = [i for i in model.graph.input
                  if i.name not in {t.name for t in model.graph.initializer}]
        return [(v.name, v.type.tensor_type.elem_type,
                 tuple(d.dim_value if d.HasField("dim_value") else (d.dim_param or None)
                       for d in v.type.tensor_type.shape.dim)) for v in [*inputs, *outputs]]

    def export(self, network: Network) -> onnx.ModelProto:
        """The network exported again with the exporter's defaults: the graph's names come back
        from the network read (`network.io_names`)."""
        return OnnxExport(network.input_shape).to_model(network, self.loss)

    def training_data(self, count: int = 14) -> tuple[np.ndarray, np.ndarray]:
        """Inputs like the fixture's, and answers of the loss's kind."""
        rng = np.random.default_rng(5)
        shape = (count, *self.x.shape[1:])
        if self.x.dtype.kind in "iu":
            x = rng.integers(0, int(self.x.max()) + 1, shape).astype(self.x.dtype)
        else:
            x = rng.standard_normal(shape).astype(np.float32)
        answers = self.y.shape[1:]
        if isinstance(self.loss, CrossEntropy):
            y = rng.integers(0, answers[-1], (count, *answers[:-1]))
        elif isinstance(self.loss, BinaryCrossEntropy):
            y = rng.integers(0, 2, (count, *answers)).astype(np.float32)
        else:
            y = rng.standard_normal((count, *answers)).astype(np.float32)
        return x, y


def same_signature(original: list[tuple], again: list[tuple]) -> list[str]:
    """Where a re-exported graph's signature differs from the original's: the names, element
    types and ranks must agree, and every axis but the batch the same (a number the same number,
    a symbol a symbol); the re-export's batch is always symbolic, and so are a series' steps
    (and the lengths they give) where the original fixed them: the network runs at any length."""
    faults = []
    for (name, elem, dims), (name2, elem2, dims2) in zip(original, again):
        if (name, elem, len(dims)) != (name2, elem2, len(dims2)):
            faults.append(f"{name}: {elem} {dims} became {name2}: {elem2} {dims2}")
            continue
        for axis, (a, b) in enumerate(zip(dims, dims2)):
            if axis == 0:
                continue
            fixed_kept = a == b or (isinstance(b, str) and b.startswith("steps"))
            symbol_kept = isinstance(b, str)
            if not (fixed_kept if isinstance(a, int) and a > 0 else symbol_kept):
                faults.append(f"{name} axis {axis}: {a} became {b}")
    return faults


def loss_value(network: Network, loss: Loss, x: np.ndarray, y: np.ndarray) -> float:
    from deepsharp.tensors import Tensor, no_grad

    network.eval()
    with no_grad():
        z = network.logits(Tensor(x), loss)
        return float(loss(z, loss.prepare(np.asarray(y), z.shape))._data)


def train(network: Network, loss: Loss, x: np.ndarray, y: np.ndarray, batch_size: int) -> None:
    network.fit(x, y, loss=loss, optimizer=Adam(0.01), epochs=3, batch_size=batch_size,
                progress=False)


def run_graph(model: onnx.ModelProto, x: np.ndarray) -> np.ndarray:
    import onnxruntime as ort

    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, {session.get_inputs()[0].name: x})[0]


def tolerance(reference: np.ndarray) -> float:
    """1e-5, scaled by the answer's size."""
    return 1e-5 * max(1.0, float(np.abs(reference).max()))

