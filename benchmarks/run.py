"""Run every benchmarks/bench_*.py (its `main() -> list[dict]`) and print each one's table.

    .venv/bin/python benchmarks/run.py [name ...]      # e.g. `lstm transformer`
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main(names: list[str]) -> list[dict]:
    sys.path.insert(0, str(HERE))
    rows: list[dict] = []
    for path in sorted(HERE.glob("bench_*.py")):
        name = path.stem[len("bench_"):]
        if names and name not in names:
            continue
        print(f"== {name}", flush=True)
        rows += importlib.import_module(path.stem).main()
    return rows


if __name__ == "__main__":
    main(sys.argv[1:])
