"""What `fit` shows while it trains (`verbose=`, as Keras): 0 nothing; 1 a progress bar per epoch
on standard error; 2 one line per epoch on standard output; "auto" a bar on a terminal and a
line per epoch otherwise (the logs of a batch job)."""

from __future__ import annotations

import sys
from typing import Any

import numpy as np
from tqdm import tqdm

from deepsharp.errors import SpecError

HIDDEN = ("epoch", "seconds")


def verbosity(verbose: Any, progress: Any) -> int:
    """0, 1 or 2 from `verbose` (and the older `progress=True/False`, which means 1 or 0)."""
    auto = isinstance(verbose, str) and verbose == "auto"
    if progress is not None:
        if not auto:
            raise SpecError(f"fit: give verbose or progress, not both (received verbose={verbose!r}, "
                            f"progress={progress!r})")
        if not isinstance(progress, bool):
            raise SpecError(f"fit: progress must be True or False, received {progress!r}")
        return int(progress)
    if auto:
        return 1 if sys.stderr.isatty() else 2
    if isinstance(verbose, (bool, np.bool_)) or not isinstance(verbose, (int, np.integer)) \
            or verbose not in (0, 1, 2):
        raise SpecError(f"fit: verbose must be 0, 1, 2 or 'auto', received {verbose!r}")
    return int(verbose)


def line(logs: dict[str, float]) -> str:
    """`loss: 0.4123 - accuracy: 0.8750 - val_loss: ...` (what the bar and the line show)."""
    return " - ".join(f"{k}: {v:.4g}" for k, v in logs.items() if k not in HIDDEN)


class EpochProgress:
    """One epoch's display: `update(loss)` per batch, `close(logs)` at its end."""

    def __init__(self, verbose: int, epoch: int, epochs: int, steps: int) -> None:
        self.verbose, self.epoch, self.epochs = verbose, epoch, epochs
        # (no bar made when none is shown: a disabled tqdm still costs about a millisecond)
        self.bar = tqdm(total=steps, desc=f"epoch {epoch + 1}/{epochs}", leave=True,
                        file=sys.stderr, dynamic_ncols=True) if verbose == 1 else None

    @property
    def showing(self) -> bool:
        """Whether a bar is shown (`fit` then works out the running loss for it each batch)."""
        return self.verbose == 1

    def update(self, loss: float) -> None:
        self.bar.update(1)
        self.bar.set_postfix(loss=f"{loss:.4f}", refresh=False)

    def close(self, logs: dict[str, float] | None) -> None:
        if self.bar is not None:
            if logs is not None:
                self.bar.set_postfix_str(line(logs), refresh=True)
            self.bar.close()
        if logs is not None and self.verbose == 2:
            print(f"epoch {self.epoch + 1}/{self.epochs} - {logs['seconds']:.2f}s - {line(logs)}",
                  flush=True)
