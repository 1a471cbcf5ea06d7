"""Sizes and accuracy of the float32, float16 and int8 graphs of two networks: the demo's (breast
cancer, trained as `make demo` trains it, with its standardisation inside the graph) and the CNN of
the benchmarks (at its initialisation, on random images).

    .venv/bin/python benchmarks/smaller_graphs.py

For each form: the graph's size in bytes, the largest absolute difference of its answers (in ONNX
Runtime) from the float32 network's, and, for the demo, the held-out accuracy of the graph's
answers. The figures in docs/deploying.md come from this script.
"""

from __future__ import annotations

import numpy as np

FORMS = (("float32", {}), ("float16 weights", {"weights": "float16"}),
         ("int8 weights (dynamic)", {"quantize": "dynamic"}))


def demo():
    from deepsharp import Adam, BinaryCrossEntropy, EarlyStopping, RandomStream, Sequential, Shape
    from deepsharp.datasets import Standardizer, load_breast_cancer, split

    data = load_breast_cancer()
    random = RandomStream(7)
    x_train, y_train, x_test, y_test = split(data.x, data.y, 0.2, random)
    scale = Standardizer.fit(x_train)
    x_fit, y_fit, x_val, y_val = split(scale(x_train), y_train, 0.15, RandomStream(8))
    network = (Sequential().dense(32).relu().dropout(0.2).dense(16).relu().dense(1).sigmoid()
               .lower(Shape(30), random))
    loss = BinaryCrossEntropy()
    network.fit(x_fit, y_fit, loss=loss, optimizer=Adam(1e-3, weight_decay=1e-4), epochs=200,
                batch_size=32, validation=(x_val, y_val), early_stopping=EarlyStopping(patience=20),
                seed=7, progress=False)
    return network, loss, scale, x_test, y_test


def cnn():
    from deepsharp import CrossEntropy, RandomStream, Sequential, Shape

    network = (Sequential().conv2d(32, 3).relu().max_pool2d(2).conv2d(64, 3).relu().max_pool2d(2)
               .flatten().dense(128).relu().dense(10)).lower(Shape(28, 28, 1), RandomStream(0))
    images = np.random.default_rng(0).standard_normal((256, 28, 28, 1)).astype(np.float32)
    return network, CrossEntropy(), None, images, None


def table(name: str, network, loss, prepare, rows, answers) -> list[dict]:
    import onnxruntime as ort

    from deepsharp_export_onnx import OnnxExport

    out = []
    for form, options in FORMS:
        export = OnnxExport(network.input_shape, prepare=prepare, compare_on=rows, **options)
        data = export.to_bytes(network, loss)
        row = {"network": name, "form": form, "bytes": export.report.size,
               "largest_difference": export.report.largest_difference}
        if answers is not None:
            got = ort.InferenceSession(data, providers=["CPUExecutionProvider"]).run(
                None, {"input": rows})[0]
            row["accuracy"] = float(np.mean((got[:, 0] > 0.5) == (answers > 0.5)))
        out.append(row)
    return out


def main() -> list[dict]:
    rows = table("demo (breast cancer)", *demo()) + table("cnn (benchmarks)", *cnn())
    print("| network | form | bytes | largest difference | held-out accuracy |")
    print("|---|---|---:|---:|---:|")
    for row in rows:
        accuracy = f"{row['accuracy']:.3f}" if "accuracy" in row else "-"
        print(f"| {row['network']} | {row['form']} | {row['bytes']:,} | "
              f"{row['largest_difference']:.2g} | {accuracy} |")
    return rows


if __name__ == "__main__":
    main()
