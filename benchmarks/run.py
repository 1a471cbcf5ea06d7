"""Run every benchmarks/bench_*.py side by side with PyTorch on this CPU and print the ratios.

    .venv/bin/python benchmarks/run.py [name ...] [--measure cpu1|wall2]
    # e.g. `lstm transformer --measure cpu1`; every benchmark and both measures by default
    # (wall2 prints two rows: deepsharp as it runs by default, and inside data_parallel(2))

`make bench` installs the pinned CPU build of torch first. Speed is measured here, never asserted in
a test. Each bench module has `main() -> list[dict]`; the measures are side_by_side.py's (CPU
time at 1 thread, wall time at 2 threads with busy rounds discarded and counted).
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main(names: list[str]) -> list[dict]:
    sys.path[:0] = [str(HERE), str(HERE.parent)]
    if "--measure" in names:
        import side_by_side

        at = names.index("--measure")
        side_by_side.chosen[:] = [names[at + 1]]
        names = names[:at] + names[at + 2:]
    rows: list[dict] = []
    for path in sorted(HERE.glob("bench_*.py")):
        name = path.stem[len("bench_"):]
        if names and name not in names:
            continue
        print(f"== {name}", flush=True)
        rows += importlib.import_module(path.stem).main()
    if rows:
        from side_by_side import print_table

        print("\nsummary: ms per step (best kept round); x torch, x best, x faster: PyTorch's "
              "default's, its best variant's and the faster of the two's time over deepsharp's "
              "(above 1: deepsharp faster); paired: the median over turns of PyTorch's faster "
              "round over deepsharp's")
        print_table([row for row in rows if "measure" in row])  # training rows (side_by_side)
        print(machine())
    return rows


def machine() -> str:
    """The machine and the versions the figures were measured with."""
    import os
    import platform

    import numpy
    import torch
    from threadpoolctl import threadpool_info

    blas = ", ".join(f"{i['internal_api']} {i['version']} ({_owner(i['filepath'])}, "
                     f"{i.get('architecture') or 'unknown'} kernels)"
                     for i in threadpool_info() if i["user_api"] == "blas") or "unknown"
    # the kernels OpenBLAS runs can be chosen by the environment (a machine may pin them for
    # reproducible numbers across CPUs): said, so that a reader knows what numpy ran
    pinned = {k: v for k, v in os.environ.items() if k.startswith("OPENBLAS_")}
    return (f"machine: {_cpu_model() or platform.machine()}, {os.cpu_count()} cores; "
            f"python {platform.python_version()}, numpy {numpy.__version__}, "
            f"torch {torch.__version__} ({torch.backends.cpu.get_cpu_capability()}); "
            f"BLAS: {blas}; environment: {pinned or 'no OPENBLAS_ setting'}")


def _cpu_model() -> str:
    """The CPU's model name and family, from /proc/cpuinfo (Linux), or empty."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return ""
    fields = dict(line.split(":", 1) for line in text.splitlines()[:30] if ":" in line)
    fields = {k.strip(): v.strip() for k, v in fields.items()}
    name = fields.get("model name", "")
    return f"{name} (family {fields['cpu family']})" if name and "cpu family" in fields else name


def _owner(path: str) -> str:
    """Which package a BLAS library was loaded from (numpy's and torch's each bring one)."""
    parts = Path(path).parts
    found = [p for p in parts if p in ("numpy", "scipy", "torch") or p.endswith(".libs")]
    return found[-1].removesuffix(".libs") if found else Path(path).name


if __name__ == "__main__":
    main(sys.argv[1:])
