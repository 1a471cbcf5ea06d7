"""Compiled kernels (numba), an optional extra the user turns on: the same numbers, fewer passes.

    pip install 'deepsharp[speed]'           # numba
    from deepsharp.compiled import compiled
    with compiled():
        network.fit(...)

numpy stays the default path: without `compiled()` (or without numba) nothing here runs. Inside
it, these inner loops run as compiled passes instead of a dozen numpy calls each:

- Adam's update over its flat buffers (`deepsharp.optimizers`), 5x faster at an MLP's 270k
  parameters (0.15 ms against 0.8), written straight into each contiguous parameter (the update
  and the subtraction in one pass: 0.17 against 0.23 ms on a Xeon of 3 December);
- layer normalisation forward and back (`deepsharp.tensors.ops.norm`), one row at a time with
  numpy's pairwise row sums and in-order column sums (`deepsharp._kernels_rows`, used only where
  a probe finds numpy's sums): a transformer's (32, 64, 128) 0.57 -> 0.31 ms forward, 0.91 ->
  0.30 back;
- attention's softmax around numpy's exp (`deepsharp.tensors.ops.attention`): the scale and
  the row's largest score taken off in one pass, the division by the row's sum (numpy's
  pairwise order) in another, and back the softmax's rule in one (at (32, 4, 64, 32): forward
  2.62 -> 2.00 ms with its products);
- the LSTM's and the GRU's elementwise work of one step, forward (sigmoid gates, the new cell or
  state) and back through time (every gate's gradient; with lengths, numpy masks after each
  step's kernel), in `deepsharp.tensors.ops.recurrent`;
  the LSTM's whole step forward, its tanh included, in one pass, and (two rows or more and a
  state of two values or more, with lengths or without: the masking inside) the LSTM's and the
  GRU's whole sequence forward and back in one call each that holds no GIL, so the two shares
  of `data_parallel(2)` run at once;
- GELU's forward pass with erf32 (`deepsharp.tensors.ops.activations`): 24 arithmetic passes in
  one; its backward pass's six arithmetic passes as two loops around numpy's exp;
- `conv_relu_max_pool`'s backward routing of each window's gradient to its first largest
  candidate (`deepsharp.tensors.ops.conv_pool`): 16 passes in one; and with a 2 x 2 pool on the
  direct path, the max, bias and relu in one pass that also keeps each window's first largest
  candidate (one byte), which the backward pass then routes by (relu's rule included), so the
  candidates (4 values a pooled value) are not read again nor kept;
- three of its Winograd transforms (`deepsharp.tensors.ops.winograd`, kernels in
  `deepsharp._kernels_winograd`): the input's, forward (8 passes in one, 1.9x), the candidates'
  gradients', back (8 in one, 1.8x), and the input gradient's scatter (2.1x); and its pool
  folded into the other two (`deepsharp._kernels_pool`): forward, the output's transform with
  the max, bias and relu (the candidates neither written nor kept, each window's first largest
  candidate kept instead), back, the routing with the candidates' gradients' transform.

Each kernel does numpy's float32 operations in numpy's order with no fast-math licence (no fused
multiply-add, no reassociation; `error_model="numpy"` only lets the loop vectorise), so its
results are bit-identical to the numpy path (a NaN made from two NaNs in a Winograd transform's
sum may carry the other one's payload and sign: LLVM may swap a sum's operands);
tests/deepsharp/test_compiled.py holds both paths to exact equality. Transcendental functions
stay numpy's calls (exp, erf; numba's own tanh is the scalar libm's, 8x slower than numpy's
vectorised one and not its numbers), except float32 tanh in the LSTM's and the GRU's kernels:
`deepsharp._tanh32` is numpy's own algorithm (SVML's table and fused multiply-adds), the same
bits for all 2^32 inputs, used only where a probe finds numpy's numbers. It runs 16 lanes at a
time on a CPU with AVX-512, 8 with AVX2, its table looked up by permutes (on a Zen 5: 0.25 and
0.78 ns a value, against np.tanh's 0.27 with its AVX-512 loop and 1.1 with its AVX2 one); on
other CPUs a plain loop, which vectorises with gathers for the table (3.3 ns a value there: AMD's
Zen cores gather slowly).
The whole-sequence kernels make each step's product by numpy's own BLAS (`deepsharp._blas`:
numpy's cblas_sgemm, called as numpy's matmul calls it, checked once).

Cost: numba 0.68 and llvmlite 0.50 are about 45 MB of wheels (210 MB installed) and install in
about 25 s; each kernel compiles on its first call in a process (about 2 s), then loads from
numba's cache beside this file.
"""

from __future__ import annotations

import contextlib
import functools
from contextvars import ContextVar
from typing import Any, Iterator

from deepsharp.errors import SpecError

_enabled: ContextVar[bool] = ContextVar("deepsharp_compiled", default=False)
_KERNELS: dict[str, Any] = {}


def available() -> bool:
    try:
        import numba  # noqa: F401
    except ImportError:
        return False
    return True


@contextlib.contextmanager
def compiled(enabled: bool = True) -> Iterator[None]:
    """Run the compiled kernels inside the block (numba must be installed)."""
    if enabled and not available():
        raise SpecError("compiled: the compiled kernels need numba (pip install "
                        "'deepsharp[speed]')")
    token = _enabled.set(bool(enabled))
    try:
        yield
    finally:
        _enabled.reset(token)


# Kernels computing tanh by numpy's own float32 algorithm (deepsharp._tanh32), and kernels making
# their products by numpy's own BLAS (deepsharp._blas, given its address): each runs only where
# that gives numpy's numbers (checked once per process), else the caller runs without it.
_WITH_TANH32 = frozenset({"lstm_step_forward", "lstm_forward_steps", "gru_forward_steps"})
# Kernels summing rows and columns in numpy's orders (deepsharp._kernels_rows): likewise.
_WITH_NUMPY_SUMS = frozenset({"layer_norm_forward", "layer_norm_backward", "softmax_divide",
                              "softmax_grad"})
_WITH_BLAS = frozenset({"lstm_forward_steps", "lstm_backward_steps", "gru_forward_steps",
                        "gru_backward_steps"})


def kernel(name: str) -> Any:
    """The compiled kernel `name` when `compiled()` is on, else None (the caller runs numpy)."""
    if not _enabled.get():
        return None
    if name not in _KERNELS:
        _KERNELS[name] = _load(name)
    return _KERNELS[name]


def _load(name: str) -> Any:
    from deepsharp import _blas, _kernels, _kernels_rows, _tanh32

    if name in _WITH_TANH32 and not _tanh32.matches_numpy():
        return None
    if name in _WITH_NUMPY_SUMS and not _kernels_rows.matches_numpy():
        return None
    found = getattr(_kernels, name)
    if name in _WITH_BLAS:
        blas = _blas.address()
        return functools.partial(found, blas) if blas else None
    return found
