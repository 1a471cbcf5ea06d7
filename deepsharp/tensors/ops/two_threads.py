"""The two threads of `data_parallel(2)` (deepsharp.parallel), as the kernels see them.

numpy has no threads of its own beside BLAS's: the library's second thread is one worker thread
(made on first use and kept for the process; its jobs queue in order), used only while the
user's code runs inside `data_parallel(2)`. It splits one of two ways:

- **batch** (the default): every batch in two shares of rows, one on the calling thread and one
  on the worker, each forward and back (deepsharp.parallel). A kernel then runs on one share, on
  one thread, and only sizes its runs for one core's cache (`split_batch`).
- **kernels**: one pass over the whole batch on the calling thread, as at one thread, whose
  largest kernels split their own independent work in two halves, one on the worker
  (`split_work`, `in_halves`, `both`): the same operations on the same numbers in the same order, so the
  same results, bit for bit, as one thread gives (a product split by rows: with OpenBLAS's
  Haswell and SkylakeX kernels, where the split falls on its blocks of rows and both halves
  take the whole's kernel; another BLAS may round it otherwise). Work that waits for the
  worker to be free (`defer`: the optimizer's update of the parameters whose gradients are
  final) starts where a kernel's next work runs on the caller alone (`idle_point`).

This module imports nothing from deepsharp: the kernels (deepsharp.tensors.ops) and
deepsharp.parallel both read it.
"""

from __future__ import annotations

import contextvars
import queue
import threading
from contextvars import ContextVar
from typing import Any, Callable, Sequence, TypeVar

SPLITS = ("batch", "kernels")

threads_var: ContextVar[int] = ContextVar("deepsharp_data_parallel", default=1)
split_var: ContextVar[str] = ContextVar("deepsharp_data_parallel_split", default="batch")
# set while a batch's share runs (on either thread): both threads are busy, nothing splits again
in_share: ContextVar[bool] = ContextVar("deepsharp_data_parallel_share", default=False)
# set while a kernel's half runs (on either thread): likewise
_in_half: ContextVar[bool] = ContextVar("deepsharp_data_parallel_half", default=False)
_JOBS: queue.SimpleQueue | None = None  # the worker's jobs, in order
# work waiting for the worker to be free (defer), handed over at the caller's next idle_point
_deferred: ContextVar["Deferred | None"] = ContextVar("deepsharp_deferred", default=None)
_STARTING = threading.Lock()
CALLER_SHARE = 0.5  # of in_halves' rows, the calling thread's

R = TypeVar("R")


class Job:
    """fn(*args) handed to the worker; `result()` waits for it and gives its value (or raises
    its error). A lock held until the worker is done: about half the hand-off time of a
    ThreadPoolExecutor's future (20-25 against 45-60 us a round trip, measured here), which a
    step pays 8 times."""

    __slots__ = ("_run", "_done", "_value", "_error")

    def __init__(self, run: Callable[[], Any]):
        self._run, self._done = run, threading.Lock()
        self._done.acquire()
        self._value = self._error = None

    def result(self) -> Any:
        with self._done:
            if self._error is not None:
                raise self._error
            return self._value

    def wait(self) -> None:
        """Until the worker is done with the job, an interrupt of the wait (Ctrl-C) waiting on
        (the job's value or error is left for `result`)."""
        while True:
            try:
                with self._done:
                    return
            except KeyboardInterrupt:
                continue


def _work(jobs: queue.SimpleQueue) -> None:
    while True:
        job = jobs.get()
        try:
            job._value = job._run()
        except BaseException as error:  # handed back to the thread that waits for it
            job._error = error
        job._done.release()


def on_worker(fn: Callable[..., R], *args: Any) -> Job:
    """fn(*args) on the worker thread (one, made on first use and kept for the process, a
    daemon), in a copy of this thread's context (the same modes: no_grad, float64, compiled
    kernels); its Job (`.result()`)."""
    global _JOBS
    if _JOBS is None:
        with _STARTING:
            if _JOBS is None:
                jobs: queue.SimpleQueue = queue.SimpleQueue()
                threading.Thread(target=_work, args=(jobs,), name="deepsharp-parallel",
                                 daemon=True).start()
                _JOBS = jobs
    context = contextvars.copy_context()
    job = Job(lambda: context.run(fn, *args))
    _JOBS.put(job)
    return job


