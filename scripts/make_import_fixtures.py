"""Make tests/fixtures/import/: graphs written by PyTorch's two exporters and by skl2onnx, for the
importer's tests (tests/export_onnx/test_import_foreign.py), which need none of these packages.

    .venv/bin/pip install torch==2.13.0
    .venv/bin/pip install -r scripts/requirements-fixtures.txt
    .venv/bin/python scripts/make_import_fixtures.py [--list]

For each PyTorch model (small, seeded weights, in eval mode) it writes:
- `{model}.ts{13,17,18}.onnx`: `torch.onnx.export(dynamo=False)` with the batch (and a series'
  steps) symbolic, as `dynamic_axes` asks;
- `{model}.ts17fixed.onnx`: the same exporter with no `dynamic_axes`: every axis fixed, so its
  shape computations are folded to constants holding the example's batch size;
- `{model}.dynamo{13,17,18}.onnx`: `torch.onnx.export(dynamo=True)` with the batch (and steps)
  dynamic (opset 18 is the exporter's own; 13 and 17 are its conversion down);
- `{model}.npz`: `x` (the input, as PyTorch takes it) and `y` (PyTorch's output for it).
and for scikit-learn's MLPs, `{model}.skl.onnx` (skl2onnx, zipmap off) with `x` and `y` (the
probabilities for the classifier, the positive class's for the binary one, the predictions for
the regressor). `--list` prints each graph's nodes. A model whose export fails is reported and left out (so the tests can say what exists).
"""

from __future__ import annotations

import argparse
import io
import sys
import warnings
from pathlib import Path
from typing import Callable

import numpy as np
import onnx
import torch
from torch import nn

OUT = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "import"
TS_OPSETS = (13, 17, 18)
DYNAMO_OPSETS = (13, 17, 18)
BATCH = 3


# -- the models ---------------------------------------------------------------------------------------
class Mlp(nn.Module):
    def __init__(self, last: nn.Module | None = None) -> None:
        super().__init__()
        layers = [nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 8), nn.Tanh(), nn.Linear(8, 3)]
        self.net = nn.Sequential(*layers, *([last] if last is not None else []))

    def forward(self, x):
        return self.net(x)


class GeluTanhMlp(nn.Module):
    """GELU's tanh form: one node from operator set 20, decomposed below it (Pow or two Muls for
    the cube, as the exporter writes it)."""

    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(6, 10), nn.GELU(approximate="tanh"), nn.Linear(10, 3))

    def forward(self, x):
        return self.net(x)


class HardMlp(nn.Module):
    """The activations beyond the first set: ReLU6 and Hardtanh (Clip), Hardswish, Mish (one node
    from set 18 in the dynamo graphs, decomposed below it), Hardsigmoid."""

    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(6, 10), nn.ReLU6(), nn.Linear(10, 8), nn.Hardswish(),
                                 nn.Linear(8, 8), nn.Mish(), nn.Linear(8, 8), nn.Hardsigmoid(),
                                 nn.Linear(8, 8), nn.Hardtanh(-0.5, 0.75), nn.Linear(8, 3))
        with torch.no_grad():  # values past the kinks: ReLU6's 6, Hardswish's and Hardsigmoid's 3
            for k in (0, 2, 6):
                self.net[k].weight.mul_(4)

    def forward(self, x):
        return self.net(x)


class SqueezeExcite(nn.Module):
    def __init__(self, channels: int, reduced: int) -> None:
        super().__init__()
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.down, self.up = nn.Conv2d(channels, reduced, 1), nn.Conv2d(reduced, channels, 1)

    def forward(self, x):
        return x * nn.functional.hardsigmoid(self.up(torch.relu(self.down(self.pool(x)))))


class MobileBlock(nn.Module):
    """MobileNetV3's block: a convolution, Hardswish, a depthwise convolution, ReLU6, a
    squeeze-and-excitation gate (Hardsigmoid), a pointwise convolution; batch norms between."""

    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.Hardswish(),
            nn.Conv2d(8, 8, 3, padding=1, groups=8), nn.BatchNorm2d(8), nn.ReLU6(),
            SqueezeExcite(8, 4), nn.Conv2d(8, 6, 1), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
            nn.Linear(6, 3))

    def forward(self, x):
        return self.net(x)


