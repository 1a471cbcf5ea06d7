"""The masked (variable-length) LSTM's and GRU's forward and backward passes, with and without
`compiled()`: CPU time at one BLAS thread, rounds alternating in one process.

    .venv/bin/python benchmarks/masked_recurrent.py [rounds] [--fit]

The benchmarks' recurrent shapes (50 steps x 32 inputs, batch 64; LSTM 128, GRU 64), each series
25-50 steps long. With lengths the LSTM runs its whole-sequence kernels, their masking inside;
the GRU runs each step's compiled kernels with numpy's masking between them
(deepsharp/tensors/ops/recurrent.py).

`--fit`: instead, `fit` of masking -> LSTM 128 -> dense 1 on such series zero-padded at the end
(16 steps of 64 an epoch), numpy and numba, at numpy's default threads and inside
`data_parallel(2)`: wall time a step, the first of the rounds left out as warm-up.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def main(rounds: int) -> None:
    from threadpoolctl import threadpool_limits

    from deepsharp.compiled import compiled
    from deepsharp.tensors import Tensor, apply

    generator = np.random.default_rng(0)
    for kind, gates, hidden in (("lstm", 4, 128), ("gru", 3, 64)):
        arrays = [generator.standard_normal(s).astype(np.float32) * 0.3
                  for s in ((64, 50, 32), (32, gates * hidden), (hidden, gates * hidden),
                            (gates * hidden,), (gates * hidden,))]
        lengths = Tensor(generator.integers(25, 51, 64))

        def backward(on: bool) -> tuple[float, float]:
            tensors = [Tensor(a, requires_grad=True) for a in arrays]
            with compiled(on):
                started = time.process_time()
                y, *_ = apply(kind, *tensors, lengths, reverse=0)
                loss = (y * y).sum()
                middle = time.process_time()
                loss.backward()
                return middle - started, time.process_time() - middle

        times: dict[bool, list[tuple[float, float]]] = {True: [], False: []}
        with threadpool_limits(1, user_api="blas"):
            for warm in range(2):
                backward(True), backward(False)
            for _ in range(rounds):
                for on in (True, False):
                    times[on].append(backward(on))
        for on in (True, False):
            line = f"{kind}  {'numba' if on else 'numpy'}"
            for part, label in ((0, "forward"), (1, "backward")):
                ms = sorted(t[part] * 1e3 for t in times[on])
                line += f"  {label} best {ms[0]:6.2f} median {ms[len(ms) // 2]:6.2f}"
            print(line + " ms")


def fit(rounds: int) -> None:
    import contextlib

    from deepsharp import Adam, MeanSquaredError, RandomStream, Sequential, Shape
    from deepsharp.compiled import compiled
    from deepsharp.parallel import data_parallel

    generator = np.random.default_rng(0)
    x = generator.standard_normal((64 * 16, 50, 32)).astype(np.float32)
    for row, length in enumerate(generator.integers(25, 51, len(x))):
        x[row, length:] = 0
    y = x[:, :5, :1].sum(1)
    network = (Sequential().masking(0.0).lstm(128).dense(1)
               .lower(Shape(50, 32), RandomStream(0)))

    def epoch(on: bool, split: bool) -> float:
        with compiled(on), (data_parallel(2) if split else contextlib.nullcontext()):
            started = time.perf_counter()
            network.fit(x, y, loss=MeanSquaredError(), optimizer=Adam(1e-3), batch_size=64,
                        progress=False)
            return (time.perf_counter() - started) / 16 * 1e3

    ways = [(True, True), (False, True), (True, False), (False, False)]
    times: dict[tuple[bool, bool], list[float]] = {way: [] for way in ways}
    for _ in range(rounds + 1):
        for way in ways:
            times[way].append(epoch(*way))
    for (on, split), ms in times.items():
        ms = sorted(ms[1:])
        print(f"{'numba' if on else 'numpy'}  {'data_parallel(2)' if split else 'default':16s} "
              f"best {ms[0]:6.2f}  median {ms[len(ms) // 2]:6.2f} ms a step")


if __name__ == "__main__":
    numbers = [int(a) for a in sys.argv[1:] if a.isdigit()]
    (fit if "--fit" in sys.argv else main)(numbers[0] if numbers else 30)
