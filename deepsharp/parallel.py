"""Both cores for one training step: the batch in two halves on two Python threads.

numpy parallelises only its BLAS calls, so a step of many small products and elementwise passes
leaves the second core mostly idle. Inside `data_parallel(2)`, `fit` instead runs every batch as
two shares of rows, one on the calling thread and one on a worker thread, each forward and back
with BLAS at one thread; the loss of the whole batch is the two shares' losses weighted by their
rows, and the parameters' gradients are the two shares' gradients summed (first share + second).

    from deepsharp.parallel import data_parallel
    with data_parallel(2):
        network.fit(x, y, loss=CrossEntropy(), optimizer=Adam(1e-3), batch_size=64)

What it changes, and nothing else:
- **Threads:** one worker thread (made on first use and kept, a daemon) beside the caller.
  numpy releases the GIL inside BLAS and inside elementwise loops over large arrays, so the two
  shares overlap there; Python and autograd bookkeeping still take turns.
- **BLAS threads:** set to 1 (threadpoolctl, on numpy's BLAS) while the `with` block runs and put
  back as they were when it ends; the environment (OPENBLAS_NUM_THREADS and the like) is never
  touched. At 1 thread there are no idle BLAS workers: OpenBLAS's idle workers otherwise spin
  after each call (7 to 100 ms of CPU after a product, measured here by load), CPU the other
  share needs.
- **Numbers:** the same as one pass over the whole batch up to float summation order (a product
  over 32 rows plus one over 32 rows, against one over 64): the tests hold parameters after
  training steps to 1e-5 relative. Random draws (dropout, spatial dropout, Gaussian noise) are the
  rows of the whole batch's draw (`Run.draw`), so both halves draw what one pass draws.

Only a `Network` whose layers treat each example on its own can be split this way: a layer that
mixes the examples of a batch (batch normalisation's batch statistics) would compute other
numbers, and a Module written as code cannot be vouched for; both are refused with an error
naming why. `threadpoolctl` is the optional extra `deepsharp[parallel]`.

`data_parallel(2, split="kernels")` splits the work the other way: one pass over the whole batch
on the calling thread, as at one thread, while the largest kernels hand half of their own work
to the worker (deepsharp.tensors.ops.two_threads): `conv_relu_max_pool`'s Winograd runs (forward
and back, the kernel's gradient summed run by run in order), its direct product (split where
OpenBLAS's blocks of rows meet), its max, bias, relu and gradient routing (row by row), a large
dense layer's two gradient products (the input's on the worker) and Adam's flat update
(elementwise). Every operation is the one thread's, on the same numbers in
the same order, so the results are one thread's bit for bit (tests/deepsharp/test_parallel.py)
with numpy's OpenBLAS (its Haswell and SkylakeX kernels); another BLAS may round the rows
of the split direct product otherwise, a float rounding (held there to 1e-6 relative),
any network can run so (nothing is split across examples), and the Python and autograd work runs
once, not once per share; what is not split (other layers, Python) runs on one core. Adam's
update is split under either split, outside the shares.
"""

from __future__ import annotations

import contextlib
from typing import Any, Callable, Iterator

import numpy as np

from deepsharp.errors import SpecError, TrainingError
from deepsharp.module import Module
from deepsharp.run import current_run, running
from deepsharp.tensors import Tensor
from deepsharp.tensors.autograd import leaf_sink
from deepsharp.tensors.ops.two_threads import SPLITS, in_share, on_worker, split_var, threads_var

# layers whose training pass mixes the examples of a batch: a share would see other statistics
MIXES_EXAMPLES = frozenset({"batch_norm"})

_threads = threads_var

Pass = Callable[[slice], tuple[Tensor, Any]]


@contextlib.contextmanager
def data_parallel(threads: int = 2, split: str = "batch") -> Iterator[None]:
    """Train on `threads` cores (1 or 2) inside the block, splitting each batch in two shares
    of rows (`split="batch"`) or the largest kernels' work (`split="kernels"`: the numbers of one
    thread, bit for bit with OpenBLAS's Haswell and SkylakeX kernels); see the module's docstring."""
    if threads not in (1, 2) or isinstance(threads, bool):
        raise SpecError(f"data_parallel: threads must be 1 or 2, received {threads!r}")
    if split not in SPLITS:
        raise SpecError(f"data_parallel: split must be one of {', '.join(SPLITS)}, received "
                        f"{split!r}")
    if threads == 1:
        yield
        return
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        raise SpecError("data_parallel: two threads need threadpoolctl to hold numpy's BLAS at "
                        "one thread per share (pip install 'deepsharp[parallel]')") from None
    with threadpool_limits(limits=1, user_api="blas"):
        token, split_token = _threads.set(threads), split_var.set(split)
        try:
            yield
        finally:
            split_var.reset(split_token)
            _threads.reset(token)


