"""Adam's step begun on the worker before the backward pass ends, inside
`data_parallel(2, split="kernels")`: the same numbers, less time on the calling thread.

A network's first layer runs its backward last, and its largest part there (the kernel's
gradient, one product) runs on the calling thread alone. Every other parameter's gradient is
final by then, and Adam's update is elementwise: so `fit`'s replayed pass (step_plan) calls
`Adam.step_ahead(final)` just before the first layer's backward, which defers the update of those
parameters' places in the flat buffers to the worker (two_threads.defer; the worker takes it when
the first layer's kernel reaches its product, two_threads.idle_point). `Adam.step()` then waits
for it, updates the other places itself, and subtracts the updates from the parameters.

The deferred part keeps a copy of the moments it updates (in place) and leaves the parameters
and the step counts alone. The step takes what it computed only when the step runs with what the
part was begun with (the same parameters with the same gradients, the same rate, betas, eps and
step count, no clipping, no weight decay); else the moments are put back and the step runs as
usual, as it does when no idle point came (the worker never took the part). A backward pass that
fails after the part began (`Optimizer.drop_ahead`), or a step that never comes (`zero_grad`),
puts the moments back too: the optimizer as it was. Each place gets the very operations
`_flat_step` gives it (`Adam.update_places`: numpy's passes, or the compiled kernel that matches
them bit for bit), so the numbers are one step's, bit for bit (tests/deepsharp/test_step_ahead.py).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from deepsharp.tensors.ops.two_threads import Deferred, defer, in_halves

MIN_VALUES = 1 << 14  # fewer final values are not worth the hand-off
SPLIT_VALUES = 1 << 16  # the step's own places in two halves from this many (a hand-off each)


class Ahead:
    """A step begun: the deferred part, the flat buffers, the names it was begun for, the flat
    places it covers (runs of [start, stop)), the final parameters' places among the names and
    the gradients they had, the constants it ran with, and the places left to the step."""

    __slots__ = ("deferred", "flat", "names", "runs", "places", "grads", "constants", "kept",
                 "rest")

    def __init__(self, flat: Any, names: tuple, runs: list, places: list, grads: list,
                 constants: tuple, rest: tuple) -> None:
        self.flat, self.names, self.runs = flat, names, runs
        self.places, self.grads, self.constants = places, grads, constants
        self.rest = rest  # (the other places, their runs): what the step updates itself
        self.kept = False  # the part has kept the moments it updates (set on the worker)
        self.deferred: Deferred | None = None

    def settle(self) -> bool:
        """Whether the part ran (waiting for the worker if it has it; False: it never will). If
        it failed, the moments are put back and its error raised; so too when the wait is
        interrupted (Ctrl-C), once the worker is done with them."""
        try:
            return self.deferred.settled()
        except BaseException:
            self.deferred.wait()  # (not while the part may still write them)
            _restore(self)
            raise

    def drop(self) -> None:
        """The step is not taken: the moments the part updated put back (an error of the part
        is dropped with it)."""
        try:
            ran = self.settle()
        except Exception:  # (put back already)
            return
        if ran:
            _restore(self)


def _constants(optimizer: Any, t: float) -> tuple:
    return (optimizer.lr, optimizer.betas, optimizer.eps, optimizer.clip_norm,
            optimizer.weight_decay, t)


def begin(optimizer: Any, final: list) -> Ahead | None:
    """Defer the update of the `final` parameters' places (their gradients final), or None when
    the step cannot be begun so (then nothing is done)."""
    flat = getattr(optimizer, "_flat_moments", None)
    if (optimizer.clip_norm is not None or optimizer.weight_decay or not optimizer.bound
            or flat is None):
        return None
    names = tuple([name for name, _ in optimizer.params])
    params = [p for _, p in optimizer.params]
    if flat.names != names:  # (the last step's were not all of them)
        return None
    flat = type(flat).of(optimizer, names, [p._data for p in params])  # (the state's, still)
    if flat is None or len({p._data.dtype for p in params}) != 1:
        return None
    places, runs, rest = _places(flat, params, final)
    if not runs or any(params[k].grad is None for k in places):
        return None
    grads = [params[k].grad for k in places]
    views = [flat.grad_views[k] for k in places]
    t = float(optimizer.state[names[0]]["step"]) + 1
    saved = _saved_moments(flat)
    ahead = Ahead(flat, names, runs, places, grads, _constants(optimizer, t), rest)

    def part() -> None:  # on the worker: final gradients in, the moments kept, then updated
        for start, stop in runs:
            np.copyto(saved[0][start:stop], flat.exp_avg[start:stop])
            np.copyto(saved[1][start:stop], flat.exp_avg_sq[start:stop])
        ahead.kept = True
        for grad, view in zip(grads, views):
            if grad is not view:
                view[...] = grad
        for start, stop in runs:
            _update(optimizer, flat, slice(start, stop), t)

    ahead.deferred = defer(part)
    return ahead


def commit(optimizer: Any, ahead: Ahead, live: list) -> bool:
    """The step, finishing what `ahead` began (its part has run): True when done, False when the
    step must run as usual (what it has to work with is not what the part began with: the part's
    moments are put back)."""
    names = tuple([name for name, _ in live])
    flat, t = ahead.flat, ahead.constants[-1]
    if (names != ahead.names or _constants(optimizer, t) != ahead.constants
            or any(float(optimizer.state.get(name, {}).get("step", -1)) != t - 1
                   for name in names)
            or any(live[k][1].grad is not grad for k, grad in zip(ahead.places, ahead.grads))
            or type(flat).of(optimizer, names, [p._data for _, p in live]) is not flat):
        _restore(ahead)
        return False
    others, gaps = ahead.rest
    for k in others:  # the places the part left: their gradients copied in where not there
        grad, view = live[k][1].grad, flat.grad_views[k]
        if grad is not view:
            view[...] = grad
    for name in names:
        optimizer.state[name]["step"][()] += 1  # (in place, as _flat_step counts)
    for start, stop in gaps:  # and updated here
        if stop - start >= SPLIT_VALUES:
            in_halves(lambda r, a=start: _update(optimizer, flat, _shift(r, a), t), stop - start)
        else:
            _update(optimizer, flat, slice(start, stop), t)
    for (_, p), part in zip(live, flat.work_views):
        p._data -= part
    return True


def _places(flat: Any, params: list, final: list) -> tuple[list, list, tuple]:
    """The final parameters' places among `params`, their runs in the flat buffers (places side
    by side make one run; none when they are too few values), and the other places with their
    runs (what the step updates itself). Worked out once per flat buffer and list of final
    parameters (a replay gives the same list each batch)."""
    held = getattr(flat, "ahead_places", None)
    ids = [id(p) for p in params]
    if held is not None and held[0] is final and held[1] == ids:
        return held[2]
    wanted = {id(p) for p in final}  # (a frozen one, or one another optimizer trains: not here)
    places = [k for k, p in enumerate(params) if id(p) in wanted]
    others = [k for k in range(len(params)) if id(params[k]) not in wanted]
    found = _runs(flat, places)
    if sum(b - a for a, b in found) < MIN_VALUES:
        found = []
    flat.ahead_places = (final, ids, (places, found, (others, _runs(flat, others))))
    return flat.ahead_places[2]


def _runs(flat: Any, places: list[int]) -> list[tuple[int, int]]:
    """[start, stop) runs of the flat buffers covering these places (in order)."""
    starts = np.concatenate([[0], np.cumsum(flat.sizes)]).tolist()
    runs: list[list[int]] = []
    for k in places:
        if runs and runs[-1][1] == starts[k]:
            runs[-1][1] = starts[k + 1]
        else:
            runs.append([starts[k], starts[k + 1]])
    return [(a, b) for a, b in runs]


def _restore(ahead: Ahead) -> None:
    """The moments the part updated put back (those it kept: none if it failed before)."""
    if not ahead.kept:
        return
    flat, saved = ahead.flat, _saved_moments(ahead.flat)
    for start, stop in ahead.runs:
        np.copyto(flat.exp_avg[start:stop], saved[0][start:stop])
        np.copyto(flat.exp_avg_sq[start:stop], saved[1][start:stop])


def _shift(rows: slice, start: int) -> slice:
    return slice(start + rows.start, start + rows.stop)


def _update(optimizer: Any, flat: Any, s: slice, t: float) -> None:
    """Adam's update of the flat places s at step t (`_flat_step`'s, on those places)."""
    optimizer.update_places(flat.grad[s], flat.exp_avg[s], flat.exp_avg_sq[s], flat.work[s], t)


def _saved_moments(flat: Any) -> tuple[np.ndarray, np.ndarray]:
    """Where the part keeps the moments it updates, made once per flat buffer."""
    saved = getattr(flat, "saved_moments", None)
    if saved is None:
        saved = flat.saved_moments = (np.empty_like(flat.exp_avg), np.empty_like(flat.exp_avg_sq))
    return saved