class PreluCnn(nn.Module):
    """nn.PReLU per channel on an image ((C, 1, 1) slopes) and on rows ((C,)), and shared."""

    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Conv2d(2, 4, 3), nn.PReLU(4), nn.Conv2d(4, 3, 3), nn.PReLU(),
                                 nn.Flatten(), nn.Linear(3 * 5 * 5, 6), nn.PReLU(6),
                                 nn.Linear(6, 2))
        with torch.no_grad():  # slopes apart from their common start
            for module in self.net:
                if isinstance(module, nn.PReLU):
                    module.weight.uniform_(-0.5, 0.5)

    def forward(self, x):
        return self.net(x)


class Crnn(nn.Module):
    """A convolutional front end on a channels-first series, pooled, turned batch-first for a
    bidirectional GRU (PyTorch folds `y.transpose(1, 2)` into the GRU's time-major turn), the
    mean over the steps, a linear head."""

    def __init__(self) -> None:
        super().__init__()
        self.conv, self.norm = nn.Conv1d(3, 8, 3, padding=1), nn.BatchNorm1d(8)
        self.pool = nn.MaxPool1d(2)
        self.rnn = nn.GRU(8, 6, batch_first=True, bidirectional=True)
        self.fc = nn.Linear(12, 3)

    def forward(self, x):
        y = self.pool(torch.relu(self.norm(self.conv(x)))).transpose(1, 2)
        return self.fc(self.rnn(y)[0].mean(dim=1))


class GroupNormCnn(nn.Module):
    """nn.GroupNorm with and without its affine weights, which PyTorch writes below operator
    set 21 as an InstanceNormalization of the groups between two Reshapes."""

    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.GroupNorm(2, 8), nn.SiLU(),
                                 nn.Conv2d(8, 4, 1), nn.GroupNorm(4, 4, affine=False), nn.ReLU(),
                                 nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(4, 3))

    def forward(self, x):
        return self.net(x)


class SoftplusMlp(nn.Module):
    """nn.Softplus at other betas and thresholds: torch.export writes the threshold (Where),
    TorchScript drops it (its graphs answer as PyTorch only below the threshold: the values here
    stay below it)."""

    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(6, 8), nn.Softplus(beta=2.0), nn.Linear(8, 8),
                                 nn.Softplus(beta=0.5, threshold=15.0), nn.Linear(8, 3))

    def forward(self, x):
        return self.net(x)


class DropoutMlp(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Dropout(0.3), nn.Linear(16, 1),
                                 nn.Sigmoid())

    def forward(self, x):
        return self.net(x)


class NormMlp(nn.Module):
    """LayerNorm and the exact GELU (decomposed below opsets 17 and 20)."""

    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(6, 12), nn.LayerNorm(12), nn.GELU(), nn.Linear(12, 2))

    def forward(self, x):
        return self.net(x)


class Cnn(nn.Module):
    """Conv, batch norm, max and average pools, an adaptive pool, then nn.Flatten."""

    def __init__(self) -> None:
        super().__init__()
        self.features = nn.Sequential(  # the first batch norm folds into its conv, the second not
            nn.Conv2d(3, 6, 3, padding=1), nn.BatchNorm2d(6), nn.ReLU(), nn.MaxPool2d(2),
            nn.BatchNorm2d(6), nn.Conv2d(6, 8, 3), nn.ReLU(), nn.AvgPool2d(2),
            nn.AdaptiveAvgPool2d((2, 2)))
        self.head = nn.Sequential(nn.Flatten(), nn.Linear(32, 10), nn.Softmax(dim=1))

    def forward(self, x):
        return self.head(self.features(x))


class CnnCeil(nn.Module):
    """Pools with ceil_mode=True: windows past the end while they start inside the places or the
    begin padding (9 -> 5: the sixth window would start in the end padding and is dropped -> 3
    -> 2); the avg pools' divisors count their padding (PyTorch's default), not the room past it."""

    def __init__(self) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(2, 4, 3, padding=1), nn.ReLU(),
            nn.MaxPool2d(2, stride=2, padding=1, ceil_mode=True), nn.AvgPool2d(2, ceil_mode=True),
            nn.AvgPool2d(3, stride=2, padding=1, ceil_mode=True))
        self.head = nn.Sequential(nn.Flatten(), nn.Linear(16, 3))

    def forward(self, x):
        return self.head(self.features(x))


