"""What reordering a masked series' real steps to the front costs in ONNX Runtime: the LSTM
benchmark's network (50 steps x 32 -> LSTM 128, last state -> dense 1; batch 64) with a mask,
written three ways:

    no mask        the network without `masking`: no lengths, no reordering
    lengths alone  the graph as written before the reordering (`sequence_lens` only; right for
                   padding at the end only): the written graph with its GatherNDs bypassed
    reordered      the graph as written now (CumSum, ScatterElements, GatherND, then the
                   lengths): right for padding anywhere

    .venv/bin/python benchmarks/padding_graph.py

The batch holds series of 10 to 50 real steps, padded at the start. Each graph runs in its own
session on one thread, every optimisation on; the sessions take turns round by round and each
keeps its best round: CPU time per batch (`time.process_time`, the steadiest figure on a shared
machine) and wall time. The cost is reordered over lengths alone. The figure in
docs/exporting.md comes from this script.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests.support.graph_edits

STEPS, FEATURES, UNITS, BATCH = 50, 32, 128, 64
RUNS, ROUNDS = 20, 30


def graphs() -> tuple[dict[str, bytes], dict[str, np.ndarray]]:
    import onnx

    from deepsharp import MeanSquaredError, RandomStream, Sequential, Shape
    from deepsharp_export_onnx import OnnxExport
    from tests.support.graph_edits import without_reordering

    shape, loss = Shape(STEPS, FEATURES), MeanSquaredError()
    masked = Sequential().masking(0.0).lstm(UNITS).dense(1).lower(shape, RandomStream(0))
    plain = Sequential().lstm(UNITS).dense(1).lower(shape, RandomStream(0))
    written = OnnxExport(shape).to_bytes(masked, loss)
    found = {"no mask": OnnxExport(shape).to_bytes(plain, loss),
             "lengths alone": without_reordering(onnx.load_from_string(written)).SerializeToString(),
             "reordered": written}
    generator = np.random.default_rng(0)
    x = generator.standard_normal((BATCH, STEPS, FEATURES)).astype(np.float32)
    for row, length in enumerate(generator.integers(10, STEPS + 1, BATCH)):
        x[row, : STEPS - length] = 0.0  # padding at the start
    end = np.stack([np.roll(row, -int((row == 0).all(axis=1).sum()), axis=0) for row in x])
    return found, {"padded at the start": x, "padded at the end": end}


def session(data: bytes):
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.log_severity_level = 3
    return ort.InferenceSession(data, options, providers=["CPUExecutionProvider"])


def measure(data: dict[str, bytes], x: np.ndarray) -> dict[str, tuple[float, float]]:
    """Best (CPU seconds, wall seconds) per batch of each graph, the graphs taking turns."""
    sessions = {name: session(graph) for name, graph in data.items()}
    best = {name: (float("inf"), float("inf")) for name in data}
    for _ in range(ROUNDS):
        for name, run in sessions.items():
            wall, cpu = time.perf_counter(), time.process_time()
            for _ in range(RUNS):
                run.run(None, {"input": x})
            cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
            best[name] = (min(best[name][0], cpu / RUNS), min(best[name][1], wall / RUNS))
    return best


def compare(data: dict[str, bytes], batches: dict[str, np.ndarray], base: str, new: str,
            note: str) -> list[dict]:
    """Per batch: the largest difference between graphs `new` and `base` (with `note` when
    they differ), then every graph's best CPU and wall time and its CPU cost over `base`."""
    rows = []
    width = max(len(name) for name in data) + 2
    for label, x in batches.items():
        answers = {name: session(graph).run(None, {"input": x})[0] for name, graph in data.items()}
        differs = np.abs(answers[new] - answers[base]).max()
        best = measure(data, x)
        print(f"{label}: largest difference {new} vs {base} {differs:.2g}"
              f"{f' ({note})' if differs else ''}")
        print(f"  {'graph':<{width}}{'cpu ms':>8}{'wall ms':>9}{'cpu vs ' + base:>{len(base) + 11}}")
        for name, (cpu, wall) in best.items():
            cost = cpu / best[base][0] - 1
            print(f"  {name:<{width}}{cpu * 1e3:>8.3f}{wall * 1e3:>9.3f}{cost:>+{len(base) + 10}.1%}")
            rows.append({"batch": label, "graph": name, "cpu_ms": cpu * 1e3, "wall_ms": wall * 1e3,
                         "cost": cost})
    return rows


def main() -> list[dict]:
    data, batches = graphs()
    return compare(data, batches, "lengths alone", "reordered",
                   "the lengths alone are wrong for padding before a real step")


if __name__ == "__main__":
    main()
