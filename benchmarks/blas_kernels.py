"""numpy's BLAS at the benchmarks' product shapes, at 1 thread: GFLOP/s of the kernels OpenBLAS
chose here (its `architecture`, which the environment can pin: OPENBLAS_CORETYPE), and numpy's
float32 tanh, so that two kernel choices can be compared on one CPU; PyTorch's products beside
them where it is installed (its own MKL, which OPENBLAS_CORETYPE does not touch).

    .venv/bin/python benchmarks/blas_kernels.py
    env -u OPENBLAS_CORETYPE .venv/bin/python benchmarks/blas_kernels.py   # OpenBLAS's own pick
    OPENBLAS_CORETYPE=SkylakeX .venv/bin/python benchmarks/blas_kernels.py
"""

from __future__ import annotations

import os
import time

import numpy as np
from threadpoolctl import threadpool_info, threadpool_limits

# (rows, inner, columns): the LSTM's step product and its backward, the CNN's first and second
# blocks' products and its dense layer, the MLP's first layer
SHAPES = [(64, 128, 512), (64, 512, 128), (10816, 9, 32), (2048, 288, 64), (64, 1600, 128),
          (128, 784, 256)]


def best_seconds(run, repeats: int, rounds: int = 5, clock=time.process_time) -> float:
    """The best of `rounds` rounds of `repeats` calls of run, seconds a call by `clock`."""
    best = float("inf")
    for _ in range(rounds):
        started = clock()
        for _ in range(repeats):
            run()
        best = min(best, (clock() - started) / repeats)
    return best


def main() -> None:
    generator = np.random.default_rng(0)
    kernels = [i.get("architecture") for i in threadpool_info() if i["user_api"] == "blas"]
    print(f"OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE', '(not set)')}: "
          f"kernels {kernels}")
    try:
        import torch

        torch.set_num_threads(1)
    except ImportError:
        torch = None
    with threadpool_limits(1, user_api="blas"):
        for m, k, n in SHAPES:
            a = generator.standard_normal((m, k), dtype=np.float32)
            b = generator.standard_normal((k, n), dtype=np.float32)
            c, flops, repeats = a @ b, 2 * m * k * n, max(3, int(2e8 / (2 * m * k * n)))
            ours = flops / best_seconds(lambda: np.matmul(a, b, out=c), repeats) / 1e9
            line = f"  {m:6d} x {k:4d} x {n:4d}: numpy {ours:6.0f} GFLOP/s"
            if torch is not None:
                ta, tb, tc = (torch.from_numpy(v) for v in (a, b, c))
                theirs = flops / best_seconds(lambda: torch.matmul(ta, tb, out=tc), repeats) / 1e9
                line += f", torch {theirs:6.0f}"
            print(line)
        x = generator.standard_normal(64 * 512, dtype=np.float32)
        seconds = best_seconds(lambda: np.tanh(x, x), 2000)
        print(f"  np.tanh float32: {seconds / x.size * 1e9:.2f} ns a value")


if __name__ == "__main__":
    main()
