"""Basic indexing of tensors (integers, slices, None, Ellipsis) as slice + reshape records;
indexing with integer and bool arrays in `advanced_index`."""

from __future__ import annotations

from typing import Any

import numpy as np

from deepsharp.errors import OpError
from deepsharp.tensors.advanced_index import getitem as advanced_getitem
from deepsharp.tensors.advanced_index import is_advanced


def getitem(tensor, index: Any):
    from deepsharp.tensors.tensor import apply

    if is_advanced(index):
        return advanced_getitem(tensor, index)
    if not isinstance(index, tuple):
        index = (index,)
    if sum(1 for i in index if i is Ellipsis) > 1:
        raise OpError("indexing: an index can only have a single ellipsis")
    used = sum(1 for i in index if i is not None and i is not Ellipsis)
    if used > tensor.ndim:
        raise OpError(f"indexing: too many indices ({used}) for a tensor of rank {tensor.ndim}")
    expanded: list[Any] = []
    for i in index:
        if i is Ellipsis:
            expanded.extend([slice(None)] * (tensor.ndim - used))
        else:
            expanded.append(i)
    expanded.extend([slice(None)] * (tensor.ndim - sum(1 for i in expanded if i is not None)))
    starts, stops, steps, out_shape = [], [], [], []
    axis = 0
    for i in expanded:
        if i is None:
            out_shape.append(1)
            continue
        size = tensor.shape[axis]
        if isinstance(i, slice):
            b, e, s = i.indices(size)
            starts.append(b), stops.append(e), steps.append(s)
            out_shape.append(len(range(b, e, s)))
        elif isinstance(i, (int, np.integer)):
            k = int(i)
            if not -size <= k < size:
                raise OpError(f"indexing: index {k} is out of range for axis {axis} of size {size}")
            k %= size
            starts.append(k), stops.append(k + 1), steps.append(1)
        else:
            raise OpError(f"indexing: cannot index with {type(i).__name__}")
        axis += 1
    result = tensor
    full = all(b == 0 and e == n and s == 1
               for b, e, s, n in zip(starts, stops, steps, tensor.shape))
    if not full:
        # stops given as -1 by Python's slice.indices for an empty reversed run would wrap; keep
        # them as computed (numpy reads the same triple the same way)
        result = apply("slice", result, starts=tuple(starts), stops=tuple(
            e if e >= 0 else -(tensor.shape[a] + 1) for a, e in enumerate(stops)), steps=tuple(steps))
    if tuple(out_shape) != result.shape:
        result = apply("reshape", result, shape=tuple(out_shape))
    return result
