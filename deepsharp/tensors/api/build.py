"""New tensors: filled in another's shape (`zeros_like`, `ones_like`, `full_like`: a record when
that tensor is traced, so the graph follows its symbolic axes), or from numbers (`zeros`, `ones`,
`full`: constants; `arange`: a constant unless its end is a traced size)."""

from __future__ import annotations

from typing import Any

import numpy as np

from deepsharp.errors import OpError
from deepsharp.tensors import modes
from deepsharp.tensors.api.shape import sizes_of
from deepsharp.tensors.symint import live, plain
from deepsharp.tensors.tensor import Tensor, apply, as_tensor


def dtype_of(op: str, dtype: Any, default: Any) -> np.dtype:
    """numpy's reading of `dtype` ("float32", np.int64, bool), or `default`."""
    if dtype is None:
        return np.dtype(default)
    try:
        return np.dtype(dtype)
    except TypeError:
        raise OpError(f"{op}: dtype {dtype!r} is not a numpy dtype (give e.g. 'float32', "
                      f"np.int64 or bool)") from None


def full_like(x: Any, fill_value: Any, dtype: Any = None) -> Tensor:
    """`fill_value` in x's shape, in x's dtype unless `dtype` is given. It carries no gradient."""
    x = as_tensor(x)
    kind = dtype_of("full_like", dtype, x.dtype)
    try:
        value = np.asarray(fill_value, kind).item()
    except (TypeError, ValueError, OverflowError):
        raise OpError(f"full_like: fill_value must be a number, received {fill_value!r}") from None
    return apply("full_like", x, value=value, dtype=kind.str)


def zeros_like(x: Any, dtype: Any = None) -> Tensor:
    return full_like(x, 0, dtype)


def ones_like(x: Any, dtype: Any = None) -> Tensor:
    return full_like(x, 1, dtype)


def full(size: Any, fill_value: Any, dtype: Any = None) -> Tensor:
    """A constant of shape `size`; a float fill takes the default float type, as PyTorch. While a
    trace records, a size read from a symbolic axis (`zeros(x.shape[0], 5)`) makes a tensor the
    graph fills at run time (ConstantOfShape)."""
    value = np.asarray(plain(fill_value))
    default = modes.default_float() if value.dtype.kind == "f" else value.dtype
    if value.dtype.kind in "iu":
        default = np.int64
    return _filled(sizes_of("full", (size,)), fill_value, dtype_of("full", dtype, default))


def _filled(shape: tuple[int, ...], value: Any, dtype: np.dtype) -> Tensor:
    if any(live(s) for s in shape) or live(value):
        return apply("full", shape=shape, value=value, dtype=dtype.str)
    try:
        return Tensor(np.full(shape, value, dtype))
    except (ValueError, MemoryError, OverflowError) as error:
        raise OpError(f"cannot make a tensor of shape {shape}: {error}") from None


def zeros(*size: Any, dtype: Any = None) -> Tensor:
    return _filled(sizes_of("zeros", size), 0,
                   dtype_of("zeros", dtype, modes.default_float()))


def ones(*size: Any, dtype: Any = None) -> Tensor:
    return _filled(sizes_of("ones", size), 1,
                   dtype_of("ones", dtype, modes.default_float()))


def arange(start: Any, end: Any = None, step: Any = 1, dtype: Any = None) -> Tensor:
    """start, start + step, ... below `end` (0..start-1 with one argument): int64 for integer
    arguments, the default float type otherwise (PyTorch's rule).

    In a trace, a start or end read from a symbolic axis (`arange(x.shape[1])`, `arange(1, n)`,
    `arange(n // 2, n)`: SymInts) gives a result whose length follows that size: a `Range` the
    graph computes (docs/tracing.md); so does an end equal to a symbolic size's traced value (a
    plain number, read by its value as a reshape's sizes are). Otherwise the result is a
    constant."""
    if end is None:
        start, end = 0, start
    values = [v._read("arange()") if isinstance(v, Tensor) else v for v in (start, end, step)]
    if any(np.asarray(plain(v)).ndim for v in values):
        raise OpError(f"arange: start, end and step must be numbers, received {values!r}")
    if plain(values[2]) == 0:
        raise OpError("arange: step must not be zero")
    integral = all(np.asarray(plain(v)).dtype.kind in "iub" for v in values)
    default = np.int64 if integral else modes.default_float()
    start, end, step = (v if live(v) else np.asarray(v).item() for v in values)
    return apply("arange", start=start, stop=end, step=step,
                 dtype=dtype_of("arange", dtype, default).str)
