"""The long fuzz campaign: mutated ONNX files, network files, checkpoints, the commands and bad
calls, each case in a worker process bounded in memory (RLIMIT_AS) and time (a killed worker is
a "timeout"), counted per campaign and outcome.

    .venv/bin/python scripts/fuzz_campaign.py                     # the default 30,000 cases
    .venv/bin/python scripts/fuzz_campaign.py --cases onnx-fields=20000 --seed 7 --jobs 2
    .venv/bin/python scripts/fuzz_campaign.py --save-failures tests/fixtures/fuzz

Outcomes: accepted / refused (one of the project's errors) / exit N (a command's status) /
failure:<Type>@<site> (any other exception: a bug) / timeout / crash (the worker died). A case
is rebuilt from (campaign, seed, index), so every failure can be replayed; with
--save-failures the first case of each distinct failure is written there (`<campaign>-<hash>.bin`,
listed in `index.json`) for tests/fuzz/test_fuzz_corpus.py to keep as a regression test.
The table printed at the end is what docs/reliability.md records.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import multiprocessing as mp
import os
import resource
import sys
import time
import warnings
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

DEFAULT_CASES = {"onnx-bytes": 5000, "onnx-fields": 12000, "network-files": 4000,
                 "checkpoints": 3000, "inspect": 2500, "check": 1000, "calls": 2500}
MEMORY_LIMIT = 3 << 30  # address space per worker: numpy, onnx and onnxruntime fit well inside
CASE_SECONDS = 20.0


def _worker(connection, seed: int) -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))
    warnings.simplefilter("ignore")
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)  # Runtime and tqdm print from C and Python alike
    os.dup2(devnull, 2)
    from tests.support.fuzz import CAMPAIGNS, make_case, outcome

    seeds = {}
    while True:
        task = connection.recv()
        if task is None:
            return
        name, index = task
        campaign = CAMPAIGNS[name]
        if name not in seeds:
            seeds[name] = campaign.seeds()
        data = make_case(campaign, seeds[name], seed, index)
        connection.send((outcome(lambda: campaign.target(data)), data))


class Pool:
    """Workers fed one case at a time; a worker past CASE_SECONDS is killed and replaced."""

    def __init__(self, jobs: int, seed: int) -> None:
        self.seed = seed
        self.context = mp.get_context("fork")
        self.workers = [self._start() for _ in range(jobs)]

    def _start(self):
        parent, child = self.context.Pipe()
        process = self.context.Process(target=_worker, args=(child, self.seed), daemon=True)
        process.start()
        return [process, parent, None, 0.0]  # process, pipe, task, started

    def run(self, tasks, record) -> None:
        pending = list(tasks)[::-1]
        while pending or any(w[2] is not None for w in self.workers):
            for slot, worker in enumerate(self.workers):
                process, pipe, task, started = worker
                if task is None and pending:
                    worker[2], worker[3] = pending.pop(), time.monotonic()
                    pipe.send(worker[2])
                elif task is not None and pipe.poll(0.002):
                    try:
                        result, data = pipe.recv()
                    except EOFError:  # the worker died: a crash, not a verdict
                        result, data = "crash", None
                        self.workers[slot] = self._start()
                    record(task, result, data)
                    if result != "crash":
                        worker[2] = None
                elif task is not None and (time.monotonic() - started > CASE_SECONDS or not process.is_alive()):
                    process.kill()
                    process.join()
                    record(task, "timeout" if process.exitcode == -9 else "crash", None)
                    self.workers[slot] = self._start()

    def close(self) -> None:
        for process, pipe, _, _ in self.workers:
            pipe.send(None)
            process.join(5)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", nargs="*", default=[], metavar="CAMPAIGN=N",
                        help=f"cases per campaign (default {DEFAULT_CASES})")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--save-failures", metavar="FOLDER", help="write each distinct failure's first case")
    parser.add_argument("--report", metavar="JSON", help="write the counts as JSON")
    args = parser.parse_args(argv)
    cases = dict(DEFAULT_CASES) if not args.cases else {}
    for item in (part for text in args.cases for part in text.split(",") if part):
        name, _, count = item.partition("=")
        if not count.isdigit():  # fuzz_numbers.py takes name=count,name=count: so does this
            parser.error(f"--cases takes CAMPAIGN=N items, received {item!r}")
        cases[name] = int(count)
    counts: dict[str, Counter] = defaultdict(Counter)
    first: dict[tuple[str, str], tuple[int, bytes | None]] = {}

    def record(task, result, data):
        name, index = task
        counts[name][result] += 1
        bad = result.startswith(("failure", "timeout", "crash"))
        if bad and (name, result) not in first:
            first[(name, result)] = (index, data)

    started = time.time()
    pool = Pool(args.jobs, args.seed)
    try:
        pool.run([(name, index) for name, n in cases.items() for index in range(n)], record)
    finally:
        pool.close()
    print(f"fuzz campaign, seed {args.seed}: {sum(map(sum, (c.values() for c in counts.values()))):,} "
          f"cases in {time.time() - started:.0f} s")
    print(f"{'campaign':<15} {'cases':>7}  outcomes")
    for name in cases:
        outcomes = ", ".join(f"{result} {n:,}" for result, n in counts[name].most_common())
        print(f"{name:<15} {sum(counts[name].values()):>7,}  {outcomes}")
    for (name, result), (index, _) in sorted(first.items()):
        print(f"first {result} in {name}: case {index} (replay: tests.support.fuzz.make_case with seed {args.seed})")
    if args.save_failures:
        _save(Path(args.save_failures), first, args.seed)
    if args.report:
        Path(args.report).write_text(json.dumps({"seed": args.seed, "counts": counts}, indent=1, sort_keys=True))
    return 0


def _save(folder: Path, first: dict, seed: int) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    index_path = folder / "index.json"
    index = json.loads(index_path.read_text()) if index_path.exists() else {}
    for (name, result), (case, data) in sorted(first.items()):
        if data is None:  # a timeout or crash: rebuild the case in this process
            from tests.support.fuzz import CAMPAIGNS, make_case

            data = make_case(CAMPAIGNS[name], CAMPAIGNS[name].seeds(), seed, case)
        file = f"{name}-{hashlib.sha1(data).hexdigest()[:10]}.bin"
        (folder / file).write_bytes(data)
        index[file] = {"campaign": name, "found": result, "seed": seed, "case": case}
    index_path.write_text(json.dumps(index, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    sys.exit(main())
