"""The masked (variable-length) LSTM's and GRU's backward pass, with and without `compiled()`:
CPU time at one BLAS thread, rounds alternating in one process.

    .venv/bin/python benchmarks/masked_steps_back.py [rounds]

The benchmarks' recurrent shapes (50 steps x 32 inputs, batch 64; LSTM 128, GRU 64), each series
25-50 steps long. With lengths the whole-sequence kernels stay off: each step back runs its
compiled step kernel and then numpy's masking (deepsharp/tensors/ops/recurrent.py).
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

        def backward(on: bool) -> float:
            tensors = [Tensor(a, requires_grad=True) for a in arrays]
            with compiled(on):
                y, *_ = apply(kind, *tensors, lengths, reverse=0)
                loss = (y * y).sum()
                started = time.process_time()
                loss.backward()
                return time.process_time() - started

        times: dict[bool, list[float]] = {True: [], False: []}
        with threadpool_limits(1, user_api="blas"):
            for warm in range(2):
                backward(True), backward(False)
            for _ in range(rounds):
                for on in (True, False):
                    times[on].append(backward(on))
        for on in (True, False):
            ms = sorted(t * 1e3 for t in times[on])
            print(f"{kind}  {'numba' if on else 'numpy'}  backward best {ms[0]:6.2f}  "
                  f"median {ms[len(ms) // 2]:6.2f} ms")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 30)
