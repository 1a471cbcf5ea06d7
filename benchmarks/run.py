"""Run every benchmarks/bench_*.py side by side with PyTorch on this CPU and print the ratios.

`make bench` (installs the pinned CPU build of torch first). Speed is measured here, never asserted
in a test.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path


def main() -> int:
    here = Path(__file__).resolve().parent
    sys.path.insert(0, str(here.parent))
    rows = []
    for path in sorted(here.glob("bench_*.py")):
        spec = importlib.util.spec_from_file_location(path.stem, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        print(f"== {path.stem}")
        rows += module.main()
    if rows:
        print("\nsummary")
        for row in rows:
            print("  " + ", ".join(f"{k}={v:.3g}" if isinstance(v, float) else f"{k}={v}"
                                   for k, v in row.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
