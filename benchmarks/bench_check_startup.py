"""ONNX Runtime's start-up on the copy the annotation checker hands it, against the model as
written: a chain of Shape -> Reshape pairs (the shape computations a traced model is full of).

    .venv/bin/python benchmarks/run.py check_startup

CPU seconds at one thread (time.process_time) for session creation of: the model as written;
the copy the checker now makes (every declared axis anonymous, ranks kept); and the copy it made
before (no annotations at all), whose cost grows with the square of the chain. No PyTorch side:
this compares three copies of one graph in one run.
"""

from __future__ import annotations

import os
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import onnx  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from deepsharp_export_onnx.check.engines import strip_shapes  # noqa: E402


def chain(pairs: int) -> onnx.ModelProto:
    nodes, notes, previous = [], [], "x"
    for i in range(pairs):
        nodes.append(helper.make_node("Shape", [previous], [f"s{i}"], name=f"shape{i}"))
        nodes.append(helper.make_node("Reshape", [previous, f"s{i}"], [f"v{i}"], name=f"reshape{i}"))
        notes.append(helper.make_tensor_value_info(f"v{i}", TensorProto.FLOAT, ["b", 4]))
        previous = f"v{i}"
    graph = helper.make_graph(nodes, "chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["b", 4])],
                              [helper.make_tensor_value_info(previous, TensorProto.FLOAT, ["b", 4])],
                              value_info=notes[:-1],
                              initializer=[numpy_helper.from_array(np.zeros(1, np.float32), "unused")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)


def _start_up(model: onnx.ModelProto) -> float:
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.log_severity_level = 4
    options.intra_op_num_threads = 1
    data = model.SerializeToString()
    started = time.process_time()
    onnxruntime.InferenceSession(data, options, providers=["CPUExecutionProvider"])
    return time.process_time() - started


def _copy(model: onnx.ModelProto, keep_rank: bool) -> onnx.ModelProto:
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    strip_shapes(copy.graph, keep_rank=keep_rank, main=True)
    return copy


def main() -> list[dict]:
    rows = []
    for pairs in (1000, 2000, 4000):
        model = chain(pairs)
        row = {"bench": "check_startup", "nodes": 2 * pairs,
               "as_written_s": _start_up(model),
               "ranks_kept_s": _start_up(_copy(model, keep_rank=True)),
               "no_annotations_s": _start_up(_copy(model, keep_rank=False))}
        print(", ".join(f"{k}={v:.3g}" if isinstance(v, float) else f"{k}={v}" for k, v in row.items()),
              flush=True)
        rows.append(row)
    return rows


if __name__ == "__main__":
    main()