class CnnView(nn.Module):
    """The flatten written as `x.view(x.size(0), -1)`, a global average pool."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(2, 4, 3, stride=2, padding=1)
        self.norm = nn.BatchNorm2d(4)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(4, 3)

    def forward(self, x):
        x = self.pool(torch.relu(self.norm(self.conv(x))))
        return self.fc(x.view(x.size(0), -1))


class Conv1dText(nn.Module):
    """Embedding, turned channels-first for Conv1d, a max over time, a linear head."""

    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(30, 8)
        self.conv = nn.Conv1d(8, 12, 3, padding=1)
        self.pool = nn.AdaptiveMaxPool1d(1)
        self.fc = nn.Linear(12, 2)

    def forward(self, ids):
        x = self.embed(ids).transpose(1, 2)
        x = self.pool(torch.relu(self.conv(x))).squeeze(-1)
        return self.fc(x)


class Conv1dSeries(nn.Module):
    """A channels-first series (batch, channels, steps) in and out: Conv1d, pools, Conv1d."""

    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Conv1d(4, 8, 5, padding=2), nn.ReLU(), nn.MaxPool1d(2),
                                 nn.Conv1d(8, 3, 3, padding=1))

    def forward(self, x):
        return self.net(x)


class LstmLast(nn.Module):
    """An LSTM (1 or 2 layers) read out by h_n[-1]; with batch_first=False (PyTorch's default) it
    takes series (steps, batch, channels), read with OnnxFile(loss, series="batch_first")."""

    def __init__(self, layers: int, batch_first: bool = True) -> None:
        super().__init__()
        self.rnn = nn.LSTM(5, 8, num_layers=layers, batch_first=batch_first)
        self.fc = nn.Linear(8, 2)

    def forward(self, x):
        _, (h, _) = self.rnn(x)
        return self.fc(h[-1])


class LstmOutLast(nn.Module):
    """An LSTM read out by its output at the last step, out[:, -1]."""

    def __init__(self) -> None:
        super().__init__()
        self.rnn = nn.LSTM(5, 8, batch_first=True)
        self.fc = nn.Linear(8, 2)

    def forward(self, x):
        out, _ = self.rnn(x)
        return self.fc(out[:, -1])


class BiGruTagger(nn.Module):
    """A bidirectional GRU over every step, a linear head per step."""

    def __init__(self) -> None:
        super().__init__()
        self.rnn = nn.GRU(5, 6, batch_first=True, bidirectional=True)
        self.fc = nn.Linear(12, 3)

    def forward(self, x):
        out, _ = self.rnn(x)
        return self.fc(out)


class BiGruLast(nn.Module):
    """A bidirectional GRU read out by both directions' last states side by side."""

    def __init__(self) -> None:
        super().__init__()
        self.rnn = nn.GRU(5, 6, batch_first=True, bidirectional=True)
        self.fc = nn.Linear(12, 1)

    def forward(self, x):
        _, h = self.rnn(x)
        return torch.sigmoid(self.fc(torch.cat([h[-2], h[-1]], dim=1)))


class EmbeddingLstm(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(40, 8)
        self.rnn = nn.LSTM(8, 10, batch_first=True)
        self.fc = nn.Linear(10, 4)

    def forward(self, ids):
        _, (h, _) = self.rnn(self.embed(ids))
        return self.fc(h[-1])


class Encoder(nn.Module):
    def __init__(self, activation: str = "relu") -> None:
        super().__init__()
        self.layer = nn.TransformerEncoderLayer(16, 2, dim_feedforward=24, dropout=0.1,
                                                activation=activation, batch_first=True)
        self.fc = nn.Linear(16, 3)

    def forward(self, x):
        return self.fc(self.layer(x))


class EncoderStack(nn.Module):
    """A projection, two norm-first encoder layers (GELU) with a causal mask, the mean over the
    steps, a linear head: torch.export reads the batch and the steps once, at the projection,
    for both layers' reshapes."""

    def __init__(self) -> None:
        super().__init__()
        self.projection = nn.Linear(5, 16)
        self.layers = nn.ModuleList(
            nn.TransformerEncoderLayer(16, 4, dim_feedforward=24, dropout=0.1, activation="gelu",
                                       batch_first=True, norm_first=True) for _ in range(2))
        self.fc = nn.Linear(16, 3)

    def forward(self, x):
        y = self.projection(x)
        mask = nn.Transformer.generate_square_subsequent_mask(x.shape[1])
        for layer in self.layers:
            y = layer(y, src_mask=mask, is_causal=True)
        return self.fc(y.mean(dim=1))


class SelfAttention(nn.Module):
    """nn.MultiheadAttention on its own (its averaged weights asked for, then unused), the mean
    over the steps, a linear head."""

    def __init__(self) -> None:
        super().__init__()
        self.attention = nn.MultiheadAttention(12, 3, batch_first=True)
        self.fc = nn.Linear(12, 2)

    def forward(self, x):
        y, _ = self.attention(x, x, x)
        return self.fc(y.mean(dim=1))


class ProjectedAttention(nn.Module):
    """A linear projection, then nn.MultiheadAttention without its weights (need_weights=False:
    PyTorch's scaled_dot_product_attention path, which torch.export writes with the shapes read
    from the projection's input), the mean over the steps, a linear head."""

    def __init__(self) -> None:
        super().__init__()
        self.projection = nn.Linear(5, 12)
        self.attention = nn.MultiheadAttention(12, 2, batch_first=True)
        self.fc = nn.Linear(12, 3)

    def forward(self, x):
        p = self.projection(x)
        y, _ = self.attention(p, p, p, need_weights=False)
        return self.fc(y.mean(dim=1))


def _ids(shape: tuple[int, ...], vocabulary: int) -> Callable[[torch.Generator], torch.Tensor]:
    return lambda g: torch.randint(0, vocabulary, shape, generator=g)


def _normal(*shape: int) -> Callable[[torch.Generator], torch.Tensor]:
    return lambda g: torch.randn(*shape, generator=g)


# name -> (module factory, input maker, dynamic axes of the input (and output) besides the batch)
MODELS: dict[str, tuple[Callable[[], nn.Module], Callable, dict[int, str], dict[int, str]]] = {
    "mlp": (lambda: Mlp(), _normal(BATCH, 6), {}, {}),
    "mlp_softmax": (lambda: Mlp(nn.Softmax(dim=-1)), _normal(BATCH, 6), {}, {}),
    "mlp_dropout": (DropoutMlp, _normal(BATCH, 6), {}, {}),
    "mlp_gelu_tanh": (GeluTanhMlp, _normal(BATCH, 6), {}, {}),
    "mlp_hard": (HardMlp, _normal(BATCH, 6), {}, {}),
    "mlp_softplus": (SoftplusMlp, _normal(BATCH, 6), {}, {}),
    "layer_norm": (NormMlp, _normal(BATCH, 6), {}, {}),
    "cnn": (Cnn, _normal(BATCH, 3, 12, 12), {}, {}),
    "cnn_view": (CnnView, _normal(BATCH, 2, 9, 9), {}, {}),
    "cnn_ceil": (CnnCeil, _normal(BATCH, 2, 9, 9), {}, {}),
    "cnn_mobile": (MobileBlock, _normal(BATCH, 3, 8, 8), {}, {}),
    "cnn_prelu": (PreluCnn, _normal(BATCH, 2, 9, 9), {}, {}),
    "crnn": (Crnn, _normal(BATCH, 3, 12), {2: "steps"}, {}),
    "cnn_groupnorm": (GroupNormCnn, _normal(BATCH, 3, 6, 6), {}, {}),
    "conv1d_text": (Conv1dText, _ids((BATCH, 10), 30), {1: "steps"}, {}),
    "conv1d_series": (Conv1dSeries, _normal(BATCH, 4, 12), {}, {}),
    "lstm": (lambda: LstmLast(1), _normal(BATCH, 7, 5), {1: "steps"}, {}),
    "lstm2": (lambda: LstmLast(2), _normal(BATCH, 7, 5), {1: "steps"}, {}),
    "lstm_time_major": (lambda: LstmLast(2, batch_first=False), _normal(7, BATCH, 5), {0: "steps", 1: "batch"}, {}),
    "lstm_out_last": (LstmOutLast, _normal(BATCH, 7, 5), {1: "steps"}, {}),
    "bigru_tagger": (BiGruTagger, _normal(BATCH, 7, 5), {1: "steps"}, {1: "steps"}),
    "bigru_last": (BiGruLast, _normal(BATCH, 7, 5), {1: "steps"}, {}),
    "embedding_lstm": (EmbeddingLstm, _ids((BATCH, 9), 40), {1: "steps"}, {}),
    "encoder": (lambda: Encoder("relu"), _normal(BATCH, 5, 16), {1: "steps"}, {1: "steps"}),
    "encoder_gelu": (lambda: Encoder("gelu"), _normal(BATCH, 5, 16), {1: "steps"}, {1: "steps"}),
    "attention": (SelfAttention, _normal(BATCH, 6, 12), {1: "steps"}, {}),
    "attention_fast": (ProjectedAttention, _normal(BATCH, 6, 5), {1: "steps"}, {}),
    "encoder_stack": (EncoderStack, _normal(BATCH, 6, 5), {1: "steps"}, {}),
}


# graphs beyond opsets 13, 17 and 18: the encoders' attention needs 14 in TorchScript; at 20 GELU
# is one node
EXTRA = {"encoder": ("ts14",), "attention_fast": ("ts14",),
         "encoder_stack": ("ts14",), "encoder_gelu": ("ts14", "ts20", "dynamo20"),
         "layer_norm": ("ts20", "dynamo20"), "mlp_gelu_tanh": ("ts20", "dynamo20")}


def build(name: str) -> tuple[nn.Module, torch.Tensor]:
    factory, make_input, _, _ = MODELS[name]
    torch.manual_seed(sum(map(ord, name)))
    module = factory()
    with torch.no_grad():  # no parameter at its initial value (zero biases, unit norm scales)
        for parameter in module.parameters():
            parameter.add_(torch.randn(parameter.shape) * 0.1)
        for buffer_name, buffer in module.named_buffers():  # batch norms' statistics
            if buffer_name.endswith("running_mean"):
                buffer.copy_(torch.randn(buffer.shape) * 0.3)
            elif buffer_name.endswith("running_var"):
                buffer.copy_(torch.rand(buffer.shape) + 0.5)
    module.eval()
    return module, make_input(torch.Generator().manual_seed(7))


# -- the exports --------------------------------------------------------------------------------------
def export_torchscript(module: nn.Module, x: torch.Tensor, opset: int, name: str,
                       fixed: bool) -> bytes:
    _, _, in_axes, out_axes = MODELS[name]
    dynamic = None if fixed else {"input": {0: "batch", **in_axes},
                                  "output": {0: "batch", **out_axes}}
    stream = io.BytesIO()
    torch.onnx.export(module, (x,), stream, dynamo=False, opset_version=opset,
                      input_names=["input"], output_names=["output"], dynamic_axes=dynamic)
    return stream.getvalue()


def export_dynamo(module: nn.Module, x: torch.Tensor, opset: int, name: str) -> bytes:
    _, _, in_axes, _ = MODELS[name]
    dims = {0: torch.export.Dim("batch", min=1, max=1024)}
    dims.update({axis: torch.export.Dim(symbol, min=2, max=4096) for axis, symbol in in_axes.items()})
    program = torch.onnx.export(module, (x,), dynamo=True, opset_version=opset,
                                input_names=["input"], output_names=["output"],
                                dynamic_shapes=({**dims},), optimize=True, verbose=False)
    return program.model_proto.SerializeToString()


def torch_fixtures(names: list[str], report: list[str]) -> None:
    for name in names:
        module, x = build(name)
        with torch.no_grad():
            y = module(x)
        np.savez(OUT / f"{name}.npz", x=x.numpy(), y=y.numpy())
        variants: list[tuple[str, Callable[[], bytes]]] = []
        for opset in TS_OPSETS:
            variants.append((f"ts{opset}", lambda o=opset: export_torchscript(module, x, o, name, False)))
        variants.append(("ts17fixed", lambda: export_torchscript(module, x, 17, name, True)))
        for opset in DYNAMO_OPSETS:
            variants.append((f"dynamo{opset}", lambda o=opset: export_dynamo(module, x, o, name)))
        for tag in EXTRA.get(name, ()):
            opset = int(tag.lstrip("tsdynamo"))
            export = export_dynamo if tag.startswith("dynamo") else (
                lambda m, x_, o, n: export_torchscript(m, x_, o, n, False))
            variants.append((tag, lambda e=export, o=opset: e(module, x, o, name)))
        for tag, export in variants:
            try:
                data = export()
                proto = onnx.load_from_string(data)
                onnx.checker.check_model(proto)
            except Exception as error:  # an exporter's failure: reported, the graph left out
                report.append(f"{name}.{tag}: not written: {type(error).__name__}: "
                              f"{str(error).splitlines()[0][:200]}")
                continue
            held = next(o.version for o in proto.opset_import if o.domain in ("", "ai.onnx"))
            if not tag.endswith(str(held)) and not tag.endswith("fixed"):
                # the dynamo exporter writes opset 18 and converts down; where onnx's converter
                # has no adapter it keeps 18, which the dynamo18 graph already is
                report.append(f"{name}.{tag}: not written: the exporter kept operator set {held}")
                continue
            (OUT / f"{name}.{tag}.onnx").write_bytes(data)


# -- scikit-learn's MLPs --------------------------------------------------------------------------------
def sklearn_fixtures(report: list[str]) -> None:
    from skl2onnx import to_onnx
    from sklearn.neural_network import MLPClassifier, MLPRegressor

    rng = np.random.default_rng(3)
    x = rng.standard_normal((40, 5)).astype(np.float32)
    label = (x[:, 0] + x[:, 1] > 0).astype(np.int64) + (x[:, 2] > 0.5).astype(np.int64)
    classifier = MLPClassifier(hidden_layer_sizes=(12, 6), max_iter=300, random_state=0).fit(x, label)
    regressor = MLPRegressor(hidden_layer_sizes=(10,), activation="tanh", max_iter=300, random_state=0).fit(
        x, x[:, 0] - 2 * x[:, 3])
    binary = MLPClassifier(hidden_layer_sizes=(8,), activation="logistic", max_iter=300,
                           random_state=0).fit(x, (x[:, 0] > x[:, 4]).astype(np.int64))
    cases = [("skl_classifier", classifier, classifier.predict_proba(x[:6])),
             ("skl_binary", binary, binary.predict_proba(x[:6])[:, 1:]),  # the positive class's
             ("skl_regressor", regressor, regressor.predict(x[:6]).reshape(-1, 1))]  # as the graph
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name, model, y in cases:
            options = {id(model): {"zipmap": False}} if "regressor" not in name else None
            proto = to_onnx(model, x[:1], target_opset=17, options=options)
            (OUT / f"{name}.skl.onnx").write_bytes(proto.SerializeToString())
            np.savez(OUT / f"{name}.npz", x=x[:6], y=np.asarray(y, np.float32))
            report.append(f"{name}.skl: outputs {[o.name for o in proto.graph.output]}")


def list_nodes(paths: list[Path]) -> None:
    for path in paths:
        model = onnx.load(path)
        print(f"== {path.name}: inputs {[(i.name, _dims(i)) for i in model.graph.input]} "
              f"outputs {[(o.name, _dims(o)) for o in model.graph.output]}")
        for node in model.graph.node:
            attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute
                     if a.type != onnx.AttributeProto.TENSOR}
            print(f"  {node.op_type:20s} {list(node.input)} -> {list(node.output)} {attrs}")


def _dims(info) -> list:
    return [d.dim_param or d.dim_value for d in info.type.tensor_type.shape.dim]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--list", nargs="*", help="print the nodes of these fixtures and stop")
    parser.add_argument("--only", nargs="*", default=None, help="make only these models")
    args = parser.parse_args()
    if args.list is not None:
        list_nodes([OUT / n for n in args.list] or sorted(OUT.glob("*.onnx")))
        return
    torch.set_num_threads(1)
    OUT.mkdir(parents=True, exist_ok=True)
    if args.only is None:
        for old in OUT.iterdir():
            old.unlink()
    names = [n for n in args.only if n in MODELS] if args.only else list(MODELS)
    report: list[str] = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch_fixtures(names, report)
    if args.only is None or "skl" in args.only:
        sklearn_fixtures(report)
    if args.only is None:
        (OUT / "NOT_WRITTEN.txt").write_text("".join(f"{line}\n" for line in report
                                                     if "not written" in line))
    print("\n".join(report), file=sys.stderr)
    total = sum(p.stat().st_size for p in OUT.iterdir())
    print(f"wrote {len(list(OUT.glob('*.onnx')))} graphs to {OUT} ({total / 1e6:.2f} MB)")


if __name__ == "__main__":
    main()
