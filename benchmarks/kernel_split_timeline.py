"""Where the CNN's step waits inside `data_parallel(2, split="kernels")`: each primitive's span on
the calling thread, the worker's jobs (by the function that handed them over), and how long the
worker sat idle inside each span; the best (shortest) of several epochs, wall time.

    .venv/bin/python benchmarks/kernel_split_timeline.py [epochs]

The calling thread is the step's critical path: the worker's idle time inside a span is what a
better split of that span could win, and "outside primitives" is the fit loop's and the replay's
own Python, which runs on the caller alone.
"""

from __future__ import annotations

import dataclasses
import sys
import threading
import time
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main(epochs: int) -> None:
    sys.path[:0] = [str(HERE), str(HERE.parent)]
    import bench_cnn
    from threadpoolctl import threadpool_limits

    from deepsharp import optimizers
    from deepsharp.tensors.ops import two_threads
    from deepsharp.tensors.primitives import PRIMITIVES

    events: list[tuple[str, str, float, float]] = []  # (thread, label, start, stop)

    def timed(label, fn):
        def run(*args, **attrs):
            caller = threading.current_thread() is threading.main_thread()
            started = time.perf_counter()
            try:
                return fn(*args, **attrs)
            finally:
                events.append(("caller" if caller else "worker", label, started,
                               time.perf_counter()))
        return run

    handed = two_threads.on_worker

    def on_worker(fn, *args):
        label = f"{sys._getframe(1).f_code.co_name} < {sys._getframe(2).f_code.co_name}"
        return handed(timed(label, fn), *args)

    saved = dict(PRIMITIVES)
    step = optimizers.Adam.step
    with threadpool_limits(limits=1, user_api="blas"):
        train = bench_cnn.deepsharp_epoch(2)
        train()
        for name, prim in saved.items():
            PRIMITIVES[name] = dataclasses.replace(
                prim, forward=timed(f"{name} forward", prim.forward),
                backward=prim.backward and timed(f"{name} backward", prim.backward))
        optimizers.Adam.step = timed("Adam.step", step)
        two_threads.on_worker = on_worker
        try:
            best = None
            for _ in range(epochs):
                events.clear()
                started = time.perf_counter()
                train()
                wall = time.perf_counter() - started
                if best is None or wall < best[0]:
                    best = (wall, list(events))
        finally:
            PRIMITIVES.update(saved)
            optimizers.Adam.step, two_threads.on_worker = step, handed
    _report(*best, bench_cnn.BATCHES)


def _report(wall: float, events: list, steps: int) -> None:
    worker = sorted((a, b) for who, _, a, b in events if who == "worker")

    def busy(start: float, stop: float) -> float:
        return sum(max(0.0, min(stop, b) - max(start, a)) for a, b in worker)

    spans, idle, jobs = defaultdict(float), defaultdict(float), defaultdict(float)
    for who, label, a, b in events:
        if who == "caller":
            spans[label] += b - a
            idle[label] += (b - a) - busy(a, b)
        else:
            jobs[label] += b - a
    ms = 1e3 / steps
    print(f"wall {wall * ms:.2f} ms a step (best of the epochs)")
    print("caller's spans                              span  worker idle within (ms a step)")
    for label in sorted(spans, key=lambda k: -spans[k]):
        print(f"  {label:40s} {spans[label] * ms:6.2f} {idle[label] * ms:6.2f}")
    print(f"  {'outside primitives':40s} {(wall - sum(spans.values())) * ms:6.2f}")
    print("worker's jobs (handed over by)")
    for label in sorted(jobs, key=lambda k: -jobs[k]):
        print(f"  {label:40s} {jobs[label] * ms:6.2f}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 6)
