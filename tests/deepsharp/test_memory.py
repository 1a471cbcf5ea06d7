"""keep_freed_memory: after it, a large array freed and made again reuses the pages malloc kept
(no page faults), as a training step's arrays do; a process whose thresholds were set keeps them."""

from __future__ import annotations

import os
import subprocess
import sys

from deepsharp import memory

GLIBC = (os.confstr("CS_GNU_LIBC_VERSION") or "").startswith("glibc") \
    if hasattr(os, "confstr") else False

# a fresh process (malloc's thresholds as glibc starts them): the page faults of making and
# writing twelve 2 MB arrays and dropping them, 20 times after the first (as a training step's
# arrays come and go), before or after keep_freed_memory()
SCRIPT = """
import importlib.util, resource, sys
import numpy as np
# deepsharp/memory.py alone (the package's import would take most of the test's time)
spec = importlib.util.spec_from_file_location("memory", sys.argv[2])
memory = importlib.util.module_from_spec(spec)
spec.loader.exec_module(memory)
keep_freed_memory = memory.keep_freed_memory

def faults():
    def churn():
        arrays = [np.ones(1 << 19, np.float32) for _ in range(12)]
        del arrays
    churn()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(20):
        churn()
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before

if sys.argv[1] == "kept":
    print(keep_freed_memory(), keep_freed_memory(), faults())
else:
    print(faults())
"""


def _run(mode: str, env: dict | None = None) -> list[str]:
    done = subprocess.run([sys.executable, "-c", SCRIPT, mode, memory.__file__],
                          capture_output=True, text=True,
                          check=True, env={**os.environ, **(env or {})})
    return done.stdout.split()


def test_freed_memory_is_reused_once_kept():
    if not GLIBC:  # another C library: nothing is done
        assert _run("kept")[:2] == ["False", "False"]
        return
    assert int(_run("plain")[0]) > 20 * 12 * 400        # every churn faults its pages in afresh
    first, again, faults = _run("kept")
    assert (first, again) == ("True", "False")      # once per process
    assert int(faults) < 100


def test_thresholds_the_user_set_are_kept():
    # a trim threshold set by the user pins glibc's thresholds: the block changes nothing
    _, _, faults = _run("kept", {"MALLOC_TRIM_THRESHOLD_": "131072"})
    if not GLIBC:  # (no thresholds to keep: nothing was done either way)
        return
    assert int(faults) > 20 * 12 * 400


def test_fit_keeps_freed_memory(monkeypatch):
    import numpy as np

    import deepsharp.training as training
    from deepsharp import SGD, MeanSquaredError, RandomStream, Sequential, Shape

    calls = []
    monkeypatch.setattr(training, "keep_freed_memory", lambda: calls.append(1))
    network = Sequential().dense(2).lower(Shape(3), RandomStream(0))
    x, y = np.ones((4, 3), np.float32), np.zeros((4, 2), np.float32)
    network.fit(x, y, loss=MeanSquaredError(), optimizer=SGD(0.1), progress=False)
    assert calls == [1]
