"""Compare deepsharp's port of numpy's float32 tanh (deepsharp/_tanh32.py, numba) with np.tanh
over all 2^32 float32 bit patterns, bit for bit, by each loop that runs on this CPU (about a
minute; needs numba).

    .venv/bin/python scripts/check_tanh32.py

The test suite checks a dense sample and the edge values (tests/deepsharp/test_compiled.py); this
is the whole range, run once per numpy release or CPU kind the kernel is trusted on.
"""

from __future__ import annotations

import sys
import time

import numpy as np

from deepsharp._tanh32 import loops


def main() -> int:
    """Each loop that can run on this CPU: by 16 lanes (AVX-512), by 8 (AVX2), the plain one."""
    faults = 0
    for name, loop in loops().items():
        started, wrong, chunk = time.perf_counter(), 0, 1 << 24
        out = np.empty(chunk, np.float32)
        for first in range(0, 1 << 32, chunk):
            x = np.arange(first, first + chunk, dtype=np.uint64).astype(np.uint32).view(np.float32)
            loop(x, out, x.size)
            differ = out.view(np.uint32) != np.tanh(x).view(np.uint32)
            if differ.any():
                wrong += int(differ.sum())
                print(f"{name}: differs from 0x{first:08x}: {x[differ][:4]} -> {out[differ][:4]}, "
                      f"numpy {np.tanh(x[differ][:4])}")
        print(f"{name}: {wrong} of 2^32 float32 values differ from np.tanh (numpy "
              f"{np.__version__}); {time.perf_counter() - started:.0f} s")
        faults += wrong
    return 1 if faults else 0


if __name__ == "__main__":
    sys.exit(main())
