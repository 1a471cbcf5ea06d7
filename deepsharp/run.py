"""The run context: which random stream and which optimisation step a training pass is at.

`fit` enters one per batch; a dropout step draws its mask from
`stream.generator(f"dropout:{path}:{step}")`, so a resumed run draws what the first run drew.
Outside `fit`, a training-mode pass uses a per-thread fallback (seed 0, counting calls).
"""

from __future__ import annotations

import contextlib
import itertools
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Iterator

import numpy as np

from deepsharp.random import RandomStream


@dataclass(frozen=True)
class Run:
    random: RandomStream
    step: int

    def generator(self, purpose: str) -> np.random.Generator:
        return self.random.generator(f"{purpose}:{self.step}")


_run: ContextVar[Run | None] = ContextVar("deepsharp_run", default=None)
_fallback_steps: ContextVar[Iterator[int] | None] = ContextVar("deepsharp_fallback", default=None)


def current_run() -> Run:
    run = _run.get()
    if run is not None:
        return run
    counter = _fallback_steps.get()
    if counter is None:
        counter = itertools.count()
        _fallback_steps.set(counter)
    return Run(RandomStream(0), 1_000_000_000 + next(counter))


@contextlib.contextmanager
def running(random: RandomStream, step: int) -> Iterator[Run]:
    token = _run.set(Run(random, step))
    try:
        yield _run.get()
    finally:
        _run.reset(token)