def split_batch() -> bool:
    """This kernel runs on one share of a batch, on one of two threads working at once (inside
    `data_parallel(2)`, splitting batches)."""
    return in_share.get()


def _worker_idle() -> bool:
    return threads_var.get() == 2 and not in_share.get() and not _in_half.get()


def splitting_kernels() -> bool:
    """Inside `data_parallel(2, split="kernels")`, on the calling thread, the worker free."""
    return _worker_idle() and split_var.get() == "kernels"


class Deferred:
    """fn() for the worker once it is free: handed over at the caller's next `idle_point` (where
    what the caller does next, it does alone). fn must not depend on which thread runs it, nor on
    when (it reads nothing the caller may still write)."""

    __slots__ = ("_fn", "_job", "_closed")

    def __init__(self, fn: Callable[[], Any]) -> None:
        self._fn, self._job, self._closed = fn, None, False

    def _start(self) -> None:
        if self._job is None and not self._closed:
            self._job = on_worker(_half, lambda _: self._fn(), None)

    def settled(self) -> bool:
        """Whether fn ran: True once it has (waiting for the worker, raising fn's error),
        False when it was never handed over (and now never will be)."""
        self._closed = True
        if self._job is None:
            return False
        self._job.result()
        return True

    def wait(self) -> None:
        """Until fn is done, if it was handed over (`Job.wait`)."""
        self._closed = True
        if self._job is not None:
            self._job.wait()


def defer(fn: Callable[[], Any]) -> Deferred:
    """fn() as a Deferred: on the worker from the caller's next idle point inside
    `data_parallel(2, split="kernels")` (until then the caller's kernels keep handing halves to
    the worker: one queued behind fn would wait), else never."""
    deferred = Deferred(fn)
    _deferred.set(deferred if splitting_kernels() else None)
    return deferred


def idle_point() -> None:
    """A kernel's next work runs on the caller alone (one product, say): the worker takes the
    deferred work now, if there is some."""
    deferred = _deferred.get()
    if deferred is not None and splitting_kernels():
        _deferred.set(None)
        deferred._start()


def split_work(work: Callable[[Sequence], R], items: Sequence) -> list[R]:
    """[work(items)], or inside `data_parallel(2, split="kernels")` [work(first half),
    work(second half)], the second half on the worker while the caller does the first. For work
    whose items are independent (each writes its own rows); the caller combines the results in
    order, so the numbers do not depend on the split."""
    if not splitting_kernels() or len(items) < 2:
        return [work(items)]
    half = len(items) // 2  # the caller has the rest of the step to run: the worker the more
    other = on_worker(_half, work, items[half:])
    mine = _half(work, items[:half])
    return [mine, other.result()]


def splits_in_halves() -> bool:
    """`in_halves` would split its work here (inside `data_parallel(2)`, the worker idle)."""
    return _worker_idle()


def half_point(size: int, align: int = 1) -> int:
    """Where `in_halves` splits range(size): the caller's share, at a multiple of `align`."""
    return round(size * CALLER_SHARE / align) * align


def in_halves(work: Callable[[slice], None], size: int, align: int = 1) -> None:
    """work(rows) for the two halves of range(size) at once (split at `half_point`) inside
    `data_parallel(2)` (either split: the worker is idle while it runs), else
    work(slice(0, size)). For work that treats each row on its own (elementwise passes: the same
    numbers either way), such as Adam's flat update."""
    half = half_point(size, align)
    if not _worker_idle() or not 0 < half < size:
        work(slice(0, size))
        return
    other = on_worker(_half, work, slice(half, size))
    _half(work, slice(0, half))
    other.result()


def both(first: Callable[[], R], second: Callable[[], Any], worth: bool = True
         ) -> tuple[R, Any]:
    """(first(), second()): two independent computations (two products of one backward rule),
    the second on the worker while the caller runs the first inside `data_parallel(2)` (the
    worker idle) when they are `worth` a hand-off, else one after the other; each is the same
    computation either way."""
    if not worth or not _worker_idle():
        return first(), second()
    other = on_worker(_half, lambda _: second(), None)
    return _half(lambda _: first(), None), other.result()


def _half(work: Callable[[Any], R], part: Any) -> R:
    """One half, on either thread, with splitting turned off inside it: the other thread is
    busy with the other half (a half never splits again)."""
    token = _in_half.set(True)
    try:
        return work(part)
    finally:
        _in_half.reset(token)
