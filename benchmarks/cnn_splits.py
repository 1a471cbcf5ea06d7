"""The CNN benchmark's deepsharp step three ways, interleaved in one process: one thread,
`data_parallel(2)` splitting batches, and `data_parallel(2, split="kernels")`.

    .venv/bin/python benchmarks/cnn_splits.py [rounds]

Wall time per step (ms) of one epoch (30 steps of 64) per round, BLAS at 1 thread throughout. A
round in which other processes used more than OTHERS of a core meanwhile (from /proc/stat) is
counted as busy and left out of the best and the median. The CNN and its data are
bench_cnn.py's; the figures are deepsharp's alone (run.py puts them beside PyTorch's).
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
OTHERS = 0.3  # of one core, on average over the round


def trainer(threads: int, split: str):
    import bench_cnn
    from deepsharp import Adam, CrossEntropy, RandomStream, Sequential, Shape
    from deepsharp.parallel import data_parallel

    network = (Sequential().conv2d(32, 3).relu().max_pool2d(2).conv2d(64, 3).relu().max_pool2d(2)
               .flatten().dense(128).relu().dense(10)).lower(Shape(28, 28, 1), RandomStream(0))
    optimizer, (x, y), seeds = Adam(1e-3), bench_cnn._data(), iter(range(1_000_000))

    def epoch() -> None:
        with data_parallel(threads, split=split):
            network.fit(x, y, loss=CrossEntropy(), optimizer=optimizer, batch_size=bench_cnn.BATCH,
                        seed=next(seeds), progress=False)

    return epoch


def main(rounds: int) -> None:
    sys.path[:0] = [str(HERE), str(HERE.parent)]
    import bench_cnn
    from side_by_side import machine_cpu
    from threadpoolctl import threadpool_limits

    ways = {"one thread": (1, "batch"), "split batch": (2, "batch"),
            "split kernels": (2, "kernels")}
    kept: dict[str, list[float]] = {name: [] for name in ways}
    busy = dict.fromkeys(ways, 0)
    with threadpool_limits(limits=1, user_api="blas"):
        epochs = {name: trainer(*way) for name, way in ways.items()}
        for epoch in epochs.values():
            epoch()  # warm up
        for _ in range(rounds):
            for name, epoch in epochs.items():
                machine, wall, cpu = machine_cpu(), time.perf_counter(), time.process_time()
                epoch()
                wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
                if machine_cpu() - machine - cpu > OTHERS * wall:
                    busy[name] += 1
                else:
                    kept[name].append(wall / bench_cnn.BATCHES * 1e3)
    for name, times in kept.items():
        best = f"{min(times):6.2f}" if times else "   nan"
        median = f"{statistics.median(times):6.2f}" if times else "   nan"
        print(f"{name:<14} best {best} median {median} ms/step  ({busy[name]} busy rounds "
              f"left out of {rounds})")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 10)
