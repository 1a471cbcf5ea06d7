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

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fixture_models import (  # noqa: E402  (beside this script)
    Mlp, GeluTanhMlp, HardMlp, MobileBlock, PreluCnn, Crnn, GroupNormCnn,
    SoftplusMlp, DropoutMlp, NormMlp, Cnn, CnnCeil, CnnView, Conv1dText, Conv1dSeries, LstmLast,
    LstmOutLast, BiGruTagger, BiGruLast, EmbeddingLstm, Encoder, EncoderStack, SelfAttention,
    ProjectedAttention,
)

OUT = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "import"
TS_OPSETS = (13, 17, 18)
DYNAMO_OPSETS = (13, 17, 18)
BATCH = 3


# -- the models (scripts/fixture_models.py) and their inputs -------------------------------------------
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
