"""A/B in one process: a benchmark's deepsharp step with the primitive rules of an older commit
against the working tree's, rounds alternating, CPU time at 1 thread (BLAS held at 1).

    .venv/bin/python benchmarks/ab_rules.py COMMIT FILE[,FILE...] [ROUNDS] [BENCH]
    # e.g. main deepsharp/tensors/ops/norm.py,deepsharp/tensors/ops/attention.py 11 transformer

The files' sources at COMMIT are run with a stand-in `primitive` decorator that collects their
rules (the registry keeps the working tree's), and each "old" round swaps them in. An old module
that imports an old helper from another listed file (self_attention.py's attend) gets the old one.
"""

from __future__ import annotations

import dataclasses
import importlib
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def old_rules(commit: str, files: list[str]) -> dict:
    """{primitive name: (forward, backward)} as the files define them at `commit`."""
    import deepsharp.tensors.primitives as primitives

    found, spaces = {}, {}

    def collect(name, **_):
        def register(namespace):
            found[name] = (namespace.forward, getattr(namespace, "backward", None))
            return namespace
        return register

    real, primitives.primitive = primitives.primitive, collect
    try:
        for path in files:
            source = subprocess.check_output(["git", "show", f"{commit}:{path}"], text=True,
                                             cwd=HERE.parent)
            spaces[path] = {"__name__": f"old:{path}"}
            exec(compile(source, path, "exec"), spaces[path])
    finally:
        primitives.primitive = real
    for space in spaces.values():  # old helpers for old callers
        for other in spaces.values():
            for name in ("attend", "attend_grad"):
                if name in other and name in space:
                    space[name] = other[name]
    return found


def main(args: list[str]) -> None:
    sys.path[:0] = [str(HERE), str(HERE.parent)]
    from threadpoolctl import threadpool_limits

    import deepsharp.tensors.primitives as primitives

    commit, files = args[0], args[1].split(",")
    rounds = int(args[2]) if len(args) > 2 else 7
    bench = importlib.import_module(f"bench_{args[3] if len(args) > 3 else 'transformer'}")
    table = primitives.PRIMITIVES
    old = {name: dataclasses.replace(table[name], forward=f, backward=b)
           for name, (f, b) in old_rules(commit, files).items()}
    new = {name: table[name] for name in old}
    times: dict[str, list[float]] = {"old": [], "new": []}
    with threadpool_limits(limits=1, user_api="blas"):
        train = bench.deepsharp_epoch(1)
        for rules in (old, new):  # warm up both
            table.update(rules)
            train()
        for turn in range(rounds):
            for label in ("old", "new") if turn % 2 else ("new", "old"):
                table.update(old if label == "old" else new)
                started = time.process_time()
                train()
                times[label].append((time.process_time() - started) / bench.BATCHES * 1e3)
        table.update(new)
    for label, values in times.items():
        print(f"{label}: best {min(values):.2f}, median {statistics.median(values):.2f} ms a step")
    print(f"new / old: best {min(times['new']) / min(times['old']):.3f}, median "
          f"{statistics.median(times['new']) / statistics.median(times['old']):.3f}")


if __name__ == "__main__":
    main(sys.argv[1:])
