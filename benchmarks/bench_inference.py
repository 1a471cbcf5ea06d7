"""Inference in ONNX Runtime: our graph of each benchmark network against PyTorch's own
`torch.onnx.export` of the same network with the same weights, side by side in one run.

    .venv/bin/python benchmarks/bench_inference.py          # or: benchmarks/run.py inference

The five networks (the training benchmarks' four, and a bidirectional GRU):

    mlp          14 -> dense 256 relu -> dense 256 relu -> dense 1, sigmoid; batch 128
    cnn          28x28x1 -> conv 3x3 32 relu, max pool 2, conv 3x3 64 relu, max pool 2, flatten,
                 dense 128 relu, dense 10, softmax; batch 64
    lstm         50 steps x 32 -> LSTM 128 (last state) -> dense 1; batch 64
    transformer  64 tokens of 1000 -> embedding 128, a pre-norm encoder block (4 heads, feed
                 forward 512 GELU), mean over tokens, dense 2, softmax; batch 32
    gru          50 steps x 32 -> bidirectional GRU 128 (both last states) -> dense 1; batch 64

deepsharp's network is lowered, its weights copied into the PyTorch module through `layout/` (the
functions the exporter and importer use), and each is exported: ours by `OnnxExport`, PyTorch's
by `torch.onnx.export` (its default, the torch.export-based exporter; and the TorchScript one,
`dynamo=False`), every batch axis symbolic. The three graphs are checked to answer alike before
any is timed. Each graph runs in its own ONNX Runtime session on one thread (the steadiest
figure on a shared machine), every optimisation on; the harness alternates the sessions round by
round and keeps each one's best and median. The table gives the latency per batch and the
Transpose nodes of each graph as written and as ONNX Runtime runs it (after its optimisations).
"""

from __future__ import annotations

import io
import logging
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

from side_by_side import side_by_side, torch_ready

RNG = np.random.default_rng(0)


# -- the networks: deepsharp's, and the same one written for PyTorch ------------------------------
def _param(torch, array: np.ndarray):
    return torch.nn.Parameter(torch.from_numpy(np.ascontiguousarray(array)))


def _linear(torch, step):
    from layout import dense_kernel_to_torch

    linear = torch.nn.Linear(*step.weight._data.shape)
    linear.weight = _param(torch, dense_kernel_to_torch(step.weight._data))
    linear.bias = _param(torch, step.bias._data)
    return linear


def mlp(torch):
    from deepsharp import BinaryCrossEntropy, RandomStream, Sequential, Shape

    network = (Sequential().dense(256).relu().dense(256).relu().dense(1)
               .lower(Shape(14), RandomStream(0)))
    steps = network.steps
    nn = torch.nn
    model = nn.Sequential(_linear(torch, steps[0]), nn.ReLU(), _linear(torch, steps[2]), nn.ReLU(),
                          _linear(torch, steps[4]), nn.Sigmoid())
    x = RNG.standard_normal((128, 14)).astype(np.float32)
    return network, BinaryCrossEntropy(), model, x, x


def cnn(torch):
    from deepsharp import CrossEntropy, RandomStream, Sequential, Shape
    from layout import conv_kernel_to_torch, dense_kernel_to_torch, flat_rows_to_channels_first

    network = (Sequential().conv2d(32, 3).relu().max_pool2d(2).conv2d(64, 3).relu().max_pool2d(2)
               .flatten().dense(128).relu().dense(10)).lower(Shape(28, 28, 1), RandomStream(0))
    steps = network.steps
    nn = torch.nn
    convs = []
    for step in (steps[0], steps[3]):
        conv = nn.Conv2d(step.input_shape[-1], step.spec.filters, 3)
        conv.weight = _param(torch, conv_kernel_to_torch(step.weight._data))
        conv.bias = _param(torch, step.bias._data)
        convs.append(conv)
    flat = nn.Linear(1600, 128)  # reads PyTorch's channels-first flatten: the rows reordered
    flat.weight = _param(torch, dense_kernel_to_torch(
        flat_rows_to_channels_first(steps[7].weight._data, steps[6].input_shape)))
    flat.bias = _param(torch, steps[7].bias._data)
    model = nn.Sequential(convs[0], nn.ReLU(), nn.MaxPool2d(2), convs[1], nn.ReLU(),
                          nn.MaxPool2d(2), nn.Flatten(), flat, nn.ReLU(), _linear(torch, steps[9]),
                          nn.Softmax(dim=-1))
    x = RNG.standard_normal((64, 28, 28, 1)).astype(np.float32)
    return network, CrossEntropy(), model, x, np.ascontiguousarray(x.transpose(0, 3, 1, 2))


