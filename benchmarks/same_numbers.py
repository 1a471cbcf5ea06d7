"""Bit-identity of two checkouts' training: each benchmark's network trained the way the benchmark
trains it (one `fit` call an epoch, Adam kept across calls) and once more with validation and
metrics, in a process per checkout; every weight, Adam state array and History number compared
exactly (`np.array_equal` on the arrays, equal float bits for the history).

    .venv/bin/python benchmarks/same_numbers.py TREE_A TREE_B [BENCH ...]
    # e.g. /work/main /work/mlp3 mlp cnn lstm gru transformer
"""

from __future__ import annotations

import importlib
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
BENCHES = ("mlp", "cnn", "lstm", "gru", "transformer")


def train(bench: str, out: str) -> None:
    """(in the checkout's process) Train and save everything to `out` (an .npz)."""
    from threadpoolctl import threadpool_limits

    import side_by_side

    made = {}
    side_by_side.deepsharp_trainer = lambda network, loss, x, y, batch, threads, **_: made.update(
        network=network, loss=loss, x=x, y=y, batch=batch)
    module = importlib.import_module(f"bench_{bench}")
    from deepsharp import Adam
    from deepsharp.compiled import available, compiled

    saved: dict[str, np.ndarray] = {}
    ways = [("numpy", None)] + ([("numba", compiled)] if bench == "mlp" and available() else [])
    with threadpool_limits(limits=1, user_api="blas"):
        for way, context in ways:
            module.deepsharp_epoch(1)
            network, loss, x, y, batch = (made[k] for k in ("network", "loss", "x", "y", "batch"))
            optimizer = Adam(1e-3)
            histories = []
            for seed in range(2):  # the benchmark's way: one fit call an epoch
                with context() if context else _nothing():
                    histories.append(network.fit(x, y, loss=loss, optimizer=optimizer,
                                                 batch_size=batch, seed=seed, progress=False))
            metrics = ["accuracy"] if type(loss).__name__ == "CrossEntropy" else ["mae"]
            histories.append(network.fit(x, y, loss=loss, optimizer=optimizer, batch_size=batch,
                                         epochs=2, validation_split=0.2, metrics=metrics,
                                         seed=5, progress=False))
            for path, value in network.state_dict().items():
                saved[f"{way}/weight/{path}"] = value
            for path, value in optimizer.state_arrays().items():
                saved[f"{way}/adam/{path}"] = np.asarray(value)
            for h, history in enumerate(histories):
                for e, logs in enumerate(history):
                    for key, value in logs.items():
                        if key != "seconds":
                            saved[f"{way}/history/{h}/{e}/{key}"] = np.float64(value)
    np.savez(out, **saved)


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *args):
        return False


def main(args: list[str]) -> int:
    a, b, benches = args[0], args[1], args[2:] or BENCHES
    failed = 0
    with tempfile.TemporaryDirectory() as folder:
        for bench in benches:
            found = []
            for k, tree in enumerate((a, b)):
                out = f"{folder}/{bench}{k}.npz"
                code = (f"import sys; sys.path[:0] = [{str(HERE)!r}, {tree!r}]; "
                        f"import same_numbers; same_numbers.train({bench!r}, {out!r})")
                subprocess.run([sys.executable, "-c", code], check=True)
                found.append(np.load(out))
            first, second = found
            keys = sorted(set(first.files) | set(second.files))
            wrong = [k for k in keys if k not in first.files or k not in second.files
                     or first[k].dtype != second[k].dtype
                     or not np.array_equal(first[k].reshape(-1).view(np.uint8), second[k].reshape(-1).view(np.uint8))]
            failed += bool(wrong)
            print(f"{bench}: {len(keys)} arrays and numbers, "
                  f"{'all bit for bit the same' if not wrong else f'{len(wrong)} differ: {wrong[:5]}'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
