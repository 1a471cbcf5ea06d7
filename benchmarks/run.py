"""Run every benchmarks/bench_*.py side by side with PyTorch on this CPU and print the ratios.

    .venv/bin/python benchmarks/run.py [name ...]      # e.g. `lstm transformer`; all by default

`make bench` installs the pinned CPU build of torch first. Speed is measured here, never asserted in
a test. Each bench module has `main() -> list[dict]`.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main(names: list[str]) -> list[dict]:
    sys.path[:0] = [str(HERE), str(HERE.parent)]
    rows: list[dict] = []
    for path in sorted(HERE.glob("bench_*.py")):
        name = path.stem[len("bench_"):]
        if names and name not in names:
            continue
        print(f"== {name}", flush=True)
        rows += importlib.import_module(path.stem).main()
    if rows:
        print("\nsummary")
        for row in rows:
            print("  " + ", ".join(f"{k}={v:.3g}" if isinstance(v, float) else f"{k}={v}"
                                   for k, v in row.items()))
    return rows


if __name__ == "__main__":
    main(sys.argv[1:])
