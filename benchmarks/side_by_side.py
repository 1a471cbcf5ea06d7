"""Time deepsharp and PyTorch side by side, two ways, over interleaved rounds.

Each benchmark gives its trainer factories: deepsharp (`fit`, the path a user takes, numpy
only), deepsharp with its optional compiled kernels (`compiled()`, numba), both again inside
`data_parallel(2)` (at 2 threads only), PyTorch's default (the usual loop, `torch.optim.Adam`) and
PyTorch's best variant (fused Adam, and channels_last for a CNN). Each factory takes the number
of threads and returns a function that trains one round of `steps` optimisation steps. Two
measures:

- **cpu1**: CPU time (`time.process_time`) at 1 thread: numpy's BLAS limited to 1 thread
  (threadpoolctl), `torch.set_num_threads(1)`, deepsharp without its data-parallel step. CPU time
  is what the process used, so it stays steady when the shared machine is busy: the figure to
  decide by.
- **wall2**: wall time at 2 threads, two ways for deepsharp: as it runs by default (numpy's BLAS
  at 2 threads, the rest of the step on one), and inside `data_parallel(2)` (two halves of every
  batch on two Python threads, BLAS at 1 thread each: the `dp` labels, printed as a `wall2 dp`
  row); `torch.set_num_threads(2)`. All six trainers' rounds are interleaved, so both rows are
  against the same PyTorch rounds. A round in which the machine was busy is discarded and counted,
  not averaged in: the process got markedly less CPU than wall time (CPU < BUSY x wall: it waited
  for a core), or other processes used more than OTHERS cores on average meanwhile (from
  /proc/stat: a runtime whose threads spin while they wait, as PyTorch's OpenMP does, keeps its
  CPU time up while it is starved). Rounds go on until ROUNDS are kept or MAX_ROUNDS were run.

Rounds alternate the frameworks, so all four see the same conditions, in an order that turns by
one each round; at two threads each round starts after SETTLE seconds of rest, because an
OpenBLAS process's idle workers spin for about 0.1 s of CPU after its last call (measured on an
MLP round of 0.12 s: without the rest the round after a numpy round shared a core with that
spin, which made deepsharp with numba look slower than numpy alone). Each framework trains in
a process of its own (`_Worker`), so none inherits the state another left behind (malloc's
thresholds, thread pools: PyTorch's first run once made deepsharp's CNN step 1.7x faster in a
shared process than in a user's). Each framework's best
(lowest) kept round is its figure; `x torch` and `x best` are PyTorch's default's and its best
variant's time over deepsharp's, `x faster` (and `numba x faster`, over deepsharp with compiled
kernels) the faster of the two's (above 1: deepsharp is faster): the targets' figure, since the
variant called best is not always the faster here. Each `paired` column beside them is the
median, over the turns in which all kept a round, of PyTorch's faster round of the turn over
deepsharp's: the rounds ran seconds apart, so it moves less with the machine's load than a ratio
of two bests.
"""

from __future__ import annotations

import contextlib
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Callable

ROUNDS = 5          # kept rounds per measure
MAX_ROUNDS = 12     # rounds run at most per measure (busy ones included)
BUSY = 0.9          # a wall2 round whose CPU time is below this share of its wall time is busy,
OTHERS = 1.0        # and so is one in which other processes used more than this many cores
SETTLE = 0.25       # seconds of rest before each wall2 round: the last round's BLAS workers
                    # spin on for about 0.1 s after their last call (see _rounds)
LABELS = ("deepsharp", "numba", "torch", "torch best")  # the columns of the table
SPLIT = ("deepsharp dp", "numba dp")  # the same inside data_parallel(2): wall2's second row
# name: (threads, which time: 0 CPU, 1 wall, the trainers measured)
MEASURES = {"cpu1": (1, 0, LABELS), "wall2": (2, 1, LABELS + SPLIT)}
chosen = list(MEASURES)  # run.py's --measure narrows it


@contextlib.contextmanager
def threads(count: int):
    """numpy's BLAS and torch at `count` threads for the duration (restored after)."""
    from threadpoolctl import threadpool_limits

    torch = torch_ready(None)
    before = torch.get_num_threads()
    torch.set_num_threads(count)
    try:
        with threadpool_limits(limits=count, user_api="blas"):
            yield
    finally:
        torch.set_num_threads(before)


def machine_cpu() -> float:
    """CPU seconds the whole machine has spent busy (every process, every core), from /proc/stat;
    0 where there is none."""
    try:
        with open("/proc/stat") as stat:
            fields = [int(v) for v in stat.readline().split()[1:]]
    except OSError:
        return 0.0
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


