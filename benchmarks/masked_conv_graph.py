"""What running convolutions on each series' real steps alone costs in ONNX Runtime: the text
classifier (ids, 200 steps -> embedding 64 with a padding id -> conv1d 128, kernel 5, same ->
relu -> conv1d 128, kernel 5, same -> global max pool -> dense 2; batch 32), written three ways:

    no mask          the embedding without padding_index: no mask, the pool over every step
    padding read     the graph as written before convolutions honoured masks (the kernels read
                     the padding as real steps, the pool over the real steps only; wrong numbers
                     whenever a convolution sees padding): the written graph with the zeroing
                     and the gathers around each Conv bypassed
    real steps only  the graph as written now (Where, CumSum, ScatterElements, GatherND around
                     each Conv): right for padding anywhere

    .venv/bin/python benchmarks/masked_conv_graph.py

The texts hold 20 to 200 real ids, padded at the end (the common case) and with holes. Each graph
runs in its own session on one thread, every optimisation on; the sessions take turns round by
round and each keeps its best round: CPU time per batch (`time.process_time`, the steadiest
figure on a shared machine) and wall time. The cost is "real steps only" over "padding read".
The figure in docs/exporting.md comes from this script.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests.support, benchmarks

from benchmarks.padding_graph import compare  # noqa: E402

STEPS, VOCABULARY, WIDTH, FILTERS, KERNEL, BATCH = 200, 5000, 64, 128, 5, 32


def classifier(padding_index: int | None):
    from deepsharp import RandomStream, Sequential, Shape

    return (Sequential().embedding(VOCABULARY, WIDTH, padding_index=padding_index)
            .conv1d(FILTERS, KERNEL, padding="same").relu()
            .conv1d(FILTERS, KERNEL, padding="same").global_max_pool().dense(2)
            .lower(Shape(STEPS), RandomStream(0)))


def graphs() -> tuple[dict[str, bytes], dict[str, np.ndarray]]:
    import onnx

    from deepsharp import CrossEntropy, Shape
    from deepsharp_export_onnx import OnnxExport
    from tests.support.graph_edits import without_masked_kernels

    loss = CrossEntropy()
    written = OnnxExport(Shape(STEPS)).to_bytes(classifier(0), loss)
    found = {"no mask": OnnxExport(Shape(STEPS)).to_bytes(classifier(None), loss),
             "padding read": without_masked_kernels(onnx.load_from_string(written))
             .SerializeToString(),
             "real steps only": written}
    generator = np.random.default_rng(0)
    end = np.zeros((BATCH, STEPS), np.int64)
    holes = np.zeros((BATCH, STEPS), np.int64)
    for row, length in enumerate(generator.integers(20, STEPS + 1, BATCH)):
        ids = generator.integers(1, VOCABULARY, length)
        end[row, :length] = ids
        holes[row, np.sort(generator.choice(STEPS, length, replace=False))] = ids
    return found, {"padded at the end": end, "with holes": holes}


def main() -> list[dict]:
    data, batches = graphs()
    return compare(data, batches, "padding read", "real steps only",
                   "the padding read as real steps")


if __name__ == "__main__":
    main()
