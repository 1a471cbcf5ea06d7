"""Primitives that place values: `setitem` (x[...] = value as a function, what an in-place write
is recorded as) and `arange` (a range whose length the tracer may read as a symbolic size)."""

from __future__ import annotations

import numpy as np

from deepsharp.tensors.primitives import primitive, unbroadcast


def region(starts, stops, steps) -> tuple[slice, ...]:
    return tuple(slice(b, e, s) for b, e, s in zip(starts, stops, steps))


@primitive("setitem")
class SetItem:
    """`a` with a[starts:stops:steps] (one slice per axis, bounds as written) replaced by `value`,
    which has a's rank and broadcasts to the region (each axis the region's size or 1). The
    gradient of the region goes to `value` (summed where it broadcast), the rest to `a`: PyTorch's
    CopySlices."""

    def forward(a, value, *, starts, stops, steps):
        out = a.copy()
        out[region(starts, stops, steps)] = value
        return out, None

    def backward(grad, saved, a, value, *, starts, stops, steps):
        where = region(starts, stops, steps)
        ga = grad.copy()
        ga[where] = 0
        return ga, unbroadcast(grad[where], value.shape)


@primitive("arange", differentiable=False)
class Arange:
    """numpy's arange(start, stop, step) as `dtype` (a numpy dtype string). No inputs, no
    gradient."""

    def forward(*, start, stop, step, dtype):
        start, stop, step = (int.__int__(v) if isinstance(v, int) else v
                             for v in (start, stop, step))  # (a SymInt: its number)
        return np.arange(start, stop, step, dtype=np.dtype(dtype)), None


@primitive("full", differentiable=False)
class Full:
    """`value` in `shape`, as `dtype`: what `zeros`, `ones`, `full` and a size mixed into tensor
    arithmetic (`x / n`) are recorded as while a trace records, when a size or the value was
    read from a symbolic axis (a SymInt: the graph computes it). No inputs, no gradient."""

    def forward(*, shape, value, dtype):
        return np.full(tuple(int.__int__(s) for s in shape), int.__int__(value)
                       if isinstance(value, int) and not isinstance(value, bool) else value,
                       dtype=np.dtype(dtype)), None