class _Worker:
    """One framework's trainer in a process of its own (spawned: nothing inherited), so that what
    one framework leaves behind (malloc's state, thread pools, caches) never speeds up or slows
    down another's rounds. It builds the trainer, warms it up, then runs one round per request
    and answers (CPU seconds, wall seconds, CPU seconds other processes used meanwhile)."""

    def __init__(self, module: str, label: str, count: int) -> None:
        import multiprocessing

        context = multiprocessing.get_context("spawn")
        self.conn, theirs = context.Pipe()
        self.process = context.Process(target=_serve, args=(module, label, count, theirs),
                                       daemon=True)
        self.process.start()
        self.conn.recv()  # ready: built and warmed up

    def __call__(self) -> tuple[float, float, float]:
        self.conn.send(True)
        return self.conn.recv()

    def close(self) -> None:
        self.conn.send(False)
        self.process.join()


def _serve(module: str, label: str, count: int, conn) -> None:
    import importlib

    bench = importlib.import_module(module)
    with threads(count):
        train = factories(bench.deepsharp_epoch, bench.torch_epoch)[label](count)
        train()  # warm up (allocations, thread pools, compiled kernels)
        conn.send("ready")
        while conn.recv():
            wall, cpu, machine = time.perf_counter(), time.process_time(), machine_cpu()
            train()
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            conn.send((cpu, wall, machine_cpu() - machine - cpu))


def _rounds(workers: dict[str, _Worker], busy_check: bool) -> dict[str, dict]:
    """Interleaved rounds: per framework, the kept (cpu, wall, turn) rounds and the count of busy
    rounds discarded (turn: the round of the interleaving it ran in, for `_paired`)."""
    kept: dict[str, list[tuple[float, float, int]]] = {label: [] for label in workers}
    busy = {label: 0 for label in workers}
    labels = list(workers)
    for turn in range(MAX_ROUNDS):
        if all(len(k) >= ROUNDS for k in kept.values()):
            break
        # the order turns by one each round, so no trainer always follows the same one
        for label in labels[turn % len(labels):] + labels[:turn % len(labels)]:
            if len(kept[label]) >= ROUNDS:
                continue
            if busy_check:  # let the last round's idle BLAS workers stop spinning first
                time.sleep(SETTLE)
            cpu, wall, others = workers[label]()
            if busy_check and (cpu < BUSY * wall or others > OTHERS * wall):
                busy[label] += 1
            else:
                kept[label].append((cpu, wall, turn))
    return {label: {"kept": kept[label], "busy": busy[label]} for label in workers}


def measure(name: str, trainers: "Trainers", steps: int) -> list[dict]:
    """Both measures of one benchmark: one row per measure, times in ms per step."""
    rows = []
    for measure_name in chosen:
        count, index, labels = MEASURES[measure_name]
        workers = {label: _Worker(trainers.module, label, count) for label in labels}
        try:
            results = _rounds(workers, busy_check=(count > 1))
        finally:
            for worker in workers.values():
                worker.close()
        rows.append(_row(name, measure_name, results, index, steps, {}))
        if SPLIT[0] in results:
            rows.append(_row(name, f"{measure_name} dp", results, index, steps,
                             dict(zip(LABELS, SPLIT))))
    return rows


def _row(name: str, measure_name: str, results: dict, index: int, steps: int,
         instead: dict[str, str]) -> dict:
    """One table row: each column's best and median kept round in ms per step, the busy rounds,
    and the ratios; `instead` names the trainers whose rounds fill a column in place of its own
    (the dp row: deepsharp's columns from the dp trainers)."""
    row: dict = {"benchmark": name, "measure": measure_name}
    for label in LABELS:
        result = results[instead.get(label, label)]
        times = [t[index] for t in result["kept"]]
        row[label] = min(times) / steps * 1e3 if times else float("nan")
        row[f"{label} median"] = (statistics.median(times) / steps * 1e3 if times
                                  else float("nan"))
        row[f"{label} busy"] = result["busy"]
    row["x torch"] = row["torch"] / row["deepsharp"]
    row["x best"] = row["torch best"] / row["deepsharp"]
    pair = (row["torch"], row["torch best"])
    faster = min(pair) if all(t == t for t in pair) else float("nan")  # nan: one never kept
    faster_rounds = _faster(results["torch"]["kept"], results["torch best"]["kept"], index)
    for mine, column in (("deepsharp", "x faster"), ("numba", "numba x faster")):
        row[column] = faster / row[mine]
        row[f"{column} paired"] = _paired(faster_rounds, results[instead.get(mine, mine)]["kept"],
                                          index)
    return row


