"""An epoch's running totals: its losses summed by batch size and its metrics (what `fit`
reports for the epoch, training and validation alike)."""

from __future__ import annotations

from deepsharp.losses import Loss
from deepsharp.metrics import Accuracy, TopKAccuracy
from deepsharp.objective import Objective


# Metrics whose update only counts (it cannot fail on the rows `rows_of` makes of answers the
# loss's checks let through, and does nothing else): an epoch updates them for a run of batches at
# once, the same updates in the same order on the same arrays, so that their code stays in the
# cache (a batch's own update ran with it evicted by the step's arrays: 0.09 ms a batch of the MLP
# benchmark, against 0.02-0.03 in a run). Their results are read only at the epoch's end; any
# other metric (a user's) is updated after each batch. Only the library's losses: their answers
# are new arrays each batch and their prepared targets copies, so nothing held is written since.
_COUNTING = (Accuracy, TopKAccuracy)
HELD_BYTES = 1 << 20  # the answers and targets held for them at most


class Epoch:
    """Running sums of one epoch's losses, weighted by batch size, and its metrics."""

    def __init__(self, objective: Objective) -> None:
        self.objective = objective
        self.count = 0
        self.sums: dict[str, float] = {}
        self.metrics = objective.fresh_metrics()
        found = [type(m) for ms in self.metrics.values() for m in ms]
        self.later = (bool(found) and all(kind in _COUNTING for kind in found)
                      and all(type(o.loss).__module__ == Loss.__module__
                              for o in objective.trained))
        self.held: list[tuple[dict, dict]] = []
        self.held_bytes = 0

    def add(self, rows: int, parts: dict[str, float], outputs: dict, targets: dict,
            answers: dict | None = None) -> None:
        """One batch's losses and metrics; `answers` (each output's loss's output activation of
        `outputs`) when the pass made them already."""
        self.count += rows
        for k, v in parts.items():
            self.sums[k] = self.sums.get(k, 0.0) + v * rows
        if answers is None:
            answers = {o.name: o.loss.output(outputs[o.name]) for o in self.objective.trained}
        if not self.later:
            self.objective.update_metrics(self.metrics, answers, targets)
            return
        self.held.append((answers, targets))
        self.held_bytes += sum([a.nbytes for a in answers.values()]) + sum(
            [t.nbytes for t in targets.values()])
        if self.held_bytes >= HELD_BYTES:
            self._update()

    def _update(self) -> None:
        """The held batches' metric updates, in their order."""
        for answers, targets in self.held:
            self.objective.update_metrics(self.metrics, answers, targets)
        self.held, self.held_bytes = [], 0

    @property
    def loss(self) -> float:
        return self.objective.logs({k: v / self.count for k, v in self.sums.items()})["loss"]

    def logs(self, prefix: str = "") -> dict[str, float]:
        self._update()
        means = {k: v / self.count for k, v in self.sums.items()}
        logs = {**self.objective.logs(means), **self.objective.metric_logs(self.metrics)}
        return {prefix + k: v for k, v in logs.items()}
