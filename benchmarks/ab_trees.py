"""A/B of two checkouts' whole deepsharp (e.g. main's and a branch's worktree) on one benchmark's
`fit` epoch, and PyTorch's two variants beside them (its default and its best: fused Adam, and
channels_last for the CNN): each in a process of its own (spawned, importing
deepsharp from its tree), rounds interleaved, CPU time at 1 thread (BLAS held at 1); with
`--split kernels` (or `batch`), wall time at 2 threads instead: deepsharp inside
`data_parallel(2, split=...)`, PyTorch at 2 threads, each round after a quarter second's rest
(the last round's BLAS workers spin on for about 0.1 s); with `--split none`, likewise, but
deepsharp as it runs by default at two threads (numpy's BLAS at 2 threads, no data_parallel:
run.py's `wall2` row); with `--compiled`, deepsharp's epochs inside
`deepsharp.compiled.compiled()` (the optional numba kernels).

    .venv/bin/python benchmarks/ab_trees.py TREE_A TREE_B [ROUNDS] [BENCH]
                                            [--split kernels|batch|none] [--compiled]
    # e.g. /work/main /work/mlp3 15 mlp;  /work/main /work/cnn4 20 cnn --split kernels

Prints each one's best and median ms a step, and B against A as the ratio of the bests and the
median of the rounds' paired ratios (A's round over B's, each pair run back to back: above 1,
B is faster), which moves less with the machine's load than either best alone; then PyTorch's
best variant, and the faster of its two rounds of each turn (the targets' figure: the variant
called best is not always the faster), over A and over B, as bests and paired medians.
"""

from __future__ import annotations

import importlib
import multiprocessing
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _serve(tree: str | None, bench: str, conn, split: str | None = None,
           numba: bool = False, best: bool = True) -> None:
    sys.path[:0] = [str(HERE)] + ([tree] if tree else [])
    from threadpoolctl import threadpool_limits

    module = importlib.import_module(f"bench_{bench}")
    clock = time.process_time if split is None else time.perf_counter
    with threadpool_limits(limits=2 if split == "none" else 1, user_api="blas"):
        if tree is None:
            import torch

            torch.set_num_threads(1 if split is None else 2)
            train = module.torch_epoch(best)
        else:
            import deepsharp

            assert Path(deepsharp.__file__).resolve().is_relative_to(Path(tree).resolve()), \
                deepsharp.__file__
            train = (module.deepsharp_epoch(1) if split in (None, "none")
                     else _split(module, split))
            if numba:
                import side_by_side

                train = side_by_side._compiled(lambda _: train)(1)
        train()
        conn.send(module.BATCHES)
        while conn.recv():
            if split is not None:
                time.sleep(0.25)
            started = clock()
            train()
            conn.send(clock() - started)


def _split(module, split: str):
    """The benchmark's deepsharp epoch inside data_parallel(2, split=split)."""
    import side_by_side

    made = side_by_side.deepsharp_trainer
    module.deepsharp_trainer = lambda *args, **options: made(*args, **{**options, "split": split})
    return module.deepsharp_epoch(2)


def main(args: list[str]) -> None:
    numba = "--compiled" in args
    args = [a for a in args if a != "--compiled"]
    split = None
    if "--split" in args:
        at = args.index("--split")
        split, args = args[at + 1], args[:at] + args[at + 2:]
    a, b = args[0], args[1]
    rounds = int(args[2]) if len(args) > 2 else 15
    bench = args[3] if len(args) > 3 else "mlp"
    context = multiprocessing.get_context("spawn")
    workers, steps = {}, 1
    for label, tree, best in (("A " + a, a, True), ("B " + b, b, True),
                              ("PyTorch best", None, True), ("PyTorch default", None, False)):
        mine, theirs = context.Pipe()
        process = context.Process(target=_serve, args=(tree, bench, theirs, split, numba, best),
                                  daemon=True)
        process.start()
        steps = mine.recv()
        workers[label] = (mine, process)
    times: dict[str, list[float]] = {label: [] for label in workers}
    labels = list(workers)
    for turn in range(rounds):
        for label in labels[turn % 4:] + labels[:turn % 4]:  # the order turns each round
            workers[label][0].send(True)
            times[label].append(workers[label][0].recv() / steps * 1e3)
    for conn, process in workers.values():
        conn.send(False)
        process.join()
    for label, found in times.items():
        tenth = sorted(found)[len(found) // 10]
        print(f"{label:40s} best {min(found):.3f}  10th percentile {tenth:.3f}  median "
              f"{statistics.median(found):.3f} ms a step")
    first, second, best, default = (times[label] for label in labels)
    paired = statistics.median([x / y for x, y in zip(first, second)])
    print(f"B against A: bests {min(first) / min(second):.3f}, median paired {paired:.3f}")
    faster = [min(t, d) for t, d in zip(best, default)]  # PyTorch's faster round of each turn
    for name, theirs in (("best", best), ("faster", faster)):
        print(f"PyTorch {name} over A {min(theirs) / min(first):.3f}, over B "
              f"{min(theirs) / min(second):.3f} (bests); median paired over A "
              f"{statistics.median([t / y for t, y in zip(theirs, first)]):.3f}, over B "
              f"{statistics.median([t / y for t, y in zip(theirs, second)]):.3f}")


if __name__ == "__main__":
    main(sys.argv[1:])