def _faster(default: list, best: list, index: int) -> list:
    """PyTorch's faster round of each turn in which both its variants kept one: the figure the
    targets are judged against (its 'best' variant, channels_last or fused Adam, is not always
    the faster one on this CPU: the CNN's default often beats channels_last at two threads)."""
    by_turn = {t[2]: t for t in best}
    return [min(t, by_turn[t[2]], key=lambda r: r[index]) for t in default if t[2] in by_turn]


def _paired(theirs: list, ours: list, index: int) -> float:
    """The median, over the turns in which both kept a round, of their round's time over ours:
    two rounds of one turn ran a few seconds apart, under much the same load, so the ratio moves
    less with the machine than the ratio of two bests taken minutes apart (nan without a turn
    in common)."""
    by_turn = {t[2]: t[index] for t in theirs}
    ratios = [by_turn[t[2]] / t[index] for t in ours if t[2] in by_turn]
    return statistics.median(ratios) if ratios else float("nan")


def report(name: str, trainers: "Trainers", steps: int) -> list[dict]:
    """`measure`, printed as a table: each benchmark's `main`."""
    rows = measure(name, trainers, steps)
    print_table(rows)
    return rows


HEADER = (f"{'benchmark':<13}{'measure':<8}{'deepsharp':>10}{'numba':>8}{'torch':>8}{'best':>8}"
          f"{'x torch':>9}{'x best':>8}{'x faster':>10}{'paired':>8}{'numba x faster':>16}"
          f"{'paired':>8}  busy rounds discarded (deepsharp/numba/torch/best)")


def print_table(rows: list[dict], header: bool = True) -> None:
    """ms per step (the best kept round), the ratios (of the bests against each PyTorch variant
    and against the faster of the two, and paired by turn against the faster), and how many busy
    rounds were dropped."""
    if header:
        print(HEADER)
    for row in rows:
        busy = "/".join(str(row[f"{label} busy"]) for label in LABELS)
        print(f"{row['benchmark']:<13}{row['measure']:<8}{row['deepsharp']:>10.2f}"
              f"{row['numba']:>8.2f}{row['torch']:>8.2f}{row['torch best']:>8.2f}"
              f"{row['x torch']:>9.2f}{row['x best']:>8.2f}{row['x faster']:>10.2f}"
              f"{row['x faster paired']:>8.2f}{row['numba x faster']:>16.2f}"
              f"{row['numba x faster paired']:>8.2f}"
              f"  {busy if row['measure'].startswith('wall') else '-'}")


def torch_ready(threads: int | None = 2):
    """torch, seeded (the same start for every run), on `threads` threads (None: as set, the
    training measures set them per measure)."""
    import torch

    if threads is not None:
        torch.set_num_threads(threads)
    torch.manual_seed(0)
    return torch


def side_by_side(name: str, ours, theirs, steps: int, rounds: int = 7) -> list[dict]:
    """Two runners (deepsharp's and PyTorch's) alternated `rounds` times after one warm-up round
    each, by wall time: each one's best and median (the inference benchmark's measure)."""
    trainers = {"deepsharp": ours(), "pytorch": theirs()}
    for train in trainers.values():
        train()  # warm up (allocations, BLAS threads)
    times: dict[str, list[float]] = {label: [] for label in trainers}
    for _ in range(rounds):
        for label, train in trainers.items():
            started = time.perf_counter()
            train()
            times[label].append(time.perf_counter() - started)
    rows = [{"benchmark": name, "framework": label, "seconds_per_step": min(t) / steps,
             "steps_per_second": steps / min(t),
             "median_steps_per_second": steps / statistics.median(t)}
            for label, t in times.items()]
    best = rows[0]["steps_per_second"] / rows[1]["steps_per_second"]
    median = rows[0]["median_steps_per_second"] / rows[1]["median_steps_per_second"]
    for row in rows:
        row["ratio_to_pytorch"] = best if row["framework"] == "deepsharp" else 1.0
        row["median_ratio_to_pytorch"] = median if row["framework"] == "deepsharp" else 1.0
    return rows


def cpu_rounds(runs: dict[str, Callable[[], object]], rounds: int, steps: int
               ) -> dict[str, list[float]]:
    """Each run (one epoch of `steps` steps) warmed up once, then `rounds` rounds interleaved in
    this process: CPU ms a step per round, sorted (the floor scripts' measure, at the thread
    counts the caller set)."""
    times: dict[str, list[float]] = {label: [] for label in runs}
    for run in runs.values():
        run()  # warm up
    for _ in range(rounds):
        for label, run in runs.items():
            started = time.process_time()
            run()
            times[label].append((time.process_time() - started) / steps * 1e3)
    return {label: sorted(found) for label, found in times.items()}


