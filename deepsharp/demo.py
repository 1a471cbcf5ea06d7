"""`deepsharp demo`: train on real bundled data, export to ONNX, check the graph in ONNX Runtime.

1. The Wisconsin breast cancer data (569 tumours, 30 measurements): a stratified fifth is held
   out, the rest standardised and split again for early stopping; a dense network learns to tell
   malignant from benign, the held-out accuracy is printed, the graph is written with the
   standardisation inside it and run in ONNX Runtime on the raw measurements, the largest
   difference from `network.predict` of the standardised rows is printed, and the graph's size
   and difference with float16 and int8 weights.
2. Handwritten digits (see `deepsharp.demo_digits`): a validation split, macro F1 and top-2
   accuracy beside accuracy, and the best epoch's weights kept by a checkpoint.

Exit status 1 if a graph disagrees with its network.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from deepsharp import Adam, BinaryCrossEntropy, Callback, EarlyStopping, RandomStream, Sequential, Shape
from deepsharp.datasets import Standardizer, load_breast_cancer, split

TOLERANCE = 1e-5


class _PrintEvery(Callback):
    def __init__(self, every: int) -> None:
        self.every = every

    def on_epoch_end(self, epoch, logs, module) -> bool:
        if (epoch + 1) % self.every == 0 or epoch == 0:
            print(f"  epoch {logs['epoch']:>3}  loss {logs['loss']:.4f}  accuracy "
                  f"{logs['accuracy']:.3f}  val_loss {logs['val_loss']:.4f}  val_accuracy "
                  f"{logs['val_accuracy']:.3f}")
        return False


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="deepsharp demo", description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="out/breast_cancer.onnx", help="where to write the graph")
    parser.add_argument("--epochs", type=int, default=200)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--digits-out", default="out/digits.onnx",
                        help="where to write the digits graph")
    args = parser.parse_args(argv)
    status = _cancer(args)
    print()
    return max(status, _digits(Path(args.digits_out), args.seed))


def _digits(out: Path, seed: int) -> int:
    from deepsharp.demo_digits import run

    out.parent.mkdir(parents=True, exist_ok=True)
    network, loss, x_test, same = run(out, seed=seed)
    from deepsharp_export_onnx import OnnxExport

    with out.open("wb") as stream:
        OnnxExport(Shape(64)).write(network, loss, stream)
    print(f"wrote {out} ({out.stat().st_size:,} bytes)")
    return max(_check_in_runtime(out, network, loss, x_test), 0 if same else 1)


def _cancer(args: argparse.Namespace) -> int:
    data = load_breast_cancer()
    random = RandomStream(args.seed)
    x_train, y_train, x_test, y_test = split(data.x, data.y, 0.2, random)
    scale = Standardizer.fit(x_train)
    x_fit, y_fit, x_val, y_val = split(scale(x_train), y_train, 0.15, RandomStream(args.seed + 1))
    raw_test, x_test = x_test, scale(x_test)
    print(f"breast cancer: {len(data.y)} tumours, {len(data.features)} measurements; training on "
          f"{len(y_fit)}, early-stopping on {len(y_val)}, holding out {len(y_test)}")

    spec = Sequential().dense(32).relu().dropout(0.2).dense(16).relu().dense(1).sigmoid()
    network = spec.lower(Shape(len(data.features)), random)
    print(network.summary())
    loss = BinaryCrossEntropy()
    started = time.perf_counter()
    history = network.fit(x_fit, y_fit, loss=loss, optimizer=Adam(1e-3, weight_decay=1e-4),
                          epochs=args.epochs, batch_size=32, validation=(x_val, y_val),
                          early_stopping=EarlyStopping(patience=20), seed=args.seed,
                          callbacks=[_PrintEvery(20)], verbose=0)
    print(f"trained {len(history)} epochs in {time.perf_counter() - started:.1f} s")

    answers = network.predict(x_test, loss)
    accuracy = float(np.mean((answers[:, 0] > 0.5) == (y_test > 0.5)))
    print(f"held-out accuracy: {accuracy:.3f} ({round(accuracy * len(y_test))}/{len(y_test)})")

    from deepsharp_export_onnx import OnnxExport

    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    OnnxExport(Shape(len(data.features)), features=list(data.features), prepare=scale).write(
        network, loss, out)
    print(f"wrote {out} ({out.stat().st_size:,} bytes): the standardisation, the network and "
          f"its sigmoid; the graph takes raw measurements")
    _show_raw_rows(out, raw_test, data.features)
    status = _check_in_runtime(out, network, loss, raw_test, scale)
    _smaller(network, loss, scale, raw_test, out)
    return status


def _show_raw_rows(path: Path, raw_test: np.ndarray, features) -> None:
    import onnxruntime as ort

    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    shown = [0, 1, 2, 3]  # radius, texture, perimeter, area: raw, as a laboratory measures them
    print("raw rows answered by the graph:")
    print("  " + "  ".join(f"{features[i][:14]:>14}" for i in shown) + "   ...   P(malignant)")
    answers = session.run(None, {"input": raw_test[:3]})[0]
    for row, answer in zip(raw_test[:3], answers):
        print("  " + "  ".join(f"{row[i]:>14.2f}" for i in shown) + f"   ...   {answer[0]:.4f}")


def _smaller(network, loss, scale, raw_test: np.ndarray, out: Path) -> None:
    """The same graph with float16 weights and with int8 weights, on the held-out rows."""
    from deepsharp_export_onnx import OnnxExport

    print("smaller graphs (held-out rows, raw):")
    for options, suffix in (({}, ""), ({"weights": "float16"}, ".float16"),
                            ({"quantize": "dynamic"}, ".int8")):
        export = OnnxExport(network.input_shape, prepare=scale, compare_on=raw_test, **options)
        export.write(network, loss, out.with_suffix(f"{suffix}.onnx"))
        print(f"  {export.report}")


def _check_in_runtime(path: Path, network, loss, x_test: np.ndarray, prepare=None) -> int:
    """The graph's answers against `network.predict` (of `prepare(x_test)`, when the graph holds
    the preparation and takes `x_test` raw)."""
    import onnx
    import onnxruntime as ort

    model = onnx.load(str(path))
    onnx.checker.check_model(model, full_check=True)
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    worst = 0.0
    for batch in (x_test, x_test[:1], x_test[:7]):
        got = session.run(None, {"input": batch})[0]
        expected = network.predict(prepare(batch) if prepare is not None else batch, loss)
        worst = max(worst, float(np.abs(got - expected).max()))
    rows = " (of the standardised rows)" if prepare is not None else ""
    print(f"ONNX Runtime {ort.__version__}, opset {model.opset_import[0].version}, IR "
          f"{model.ir_version}: largest difference from network.predict: {worst:.3g}{rows} "
          f"(batches of {len(x_test)}, 1 and 7)")
    if worst > TOLERANCE:
        print(f"FAILED: the graph differs from the network by more than {TOLERANCE}")
        return 1
    return 0
