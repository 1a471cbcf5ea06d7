"""The run context: which random stream and which optimisation step a training pass is at.

`fit` enters one per batch; a dropout step draws its mask from
`stream.generator(f"dropout:{path}:{step}")`, so a resumed run draws what the first run drew.
Outside `fit`, a training-mode pass uses a per-thread fallback (seed 0, counting calls).
"""

from __future__ import annotations

import itertools
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Iterator

import numpy as np

from deepsharp.errors import OpError
from deepsharp.random import RandomStream


@dataclass(frozen=True)
class Run:
    random: RandomStream
    step: int
    # inside a data-parallel share of a batch: (the rows this share holds, the whole batch's size)
    rows: tuple[slice, int] | None = None

    def generator(self, purpose: str) -> np.random.Generator:
        return self.random.generator(f"{purpose}:{self.step}")

    def draw(self, purpose: str, shape: tuple[int, ...], method: str = "random") -> np.ndarray:
        """`generator(purpose).<method>(shape)` for a batch-first `shape`. In a share of a batch
        (`deepsharp.parallel`) it is those rows of the whole batch's draw, so every share draws
        exactly what one pass over the whole batch draws."""
        draw = getattr(self.generator(purpose), method)
        if self.rows is None:
            return draw(shape)
        rows, size = self.rows
        if not shape or shape[0] != rows.stop - rows.start:
            raise OpError(f"{purpose}: a random draw of shape {tuple(shape)} inside a share of "
                          f"rows {rows.start}..{rows.stop - 1} of a batch of {size}: its first "
                          f"axis must be the batch's")
        return draw((size, *shape[1:]))[rows]


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


class running:
    """`with running(random, step[, rows]) as run:` the run context for the block (fit enters one
    per batch). A class rather than a generator-made context manager: a third of the cost, which
    fit pays every batch."""

    __slots__ = ("_run", "_token")

    def __init__(self, random: RandomStream, step: int,
                 rows: tuple[slice, int] | None = None) -> None:
        self._run = Run(random, step, rows)

    def __enter__(self) -> Run:
        self._token = _run.set(self._run)
        return self._run

    def __exit__(self, *exc: object) -> bool:
        _run.reset(self._token)
        return False