def print_rounds(times: dict[str, list[float]]) -> None:
    """`cpu_rounds`' figures: each run's best and median round."""
    width = max(map(len, times)) + 2
    for label, found in times.items():
        print(f"{label:{width}s} best {found[0]:6.2f}  median {found[len(found) // 2]:6.2f} "
              f"ms a step")


def series_data(batch: int, batches: int, steps: int, features: int
                ) -> tuple:
    """Random series (batch * batches, steps, features) and a target the last 10 steps decide:
    the recurrent benchmarks' data."""
    import numpy as np

    generator = np.random.default_rng(0)
    x = generator.standard_normal((batch * batches, steps, features)).astype(np.float32)
    y = (x[:, -10:, :4].sum(axis=(1, 2)) / 10).astype(np.float32)[:, None]
    return x, y


def torch_data(arrays) -> tuple:
    """torch (seeded) and the benchmark's arrays as tensors."""
    torch = torch_ready(None)
    return (torch, *(torch.from_numpy(a) for a in arrays))


def torch_recurrent(torch, recurrent, width: int, last):
    """A torch model: `recurrent` (a module made first, so seeded first), its last states picked
    by `last(outputs)` (batch, width), then Linear(width, 1)."""

    class Model(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.recurrent = recurrent
            self.dense = torch.nn.Linear(width, 1)

        def forward(self, inputs):
            return self.dense(last(self.recurrent(inputs)))

    return Model()


def deepsharp_trainer(network, loss, x, y, batch: int, threads: int, lr: float = 1e-3,
                      split: str = "batch"):
    """One epoch of `network.fit` (Adam, a new order each epoch: the path a user takes); inside
    `data_parallel(threads, split)` (2: the batch, or the largest kernels' work, split on two
    threads; 1: as a user runs it by default)."""
    from deepsharp import Adam
    from deepsharp.parallel import data_parallel

    optimizer = Adam(lr)
    seeds = iter(range(1_000_000))

    def epoch() -> float:
        with data_parallel(threads, split=split):
            history = network.fit(x, y, loss=loss, optimizer=optimizer, batch_size=batch,
                                  seed=next(seeds), progress=False)
        return history[-1]["loss"]

    return epoch


def torch_trainer(model, loss_fn, x, y, batch: int, best: bool, lr: float = 1e-3):
    """One epoch of PyTorch's usual loop (Adam, a new order each epoch) as a function; `best`
    takes the fused Adam."""
    import torch

    optimizer = torch.optim.Adam(model.parameters(), lr, fused=best or None)
    generator = torch.Generator().manual_seed(0)

    def epoch() -> float:
        order = torch.randperm(len(x), generator=generator)
        for start in range(0, len(x), batch):
            index = order[start:start + batch]
            optimizer.zero_grad()
            loss = loss_fn(model(x[index]), y[index])
            loss.backward()
            optimizer.step()
        return float(loss.detach())

    return epoch


class Trainers(dict):
    """label -> factory(threads) -> one round's trainer, and the bench module they come from (a
    worker process imports it to build its own)."""

    module: str


def factories(deepsharp_epoch, torch_epoch) -> Trainers:
    """The trainers of a benchmark from its `deepsharp_epoch(threads)` (threads: data_parallel's)
    and `torch_epoch(best)`; each factory takes the measure's thread count, which the worker has
    already set for BLAS and torch."""
    trainers = Trainers({"deepsharp": lambda count: deepsharp_epoch(1),
                         "numba": _compiled(lambda count: deepsharp_epoch(1)),
                         "deepsharp dp": lambda count: deepsharp_epoch(2),
                         "numba dp": _compiled(lambda count: deepsharp_epoch(2)),
                         "torch": lambda count: torch_epoch(False),
                         "torch best": lambda count: torch_epoch(True)})
    module = deepsharp_epoch.__module__
    if module == "__main__":  # a bench module run as a script: its workers import it by name
        module = Path(sys.modules[module].__file__).stem
    trainers.module = module
    return trainers


def _compiled(deepsharp_epoch):
    """deepsharp's trainer inside `compiled()`: the optional numba kernels on."""
    from deepsharp.compiled import compiled

    def factory(count: int) -> Callable[[], float]:
        train = deepsharp_epoch(count)

        def epoch() -> float:
            with compiled():
                return train()

        return epoch

    return factory
