"""The LSTM benchmark's floor: the products of one training step alone, by numpy's BLAS at 1
thread, against `network.fit`'s whole step (numpy and numba) and PyTorch's whole step (its
default, which runs the LSTM through oneDNN, and with oneDNN turned off), epochs interleaved in
one process (CPU ms per step, best and median of the rounds).

    .venv/bin/python benchmarks/lstm_floor.py [rounds]
    env -u OPENBLAS_CORETYPE .venv/bin/python benchmarks/lstm_floor.py   # OpenBLAS's own kernels

The products are every matrix product `Lstm.forward` and `Lstm.backward` make for the
benchmark's step (50 steps x 32 features, 128 units, batch 64; the network's input needs no
gradient, so there is no input-gradient product): the input's share of the gates (3200 x 32 x
512), one state product a step (64 x 128 x 512, 50 of them: the one from the zero state is made
too), one product a step back through time (64 x 512 x 128), and the two kernels'
gradients (32 x 3200 x 512 and 128 x 3136 x 512). What it says: whether numpy's products alone
fit inside the time the issue's target leaves (PyTorch's default step / 0.85), whatever the
elementwise work and the framework cost.
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import numpy as np

sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parents[1])]

TARGET = 0.85  # issue 14's LSTM target: deepsharp's speed over PyTorch's faster variant


def products_step(steps: int = 50, batch: int = 64, features: int = 32, units: int = 128):
    """One training step's products, as `Lstm.forward` and `Lstm.backward` make them."""
    generator = np.random.default_rng(0)

    def normal(*shape: int) -> np.ndarray:
        return generator.standard_normal(shape, dtype=np.float32)

    width = 4 * units
    x, w_ih, w_hh = normal(steps * batch, features), normal(features, width), normal(units, width)
    w_hh_t = np.ascontiguousarray(w_hh.T)
    states, dgates = normal(steps, batch, units), normal(steps, batch, width)
    gates, dh = np.empty((steps * batch, width), np.float32), np.empty((batch, units), np.float32)
    step_out = np.empty((batch, width), np.float32)
    dw_ih, dw_hh = np.empty((features, width), np.float32), np.empty((units, width), np.float32)
    before, after = states[:-1].reshape(-1, units), dgates[1:].reshape(-1, width)

    def step() -> None:
        np.matmul(x, w_ih, out=gates)                   # the input's share, every step at once
        for t in range(steps):
            np.matmul(states[t], w_hh, out=step_out)    # h @ W_hh, a step
        for t in range(steps):
            np.matmul(dgates[t], w_hh_t, out=dh)        # back through time, a step
        np.matmul(x.T, dgates.reshape(-1, width), out=dw_ih)
        np.matmul(before.T, after, out=dw_hh)

    return step


def main(rounds: int) -> None:
    import torch
    from threadpoolctl import threadpool_info, threadpool_limits

    import bench_lstm
    from side_by_side import cpu_rounds, print_rounds
    from deepsharp.compiled import available, compiled

    torch.set_num_threads(1)
    kernels = [i.get("architecture") for i in threadpool_info() if i["user_api"] == "blas"]
    print(f"numpy's BLAS kernels: {kernels}; torch {torch.__version__}, oneDNN "
          f"{torch.backends.mkldnn.is_available()}")
    with threadpool_limits(limits=1, user_api="blas"):
        products = products_step()
        fit = bench_lstm.deepsharp_epoch(1)
        with compiled():
            fit_compiled = bench_lstm.deepsharp_epoch(1) if available() else None
        default = bench_lstm.torch_epoch(False)

        def numba_epoch() -> None:
            with compiled():
                fit_compiled()

        def without_onednn() -> None:
            with warnings.catch_warnings():  # (the flags' TF32 note on Intel GPUs: none here)
                warnings.simplefilter("ignore", UserWarning)
                with torch.backends.mkldnn.flags(enabled=False):
                    default()

        runs = {"numpy's products alone": lambda: [products() for _ in range(bench_lstm.BATCHES)],
                "network.fit (numpy)": fit, "network.fit (numba)": numba_epoch,
                "PyTorch (oneDNN LSTM)": default, "PyTorch, oneDNN off": without_onednn}
        if fit_compiled is None:
            del runs["network.fit (numba)"]
        times = cpu_rounds(runs, rounds, bench_lstm.BATCHES)
    print_rounds(times)
    budget = times["PyTorch (oneDNN LSTM)"][0] / TARGET
    print(f"the target's budget (PyTorch's default, best round / {TARGET}): {budget:.2f} ms a "
          f"step; numpy's products alone take {times[next(iter(times))][0] / budget:.2f} of it")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 8)
