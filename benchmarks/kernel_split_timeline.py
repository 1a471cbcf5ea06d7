"""Where the CNN's step waits inside `data_parallel(2, split="kernels")`: each primitive's span on
the calling thread, the worker's jobs (by the function that handed them over), and how long the
worker sat idle inside each span; the best (shortest) of several epochs, wall time.

    .venv/bin/python benchmarks/kernel_split_timeline.py [epochs] [--threads 1] [--compiled]

(`--threads 1`: the same spans at one thread, outside the split, to set beside them; the spans
include the conv block's parts: its im2col, product, max and the Winograd passes, and
`_cblas.matmul`: the first block's kernel gradient, the one product its backward runs on the
caller, with Adam's deferred part on the worker beside it.)

The calling thread is the step's critical path: the worker's idle time inside a span is what a
better split of that span could win, and "outside primitives" is the fit loop's and the replay's
own Python, which runs on the caller alone.
"""

from __future__ import annotations

import sys
import threading
import time
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main(epochs: int, threads: int = 2, numba: bool = False) -> None:
    sys.path[:0] = [str(HERE), str(HERE.parent)]
    import contextlib

    import bench_cnn
    from profile_steps import primitives_wrapped
    from threadpoolctl import threadpool_limits

    from deepsharp import _cblas, optimizers
    from deepsharp.compiled import compiled
    from deepsharp.tensors.ops import conv_pool, two_threads, winograd

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

    step = optimizers.Adam.step
    parts = [(conv_pool, n) for n in ("_pool_ordered_cols", "_product", "_max_bias_relu")] + [
        (winograd, n) for n in ("forward", "backward")] + [(_cblas, "matmul")]
    kept = [getattr(module, n) for module, n in parts]
    with threadpool_limits(limits=1, user_api="blas"), \
            (compiled() if numba else contextlib.nullcontext()):
        train = bench_cnn.deepsharp_epoch(threads)
        train()
        for (module, n), fn in zip(parts, kept):
            setattr(module, n, timed(f"  (part) {module.__name__.rsplit('.', 1)[-1]}.{n}", fn))
        optimizers.Adam.step = timed("Adam.step", step)
        two_threads.on_worker = on_worker
        try:
            with primitives_wrapped(timed):
                best = None
                for _ in range(epochs):
                    events.clear()
                    started = time.perf_counter()
                    train()
                    wall = time.perf_counter() - started
                    if best is None or wall < best[0]:
                        best = (wall, list(events))
        finally:
            optimizers.Adam.step, two_threads.on_worker = step, handed
            for (module, n), fn in zip(parts, kept):
                setattr(module, n, fn)
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
    inside = sum(t for label, t in spans.items() if not label.startswith("  (part)"))
    print(f"  {'outside primitives':40s} {(wall - inside) * ms:6.2f}")
    print("worker's jobs (handed over by)")
    for label in sorted(jobs, key=lambda k: -jobs[k]):
        print(f"  {label:40s} {jobs[label] * ms:6.2f}")


if __name__ == "__main__":
    args = sys.argv[1:]
    threads = int(args[args.index("--threads") + 1]) if "--threads" in args else 2
    numbers = [a for i, a in enumerate(args) if a.isdigit() and args[i - 1:i] != ["--threads"]]
    main(int(numbers[0]) if numbers else 6, threads, "--compiled" in args)
