"""What a second core gives numpy on this machine: the same work on one Python thread and split
over two (numpy's BLAS at 1 thread each), wall time, best of several repeats.

    .venv/bin/python benchmarks/two_cores.py

- **elementwise**: `np.add(a, b, out=c)` over float32 arrays of each size, as many calls as make
  about 0.2 s on one thread; two threads make half the calls each, on arrays of their own. numpy
  releases the GIL inside each call (but the smallest) and takes it back after: between the calls
  the two threads take turns at the GIL, and a thread that waits for it sleeps until woken.
- **copy**: a strided copy (a channels-first turn of a 64 x 26 x 26 x 32 batch, 5.5 MB).
- **product**: a float32 product (2704 x 288) @ (288 x 64), 100 MFLOP.
- **hand-off**: one round trip to deepsharp's worker thread (deepsharp.tensors.ops.two_threads),
  a job that does nothing: the fixed cost of each split a kernel makes; back to back (best of
  the repeats' means), then the median and 90th percentile of 300 trips each made after 0, 0.2,
  1 and 5 ms of numpy work on the caller (passes over a 1 MB array) while the worker sat idle.
  Its core goes idle meanwhile, and waking it costs more the longer it slept: the reason a
  kernel split pays less than its halves' own figures say.

The gain is one thread's time over two threads' for the same work (2: both cores fully used;
below 1: two threads are slower than one).
"""

from __future__ import annotations

import statistics
import sys
import threading
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
REPEATS = 5


def _best(fn) -> float:
    best = float("inf")
    for _ in range(REPEATS):
        started = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - started)
    return best


def gain(make_call, calls: int) -> tuple[float, float]:
    """(ms on one thread, one thread's time over two threads') for `calls` calls: one thread
    makes them all on one set of arrays, or two threads half each, on a set each."""
    mine, theirs = make_call(), make_call()

    def run(call, count):
        for _ in range(count):
            call()

    def one():
        run(mine, calls // 2)
        run(theirs, calls - calls // 2)

    def two():
        other = threading.Thread(target=run, args=(theirs, calls - calls // 2))
        other.start()
        run(mine, calls // 2)
        other.join()

    alone, both = _best(one), _best(two)
    return alone * 1e3, alone / both


def _add(size: int):
    def make():
        a, b, out = (np.random.default_rng(0).standard_normal(size).astype(np.float32)
                     for _ in range(3))
        return lambda: np.add(a, b, out=out)
    return make


def _turn():
    x = np.random.default_rng(0).standard_normal((64, 26, 26, 32)).astype(np.float32)
    return lambda: np.ascontiguousarray(x.transpose(0, 3, 1, 2))


def _product():
    generator = np.random.default_rng(0)
    a = generator.standard_normal((2704, 288)).astype(np.float32)
    b = generator.standard_normal((288, 64)).astype(np.float32)
    return lambda: a @ b


def _bytes(n: int) -> str:
    return f"{n / 2**20:g} MB" if n >= 2**20 else f"{n / 2**10:g} KB"


def hand_off_us(count: int = 2000) -> float:
    from deepsharp.tensors.ops.two_threads import on_worker

    def trips():
        for _ in range(count):
            on_worker(lambda: None).result()

    return _best(trips) / count * 1e6


def hand_off_after(gap_ms: float, trips: int = 300) -> tuple[float, float]:
    """(median, 90th percentile) us of a round trip to the worker made after `gap_ms` of numpy
    work on the caller, the worker idle meanwhile."""
    from deepsharp.tensors.ops.two_threads import on_worker

    values = np.ones(1 << 18, np.float32)
    found = []
    for _ in range(trips):
        end = time.perf_counter() + gap_ms / 1e3
        while time.perf_counter() < end:
            np.multiply(values, 1.0001, out=values)
        started = time.perf_counter()
        on_worker(lambda: None).result()
        found.append(time.perf_counter() - started)
    found.sort()
    return statistics.median(found) * 1e6, found[int(trips * 0.9)] * 1e6


def main() -> None:
    sys.path.insert(0, str(HERE.parent))
    from threadpoolctl import threadpool_limits

    rows = []
    with threadpool_limits(limits=1, user_api="blas"):
        for size in (2 << 10, 25 << 10, 100 << 10, 256 << 10, 1 << 20, 1400 << 10, 4 << 20,
                     16 << 20):
            calls = max(12, int(3e8 / size))  # about 0.2 s on one thread
            rows.append((f"elementwise, 3 arrays of {_bytes(size * 4)} each", calls,
                         *gain(_add(size), calls)))
        rows.append(("copy, a 5.5 MB channels-first turn", 400, *gain(_turn, 400)))
        rows.append(("product (2704 x 288) @ (288 x 64)", 400, *gain(_product, 400)))
        trip = hand_off_us()
        after = [(gap, *hand_off_after(gap)) for gap in (0.0, 0.2, 1.0, 5.0)]
    print(f"{'work':45s} {'calls':>6s} {'1 thread ms':>12s} {'gain of 2':>10s}")
    for label, calls, alone, ratio in rows:
        print(f"{label:45s} {calls:6d} {alone:12.1f} {ratio:10.2f}")
    print(f"hand-off to deepsharp's worker and back: {trip:.1f} us a round trip")
    for gap, median, tenth in after:
        print(f"  after {gap:3.1f} ms of numpy work on the caller: median {median:4.0f} us, "
              f"90th percentile {tenth:4.0f} us")


if __name__ == "__main__":
    main()
