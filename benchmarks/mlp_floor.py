"""The MLP benchmark's floor: `network.fit` against the same step written by hand in numpy (the
same products, cross-entropy, accuracy and Adam passes, with no tape, no fit loop and no
checks), the hand step without Adam, and PyTorch's fused Adam, epochs interleaved in one
process at 1 thread (CPU ms per step, best and median of the rounds).

    .venv/bin/python benchmarks/mlp_floor.py [rounds]

What it says: numpy's arithmetic alone against PyTorch's best, and what the framework's own work
per step (tape, fit loop, checks, bookkeeping) costs on top of it.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parents[1])]


def hand_epoch(x: np.ndarray, y: np.ndarray, batch: int = 128):
    """One epoch of the 784-256-256-10 step in plain numpy, as a function `epoch(adam=True)`
    (`adam=False` leaves Adam out)."""
    from deepsharp.optimizers import _adam_numpy

    generator = np.random.default_rng(0)
    sizes = [(784, 256), (256,), (256, 256), (256,), (256, 10), (10,)]
    params = [generator.standard_normal(s).astype(np.float32) * 0.05 for s in sizes]
    total = sum(p.size for p in params)
    m, v, work = (np.zeros(total, np.float32) for _ in range(3))
    steps, losses, hits = [0], [], []
    ends = np.cumsum([p.size for p in params])

    def views(buffer: np.ndarray) -> list[np.ndarray]:
        """Each parameter's place in a flat buffer (as Adam's flat moments hold them)."""
        return [part.reshape(p.shape) for part, p in zip(np.split(buffer, ends[:-1]), params)]

    updates = views(work)

    def step(index: np.ndarray, adam: bool) -> None:
        w1, b1, w2, b2, w3, b3 = params
        xb, yb = x[index], y[index]
        h1 = xb @ w1
        h1 += b1
        np.maximum(h1, 0, out=h1)
        h2 = h1 @ w2
        h2 += b2
        np.maximum(h2, 0, out=h2)
        z = h2 @ w3
        z += b3
        shifted = z - z.max(axis=-1, keepdims=True)
        e = np.exp(shifted)
        norm = e.sum(axis=-1, keepdims=True)
        rows = np.arange(len(index))
        losses.append(-(shifted - np.log(norm))[rows, yb].mean())
        p = e / norm
        hits.append(int((np.argmax(p, axis=1) == yb).sum()))  # (the fit loop keeps both)
        p[rows, yb] -= 1
        gz = p / len(index)
        grad = np.empty(total, np.float32)  # a new buffer each step, as the fit loop's
        places = views(grad)
        np.matmul(h2.T, gz, out=places[4])
        gz.sum(axis=0, out=places[5])
        g2 = (gz @ w3.T) * (h2 > 0)
        np.matmul(h1.T, g2, out=places[2])
        g2.sum(axis=0, out=places[3])
        g1 = (g2 @ w2.T) * (h1 > 0)
        np.matmul(xb.T, g1, out=places[0])
        g1.sum(axis=0, out=places[1])
        if adam:
            steps[0] += 1
            _adam_numpy(grad, m, v, work, 0.9, 0.999, float(steps[0]), 1e-3, 1e-8)
            for q, update in zip(params, updates):
                q -= update

    def epoch(adam: bool = True) -> None:
        order = generator.permutation(len(x))
        for start in range(0, len(x), batch):
            step(order[start:start + batch], adam)

    return epoch


def main(rounds: int) -> None:
    import torch
    from threadpoolctl import threadpool_limits

    import bench_mlp
    from side_by_side import cpu_rounds, print_rounds

    torch.set_num_threads(1)
    with threadpool_limits(limits=1, user_api="blas"):
        x, y = bench_mlp._data()
        hand = hand_epoch(x, y)
        runs = {"network.fit": bench_mlp.deepsharp_epoch(1), "numpy by hand": hand,
                "numpy by hand, no Adam": lambda: hand(False),
                "PyTorch, fused Adam": bench_mlp.torch_epoch(True)}
        times = cpu_rounds(runs, rounds, bench_mlp.BATCHES)
    print_rounds(times)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 8)