def threads() -> int:
    """How many threads a training step uses here (1 outside `data_parallel`)."""
    return _threads.get()


def check_splittable(module: Module) -> None:
    """Refuse a module whose numbers would change if its batch were split."""
    from deepsharp.network import Network

    if not isinstance(module, Network):
        raise TrainingError(f"data_parallel: only a Network (a lowered Sequential) can be split "
                            f"across threads; a {type(module).__name__} written as code may mix "
                            f"the examples of a batch, which splitting would change")
    for name, child in module.named_modules():
        kind = getattr(getattr(child, "spec", None), "kind", None)
        if kind in MIXES_EXAMPLES:
            raise TrainingError(f"data_parallel: layer {name} ({kind}) mixes the examples of a "
                                f"batch in training; splitting the batch would change its "
                                f"numbers. Train it on one thread")


def one_thread() -> bool:
    """Whether a batch's forward and backward run whole on the calling thread (not in shares)."""
    return _threads.get() == 1 or split_var.get() == "kernels"


def forward_backward(module: Module, run_rows: Pass, size: int) -> tuple[float, Any]:
    """Forward and backward of one batch of `size` rows: (the loss, what the pass returned).

    `run_rows(rows)` runs the forward pass on those rows of the batch and returns the loss (a mean
    over them) and a payload: arrays with a row per example, numbers that are means over the rows,
    in dicts and tuples. Two shares' payloads are joined (arrays concatenated, numbers weighted by
    rows). Leaf gradients accumulate into `.grad` as one `backward` would.
    """
    if one_thread() or size < 2:
        value, payload = run_rows(slice(0, size))
        value.backward()
        return float(value._data), payload
    check_splittable(module)
    run = current_run()
    half = (size + 1) // 2
    shares = (slice(0, half), slice(half, size))
    other = on_worker(_share, run, run_rows, shares[1], size)
    mine = _share(run, run_rows, shares[0], size)
    theirs = other.result()
    _merge(mine[2], theirs[2])
    weights = (half / size, (size - half) / size)
    return mine[0] * weights[0] + theirs[0] * weights[1], _join(mine[1], theirs[1], weights)


def _join(first: Any, second: Any, weights: tuple[float, float]) -> Any:
    """Two shares' payloads as one batch's: arrays concatenated, numbers weighted by rows."""
    if isinstance(first, dict):
        return {key: _join(first[key], second[key], weights) for key in first}
    if isinstance(first, (tuple, list)):
        return type(first)(_join(a, b, weights) for a, b in zip(first, second))
    if isinstance(first, np.ndarray):
        return np.concatenate([first, second])
    if isinstance(first, float):
        return first * weights[0] + second * weights[1]
    return first


def _share(run: Any, run_rows: Pass, rows: slice, size: int):
    """One share's pass: forward, and backward weighted by its share of the rows, into a sink."""
    sink: dict[int, tuple[Tensor, np.ndarray]] = {}
    token, share_token = leaf_sink.set(sink), in_share.set(True)
    try:
        with running(run.random, run.step, (rows, size)):
            value, payload = run_rows(rows)
        value.backward(np.asarray((rows.stop - rows.start) / size, value.dtype))
    finally:
        in_share.reset(share_token)
        leaf_sink.reset(token)
    return float(value._data), payload, sink


def _merge(first: dict, second: dict) -> None:
    """Leaf gradients: the first share's plus the second's, accumulated into `.grad`; a sum
    into an empty `.grad` is written in the parameter's place in its optimizer's gradient buffer
    when it has one (`_grad_home`, as a backward rule's `grad_out` is), so the step reads it
    there instead of copying it in."""
    for key in first.keys() | second.keys():
        parts = [sink[key] for sink in (first, second) if key in sink]
        tensor = parts[0][0]
        if len(parts) == 1:
            total = parts[0][1]
        else:
            home = getattr(tensor, "_grad_home", None) if tensor.grad is None else None
            usable = (home is not None and home.shape == tensor.shape
                      and home.dtype == parts[0][1].dtype == parts[1][1].dtype)
            total = np.add(parts[0][1], parts[1][1], out=home if usable else None)
            if usable:
                tensor._grad_home = None  # used once, as autograd does
        tensor.grad = total if tensor.grad is None else tensor.grad + total
