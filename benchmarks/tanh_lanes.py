"""The compiled tanh's loops (deepsharp/_tanh32.py: by 16 lanes with AVX-512, by 8 with AVX2, the
plain loop) beside np.tanh on this CPU: CPU time per value over 32,768 float32 values (a step's
gates in the LSTM benchmark), best of 7 rounds of 2,000 calls. Needs numba.

    .venv/bin/python benchmarks/tanh_lanes.py
"""

from __future__ import annotations

import time

import numpy as np


def _best(call, x: np.ndarray, calls: int = 2000) -> float:
    call()
    rounds = []
    for _ in range(7):
        started = time.process_time()
        for _ in range(calls):
            call()
        rounds.append((time.process_time() - started) / calls / x.size * 1e9)
    return min(rounds)


def main() -> None:
    from deepsharp._tanh32 import loops

    x = np.random.default_rng(0).standard_normal(64 * 128 * 4).astype(np.float32) * 2
    out = np.empty_like(x)
    for name, loop in loops().items():
        print(f"{name:8s} {_best(lambda: loop(x, out, x.size), x):.2f} ns a value")
    print(f"np.tanh  {_best(lambda: np.tanh(x, out=out), x):.2f} ns a value")


if __name__ == "__main__":
    main()
