"""Where a deepsharp training step's time goes: CPU time per primitive (forward and backward),
the optimizer, and the rest (Python, autograd, the fit loop), at 1 thread.

    .venv/bin/python benchmarks/profile_steps.py [name ...] [--compiled] [--wall2]

Every primitive's forward and backward rule is wrapped with a CPU-time counter for two epochs of
each benchmark (after one warm-up epoch); figures are milliseconds per step. numpy's BLAS is held
at 1 thread; with `--compiled`, inside `deepsharp.compiled.compiled()`; with `--wall2`, wall time
with numpy's BLAS at 2 threads instead (numpy's default on this machine: where a step's time goes
when only BLAS uses the second core).
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import sys
import time
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent


@contextlib.contextmanager
def counted(totals: dict[str, float], clock=time.process_time):
    """Every primitive rule and the optimizer's step, timed into `totals` (seconds of `clock`)."""
    from deepsharp import optimizers

    def timed(label, fn):
        def run(*args, **kwargs):
            started = clock()
            try:
                return fn(*args, **kwargs)
            finally:
                totals[label] += clock() - started
        return run

    step = optimizers.Optimizer.step, optimizers.Adam.step
    optimizers.Optimizer.step = timed("optimizer", step[0])
    optimizers.Adam.step = timed("optimizer", step[1])
    try:
        with primitives_wrapped(timed):
            yield
    finally:
        optimizers.Optimizer.step, optimizers.Adam.step = step


@contextlib.contextmanager
def primitives_wrapped(wrap):
    """Every primitive's forward and backward rule replaced by `wrap(label, rule)` for the
    duration ("NAME forward", "NAME backward"), put back after (kernel_split_timeline.py too)."""
    from deepsharp.tensors.primitives import PRIMITIVES

    saved = dict(PRIMITIVES)
    for name, prim in saved.items():
        PRIMITIVES[name] = dataclasses.replace(
            prim, forward=wrap(f"{name} forward", prim.forward),
            backward=prim.backward and wrap(f"{name} backward", prim.backward))
    try:
        yield
    finally:
        PRIMITIVES.update(saved)


def profile(name: str, compiled: bool, wall2: bool = False) -> list[tuple[str, float]]:
    """(label, ms per step) rows, largest first, ending with the rest and the whole step."""
    from threadpoolctl import threadpool_limits

    from deepsharp.compiled import compiled as compiled_kernels

    module = importlib.import_module(f"bench_{name}")
    totals: dict[str, float] = defaultdict(float)
    clock = time.perf_counter if wall2 else time.process_time
    with threadpool_limits(limits=2 if wall2 else 1, user_api="blas"), compiled_kernels(compiled):
        epoch = module.deepsharp_epoch(1)
        epoch()
        with counted(totals, clock):
            started = clock()
            epoch()
            epoch()
            whole = clock() - started
    steps = 2 * module.BATCHES
    rows = sorted(((label, t / steps * 1e3) for label, t in totals.items()), key=lambda r: -r[1])
    rest = whole / steps * 1e3 - sum(t for _, t in rows)
    return rows + [("the rest (Python, autograd, fit loop)", rest),
                   ("whole step", whole / steps * 1e3)]


def main(args: list[str]) -> None:
    sys.path[:0] = [str(HERE), str(HERE.parent)]
    compiled, wall2 = "--compiled" in args, "--wall2" in args
    names = [a for a in args if not a.startswith("--")] or [
        p.stem[len("bench_"):] for p in sorted(HERE.glob("bench_*.py"))
        if hasattr(importlib.import_module(p.stem), "deepsharp_epoch")]
    for name in names:
        measure = "wall time, BLAS at 2 threads" if wall2 else "CPU time at 1 thread"
        print(f"== {name}: ms per step, {measure}{' (compiled)' if compiled else ''}")
        rows = profile(name, compiled, wall2)
        for label, ms in rows:
            if ms >= 0.05 or label.startswith(("the rest", "whole")):
                print(f"  {label:<40}{ms:>8.2f}")


if __name__ == "__main__":
    main(sys.argv[1:])
