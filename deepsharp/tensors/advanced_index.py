"""Indexing with integer and bool arrays, as numpy and PyTorch read it.

`x[idx]`, `x[:, idx]`, `x[idx1, idx2]`, `x[mask]`: the integers, slices and None are applied first
(slice and reshape records), then one index array is a gather along its axis and several are one
`index_nd` record (ONNX GatherND) on the axes they index. Where the result's index axes go follows
PyTorch: in place of the indexed axes when the index arrays stand next to each other, else first,
an integer selecting its axis before (numpy, which counts integers among the arrays, puts
`x[0, :, i]`'s axes of i first; PyTorch after the slice).

A bool mask is turned into the integer positions of its True entries, which reads its values: the
result's size depends on them, so a trace refuses a mask computed from its inputs (data dependent,
naming this indexing). A constant mask traces as constant positions.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from deepsharp.errors import OpError

MASK_READ = ("indexing with a bool mask (x[mask]), whose result size depends on the mask's "
             "values,")


def is_advanced(index: Any) -> bool:
    from deepsharp.tensors.tensor import Tensor

    parts = index if isinstance(index, tuple) else (index,)
    return any(isinstance(p, (Tensor, np.ndarray, list)) or isinstance(p, (bool, np.bool_))
               for p in parts)


def _as_index(part: Any):
    """An array part as (kind, value): ("array", int64 Tensor) or ("mask", bool Tensor)."""
    from deepsharp.tensors.tensor import Tensor

    if isinstance(part, (bool, np.bool_)):
        raise OpError("indexing with a Python bool (x[True]) is not supported; index with a bool "
                      "tensor of the indexed axes' shape")
    tensor = part if isinstance(part, Tensor) else Tensor(np.asarray(part))
    if tensor.dtype == np.bool_:
        if tensor.ndim == 0:
            raise OpError("indexing with a 0-d bool tensor is not supported")
        return "mask", tensor
    if tensor.dtype.kind not in "iu":
        raise OpError(f"indexing with an array needs integers or bools, received {tensor.dtype}")
    return "array", tensor if tensor.dtype == np.int64 else tensor.astype(np.int64)


def index_parts(tensor, index: tuple) -> list[tuple[str, Any]]:
    """(kind, value) per indexed axis or new axis: masks become one array per axis they cover,
    the ellipsis whole slices."""
    from deepsharp.tensors.tensor import Tensor

    parts: list[tuple[str, Any]] = []
    for p in index:
        if p is None:
            parts.append(("none", None))
        elif p is Ellipsis:
            parts.append(("ellipsis", None))
        elif isinstance(p, slice):
            parts.append(("slice", p))
        elif isinstance(p, (int, np.integer)) and not isinstance(p, (bool, np.bool_)):
            parts.append(("int", int(p)))
        else:
            parts.append(_as_index(p))
    used = sum(p[1].ndim if p[0] == "mask" else 1 for p in parts
               if p[0] not in ("none", "ellipsis"))
    if sum(1 for p in parts if p[0] == "ellipsis") > 1:
        raise OpError("indexing: an index can only have a single ellipsis")
    if used > tensor.ndim:
        raise OpError(f"indexing: too many indices ({used}) for a tensor of rank {tensor.ndim}")
    out: list[tuple[str, Any]] = []
    axis = 0
    for kind, value in parts:
        if kind == "ellipsis":
            out.extend([("slice", slice(None))] * (tensor.ndim - used))
            axis += tensor.ndim - used
        elif kind == "mask":
            covered = tensor.shape[axis:axis + value.ndim]
            if value.shape != covered:
                raise OpError(f"indexing: the bool mask {value.shape} must have the shape of the "
                              f"axes it indexes, {covered}")
            positions = np.nonzero(value._read(MASK_READ))
            out.extend(("array", Tensor(p.astype(np.int64))) for p in positions)
            axis += value.ndim
        else:
            out.append((kind, value))
            axis += kind != "none"
    out.extend([("slice", slice(None))] * (tensor.ndim - axis))
    return out


def getitem(tensor, index: Any):
    from deepsharp.tensors.indexing import getitem as basic_getitem
    from deepsharp.tensors.tensor import apply

    parts = index_parts(tensor, index if isinstance(index, tuple) else (index,))
    # a 0-d index array selects its axis, as an integer does
    kinds = [kind if kind != "array" or value.ndim else "int" for kind, value in parts]
    basic, arrays, position = [], [], 0
    for kind, value in parts:
        if kind == "array":
            basic.append(slice(None))
            arrays.append((position, value))
        else:
            basic.append(None if kind == "none" else value)
        position += kind in ("array", "slice", "none")
    y = basic_getitem(tensor, tuple(basic))
    if not arrays:
        return y
    first = arrays[0][0]
    # in place when next to each other (after the slices and new axes before them), else first
    target = sum(1 for kind in kinds[:kinds.index("array")] if kind in ("slice", "none")) \
        if "array" in kinds and arrays_adjacent(kinds) else 0
    if len(arrays) == 1:
        result = apply("gather", y, arrays[0][1], axis=first)
        return _move_block(result, first, arrays[0][1].ndim, target)
    axes = [a for a, _ in arrays]
    order = axes + [a for a in range(y.ndim) if a not in axes]
    moved = y if order == list(range(y.ndim)) else apply("transpose", y, perm=tuple(order))
    result = apply("index_nd", moved, *(i for _, i in arrays))
    return _move_block(result, 0, result.ndim - (y.ndim - len(arrays)), target)


def arrays_adjacent(kinds: list[str]) -> bool:
    """Whether the index arrays stand next to each other, as PyTorch reads it: an integer (or a
    0-d integer tensor) selects its axis first, so only a slice or None between two arrays parts
    them. numpy counts integers among the arrays (`x[0, :, i]` puts i's axes first there, after
    the slice in PyTorch)."""
    arrays = [k for k, kind in enumerate(kinds) if kind == "array"]
    return not arrays or all(kind not in ("slice", "none")
                             for kind in kinds[arrays[0]:arrays[-1] + 1])


def torch_order(index: Any):
    """`index` as two numpy indices applied one after the other, `a[first][rest]`, that mean
    what PyTorch means by `a[index]`: the integers (and 0-d integer arrays) select their axes
    first; None when numpy's own reading is PyTorch's (no integer beside an index array)."""
    from deepsharp.tensors.tensor import Tensor

    items = index if isinstance(index, tuple) else (index,)
    arrays = [np.asarray(i._data if isinstance(i, Tensor) else i)
              if isinstance(i, (Tensor, np.ndarray, list)) else None for i in items]
    selects = [isinstance(i, (int, np.integer)) and not isinstance(i, (bool, np.bool_))
               or a is not None and a.ndim == 0 and a.dtype.kind in "iu"
               for i, a in zip(items, arrays)]
    if not any(selects) or not any(a is not None and a.ndim for a in arrays):
        return None
    first, rest = [], []
    for item, array, select in zip(items, arrays, selects):
        if select:
            first.append(int(item) if array is None else int(array))
        elif array is not None:
            # (a mask covers its axes; a 0-d one covers none and adds one, numpy's reading)
            first.extend([slice(None)] * (array.ndim if array.dtype == np.bool_ else 1))
            rest.append(array)
        else:
            first.append(item)
            rest.append(Ellipsis if item is Ellipsis else slice(None))
    return tuple(first), tuple(rest)


def _move_block(result, start: int, width: int, target: int):
    """The `width` axes from `start` moved to begin at `target`."""
    from deepsharp.tensors.tensor import apply

    if start == target:
        return result
    rest = [a for a in range(result.ndim) if not start <= a < start + width]
    block = list(range(start, start + width))
    order = rest[:target] + block + rest[target:]
    return apply("transpose", result, perm=tuple(order))