def _recurrent(torch, module, step, directions: int) -> None:
    from layout import recurrent_kernel_to_torch

    for suffix in ("", "_reverse")[:directions]:
        for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
            array = getattr(step, f"{name}_l0{suffix}")._data
            if name.startswith("weight"):
                array = recurrent_kernel_to_torch(array)
            setattr(module, f"{name}_l0{suffix}", _param(torch, array))


def lstm(torch):
    from deepsharp import MeanSquaredError, RandomStream, Sequential, Shape

    network = Sequential().lstm(128).dense(1).lower(Shape(50, 32), RandomStream(0))

    class Model(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lstm = torch.nn.LSTM(32, 128, batch_first=True)
            _recurrent(torch, self.lstm, network.steps[0], 1)
            self.dense = _linear(torch, network.steps[1])

        def forward(self, x):
            _, (h, _) = self.lstm(x)
            return self.dense(h[-1])

    x = RNG.standard_normal((64, 50, 32)).astype(np.float32)
    return network, MeanSquaredError(), Model(), x, x


def gru(torch):
    from deepsharp import MeanSquaredError, RandomStream, Sequential, Shape

    network = (Sequential().gru(128, bidirectional=True).dense(1)
               .lower(Shape(50, 32), RandomStream(0)))

    class Model(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.gru = torch.nn.GRU(32, 128, batch_first=True, bidirectional=True)
            _recurrent(torch, self.gru, network.steps[0], 2)
            self.dense = _linear(torch, network.steps[1])

        def forward(self, x):
            _, h = self.gru(x)
            return self.dense(torch.cat([h[-2], h[-1]], dim=1))

    x = RNG.standard_normal((64, 50, 32)).astype(np.float32)
    return network, MeanSquaredError(), Model(), x, x


def transformer(torch):
    from bench_transformer import CLASSES, FEED, HEADS, TOKENS, VOCABULARY, WIDTH, deepsharp_model
    from deepsharp import CrossEntropy
    from layout import kernels_to_torch_in_projection

    network = deepsharp_model()
    embed, first, second, _, head = network.steps
    norm1, attention = first.branch.steps if hasattr(first, "branch") else first.steps
    norm2, up, _, down = second.branch.steps if hasattr(second, "branch") else second.steps
    nn = torch.nn

    class Model(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.embed = nn.Embedding(VOCABULARY, WIDTH)
            self.embed.weight = _param(torch, embed.weight._data)
            self.block = nn.TransformerEncoderLayer(WIDTH, HEADS, FEED, dropout=0.0,
                                                    activation="gelu", batch_first=True,
                                                    norm_first=True)
            block = self.block
            for norm, ours in ((block.norm1, norm1), (block.norm2, norm2)):
                norm.weight, norm.bias = _param(torch, ours.weight._data), _param(torch, ours.bias._data)
            block.self_attn.in_proj_weight = _param(torch, kernels_to_torch_in_projection(
                attention.query_weight._data, attention.key_weight._data,
                attention.value_weight._data))
            block.self_attn.in_proj_bias = _param(torch, np.concatenate(
                [attention.query_bias._data, attention.key_bias._data,
                 attention.value_bias._data]))
            block.self_attn.out_proj = _linear(torch, _Dense(attention.output_weight,
                                                             attention.output_bias))
            block.linear1, block.linear2 = _linear(torch, up), _linear(torch, down)
            self.head = _linear(torch, head)

        def forward(self, ids):
            return torch.softmax(self.head(self.block(self.embed(ids)).mean(dim=1)), dim=-1)

    ids = RNG.integers(0, VOCABULARY, (32, TOKENS))
    assert CLASSES == 2
    return network, CrossEntropy(), Model(), ids, ids


class _Dense:
    """A weight and bias pair read as a dense step's (attention's output projection)."""

    def __init__(self, weight, bias) -> None:
        self.weight, self.bias = weight, bias


NETWORKS = {"mlp": mlp, "cnn": cnn, "lstm": lstm, "transformer": transformer, "gru": gru}
RUNS = {"mlp": 200, "cnn": 10, "lstm": 10, "transformer": 10, "gru": 5}  # batches per round


# -- export, check, time ----------------------------------------------------------------------------
def torch_graph(torch, model, example: np.ndarray, dynamo: bool) -> bytes:
    model.eval()
    args = (torch.from_numpy(example),)
    if dynamo:
        batch = torch.export.Dim("batch", min=1)
        program = torch.onnx.export(model, args, dynamo=True, input_names=["input"],
                                    output_names=["output"], dynamic_shapes=({0: batch},),
                                    verbose=False)
        return program.model_proto.SerializeToString()
    stream = io.BytesIO()
    torch.onnx.export(model, args, stream, dynamo=False, input_names=["input"],
                      output_names=["output"], dynamic_axes={"input": {0: "batch"}})
    return stream.getvalue()


def session(data: bytes, optimized: Path | None = None):
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.log_severity_level = 3
    if optimized is not None:
        options.optimized_model_filepath = str(optimized)
    return ort.InferenceSession(data, options, providers=["CPUExecutionProvider"])


def transposes(data: bytes) -> tuple[int, int]:
    """Transpose nodes in the graph as written, and as ONNX Runtime runs it."""
    import onnx

    with tempfile.TemporaryDirectory() as folder:
        optimized = Path(folder) / "optimized.onnx"
        session(data, optimized)
        ran = onnx.load(str(optimized))
    written = onnx.load_from_string(data)
    return (sum(n.op_type == "Transpose" for n in written.graph.node),
            sum(n.op_type == "Transpose" for n in ran.graph.node))


def runner(data: bytes, x: np.ndarray, runs: int, cpu: list[float]):
    """The harness's trainer factory: one round runs the batch `runs` times; each round's CPU
    time (one thread: the steadiest figure) goes to `cpu`, beside the harness's wall clock."""
    def factory():
        run = session(data)
        name = run.get_inputs()[0].name

        def batches() -> None:
            started = time.process_time()
            for _ in range(runs):
                run.run(None, {name: x})
            cpu.append((time.process_time() - started) / runs)

        return batches

    return factory


def measure(name: str, rounds: int = 15) -> list[dict]:
    torch = torch_ready()
    torch.set_num_threads(1)
    warnings.filterwarnings("ignore")  # the exporters' deprecation and tracing advice
    logging.getLogger("torch").setLevel(logging.ERROR)
    from deepsharp_export_onnx import OnnxExport

    network, loss, model, ours_x, theirs_x = NETWORKS[name](torch)
    graphs = {"deepsharp": OnnxExport(network.input_shape).to_bytes(network, loss),
              "torch.export": torch_graph(torch, model, theirs_x, dynamo=True),
              "torchscript": torch_graph(torch, model, theirs_x, dynamo=False)}
    expected = network.predict(ours_x, loss)
    for label, data in graphs.items():  # the same network, or the timing means nothing
        x = ours_x if label == "deepsharp" else theirs_x
        got = session(data).run(None, {session(data).get_inputs()[0].name: x})[0]
        np.testing.assert_allclose(got, expected, atol=2e-4, err_msg=f"{name}: {label}")
    rows = []
    for label in ("torch.export", "torchscript"):
        cpu: dict[str, list[float]] = {"deepsharp": [], label: []}
        pair = side_by_side(name, runner(graphs["deepsharp"], ours_x, RUNS[name], cpu["deepsharp"]),
                            runner(graphs[label], theirs_x, RUNS[name], cpu[label]), RUNS[name],
                            rounds)
        best_cpu = {graph: min(times[1:]) for graph, times in cpu.items()}  # past the warm-up
        for row, graph in zip(pair, ("deepsharp", label)):
            written, ran = transposes(graphs[graph])
            rows.append({"network": name, "graph": graph, "against": label,
                         "ms_per_batch": row["seconds_per_step"] * 1e3,
                         "median_ms_per_batch": 1e3 / row["median_steps_per_second"],
                         "cpu_ms_per_batch": best_cpu[graph] * 1e3,
                         "ratio": row["ratio_to_pytorch"],
                         "median_ratio": row["median_ratio_to_pytorch"],
                         "cpu_ratio": best_cpu[label] / best_cpu["deepsharp"],
                         "transposes": written, "transposes_run": ran,
                         "bytes": len(graphs[graph])})
    return rows


def print_rows(rows: list[dict]) -> None:
    """ms/batch: the best round's wall time per batch (median: the median round's); cpu: the best
    round's CPU time per batch; the ratios are ours over theirs in batches per second (above 1:
    ours is faster)."""
    print(f"{'network':<13}{'graph':<14}{'ms/batch':>9}{'median':>8}{'cpu ms':>8}{'x wall':>8}"
          f"{'x median':>9}{'x cpu':>7}{'Transposes':>11}{'as run':>7}{'bytes':>11}")
    for row in rows:
        ours = row["graph"] == "deepsharp"
        ratios = [f"{row[k]:.2f}" if ours else "1.00" for k in ("ratio", "median_ratio",
                                                                "cpu_ratio")]
        print(f"{row['network']:<13}{row['graph']:<14}{row['ms_per_batch']:>9.2f}"
              f"{row['median_ms_per_batch']:>8.2f}{row['cpu_ms_per_batch']:>8.2f}"
              f"{ratios[0]:>8}{ratios[1]:>9}{ratios[2]:>7}"
              f"{row['transposes']:>11}{row['transposes_run']:>7}{row['bytes']:>11,}")


def main(names: list[str] | None = None) -> list[dict]:
    rows = []
    for name in names or list(NETWORKS):
        rows += measure(name)
    print_rows(rows)
    return rows


if __name__ == "__main__":
    import sys

    main(sys.argv[1:])
