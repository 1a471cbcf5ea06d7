"""What a hand-off to `data_parallel(2)`'s worker thread costs, by what the calling thread did
just before: a job that does nothing handed over and waited for (`two_threads.on_worker(...)
.result()`), back to back, and after 0.2, 1 and 5 ms of numpy work on the caller (passes over a
1 MB array), during which the worker sat idle. Median and 90th percentile of 300 round trips.

    .venv/bin/python benchmarks/hand_off.py

On this machine the worker's core goes idle when it has nothing to do, and waking it costs more
the longer it slept: the reason a kernel split pays less than its halves' own figures say.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from deepsharp.tensors.ops import two_threads  # noqa: E402

TRIPS = 300


def _nothing(_) -> None:
    return None


def main() -> None:
    values = np.ones(1 << 18, np.float32)

    def numpy_work(ms: float) -> None:
        end = time.perf_counter() + ms / 1e3
        while time.perf_counter() < end:
            np.multiply(values, 1.0001, out=values)

    for gap in (0.0, 0.2, 1.0, 5.0):
        trips = []
        for _ in range(TRIPS):
            if gap:
                numpy_work(gap)
            started = time.perf_counter()
            two_threads.on_worker(_nothing, None).result()
            trips.append(time.perf_counter() - started)
        trips.sort()
        print(f"after {gap:3.1f} ms of numpy work: median {statistics.median(trips) * 1e6:4.0f} us,"
              f" 90th percentile {trips[int(TRIPS * 0.9)] * 1e6:4.0f} us")


if __name__ == "__main__":
    main()
