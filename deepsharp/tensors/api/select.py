"""Choosing entries by index, condition or order, as PyTorch: `gather(dim, index)` is elementwise
along dim (numpy's take_along_axis), `index_select(dim, index)` takes whole slices, `where` and
`masked_fill` choose by a bool condition, `topk`/`sort` give (values, indices), equal values in
their order."""

from __future__ import annotations

from typing import Any

import numpy as np

from deepsharp.errors import OpError
from deepsharp.tensors import keywords as kw
from deepsharp.tensors.api.reduce import ValuesIndices
from deepsharp.tensors.ops.index import SUM
from deepsharp.tensors.symint import live
from deepsharp.tensors.tensor import Tensor, apply, as_tensor


def _index(op: str, index: Any) -> Tensor:
    index = index if isinstance(index, Tensor) else Tensor(np.asarray(index))
    if index.dtype.kind not in "iu":
        raise OpError(f"{op}: index must hold integers, received {index.dtype}")
    return index if index.dtype == np.int64 else index.astype(np.int64)


def gather(x: Tensor, dim: Any, index: Any) -> Tensor:
    """PyTorch's gather: out[i][j] = x[i][index[i][j]] for dim 1; index has x's rank and no
    larger a size on the other axes. (It is not numpy's take, which is `index_select`.)"""
    index = _index("gather", index)
    at = kw.axis("gather", dim, x.ndim)
    if x.ndim == 0:  # PyTorch's: the value at every place of the index (of any rank), 0 alone
        return apply("gather", x.reshape(1), index.reshape(-1), axis=0).reshape(index.shape)
    return apply("take_along_axis", x, index, axis=at)


def take_along_axis(x: Tensor, indices: Any, axis: Any = None, *, dim: Any = None) -> Tensor:
    """numpy's take_along_axis (PyTorch's take_along_dim): as gather, the index broadcast
    against x on the other axes first."""
    index = _index("take_along_axis", indices)
    at = kw.one_dim("take_along_axis", dim, axis, x.ndim)
    if at is None:
        x, at = x.reshape(-1), 0
    if index.ndim != x.ndim:
        raise OpError(f"take_along_axis: indices of rank {index.ndim} for a tensor of rank "
                      f"{x.ndim}")
    shape = tuple(n if i == at else max(n, m) for i, (n, m) in enumerate(zip(index.shape, x.shape)))
    if index.shape != shape:  # broadcast by adding zeros made from x: a trace follows its axes
        zeros = apply("full_like", x.select(at, 0).unsqueeze(at), value=0, dtype="<i8")
        index = apply("add", index, zeros)
    if x.shape[:at] + x.shape[at + 1:] != shape[:at] + shape[at + 1:]:
        x = apply("expand", x, shape=shape[:at] + (x.shape[at],) + shape[at + 1:])
    return apply("take_along_axis", x, index, axis=at)


def index_select(x: Tensor, dim: Any, index: Any) -> Tensor:
    """The slices of `dim` at the positions of a 1-D `index` (numpy's take along an axis)."""
    index = _index("index_select", index)
    if index.ndim > 1:
        raise OpError(f"index_select: index must be 1-D, received shape {index.shape}")
    at = kw.axis("index_select", dim, x.ndim)
    if x.ndim == 0:  # PyTorch's: the value itself, for an index of one value (0 alone)
        if index._data.size != 1:
            raise OpError(f"index_select: the index of a 0-d tensor holds one value, received "
                          f"{index._data.size}")
        return apply("gather", x.reshape(1), index.reshape(-1), axis=0).reshape(())
    return apply("gather", x, index.reshape(-1), axis=at)


def where(condition: Any, x: Any = None, y: Any = None) -> Tensor:
    """x where the bool `condition` holds, else y (broadcast together); with the condition alone,
    PyTorch's `nonzero(condition, as_tuple=True)`."""
    if x is None and y is None:
        return nonzero(as_tensor(condition), as_tuple=True)
    if x is None or y is None:
        raise OpError("where: give both x and y, or neither (the condition alone: nonzero)")
    condition = as_tensor(condition)
    if condition.dtype != np.bool_:
        raise OpError(f"where: the condition must be a bool tensor, received {condition.dtype} "
                      f"(compare it first, e.g. x > 0)")
    return apply("where", condition, x, y)


def masked_fill(x: Tensor, mask: Any, value: Any) -> Tensor:
    """x with `value` where the bool `mask` holds, the two broadcast together (PyTorch's
    out-of-place masked_fill: a larger mask gives a larger result; `masked_fill_` writes into x
    and takes a mask that broadcasts to x alone); `value` is a number or a 0-d tensor, taken in
    x's dtype (its gradient is the sum over the filled places)."""
    mask = as_tensor(mask)
    if mask.dtype != np.bool_:
        raise OpError(f"masked_fill: the mask must be a bool tensor, received {mask.dtype}")
    return apply("where", mask, fill_value("masked_fill", x, value), x)


def fill_value(op: str, x: Tensor, value: Any) -> Tensor:
    """A fill's value as PyTorch takes it: a number (a bool too) or a 0-d tensor, in x's dtype
    (a number taken as it is, never through a float)."""
    if isinstance(value, Tensor):
        if value.ndim:
            raise OpError(f"{op}: value must be a number or a 0-d tensor, received shape "
                          f"{tuple(value.shape)}")
        return value if value.dtype == x.dtype else value.astype(x.dtype)
    try:
        if not isinstance(value, (bool, np.bool_)):
            kw.number(op, "value", value)
        return Tensor(np.asarray(value, dtype=x.dtype))
    except (TypeError, ValueError, OpError):
        raise OpError(f"{op}: value must be a number or a 0-d tensor, received {value!r}") \
            from None


def topk(x: Tensor, k: int, dim: Any = None, largest: bool = True, sorted: bool = True, *,
         axis: Any = None) -> ValuesIndices:
    """(values, indices) of the k largest (or smallest) entries along `dim`, largest first
    (smallest first when not `largest`); equal values keep their order."""
    at = kw.one_dim("topk", dim, axis, x.ndim, default=-1)
    if live(k):
        k.fixed(f"topk(k={k!r})", "a graph has a fixed number of entries where k is a number; "
                "to order the whole axis use sort")
    size = x.shape[at] if x.ndim else 1
    k = kw.integer("topk", "k", k)
    if not 0 <= k <= size:
        raise OpError(f"topk: k={k} is outside 0..{size} (the size of dim {at})")
    if x.ndim == 0:  # dim 0 or -1 of a 0-d tensor: (the value, index 0), as PyTorch
        if k == 0:
            raise OpError("topk: k=0 of a 0-d tensor (PyTorch gives the value itself, as for "
                          "k=1); give k=1")
        values, indices = topk(x.reshape(1), 1, 0, largest, sorted)
        return ValuesIndices(values.reshape(()), indices.reshape(()))
    values, indices = apply("topk", x, k=k, axis=at,
                            largest=int(kw.flag("topk", "largest", largest)))
    return ValuesIndices(values, indices)


def sort(x: Tensor, dim: Any = None, descending: bool = False, stable: bool = False, *,
         axis: Any = None) -> ValuesIndices:
    """(values, indices) sorted along `dim`; equal values always keep their order (PyTorch's
    stable=True, which its default allows)."""
    at = kw.one_dim("sort", dim, axis, x.ndim, default=-1)
    if x.ndim == 0:  # dim 0 or -1 of a 0-d tensor: (the value, index 0), as PyTorch
        values, indices = sort(x.reshape(1), 0, descending, stable)
        return ValuesIndices(values.reshape(()), indices.reshape(()))
    values, indices = apply("sort", x, axis=at,
                            descending=int(kw.flag("sort", "descending", descending)))
    return ValuesIndices(values, indices)


def argsort(x: Tensor, dim: Any = None, descending: bool = False, stable: bool = False, *,
            axis: Any = None) -> Tensor:
    return sort(x, dim, descending, stable, axis=axis).indices


def one_hot(ids: Tensor, num_classes: int = -1) -> Tensor:
    """int64 codes ids.shape + (num_classes,); num_classes -1 takes the largest id + 1 (read from
    the values, so a trace refuses it: give the number)."""
    ids = as_tensor(ids)
    num_classes = kw.integer("one_hot", "num_classes", num_classes)
    if num_classes == -1:
        values = ids._read("one_hot(num_classes=-1), which sizes the result by the largest id")
        num_classes = int(values.max()) + 1 if values.size else 0
    return apply("one_hot", ids, depth=int(num_classes))


def tril(x: Tensor, diagonal: int = 0) -> Tensor:
    """The lower triangle of the last two axes (from `diagonal`), zeros above."""
    return _trilu("tril", x, diagonal, 0)


def triu(x: Tensor, diagonal: int = 0) -> Tensor:
    return _trilu("triu", x, diagonal, 1)


def _trilu(op: str, x: Tensor, diagonal: int, upper: int) -> Tensor:
    if x.ndim < 2:
        raise OpError(f"{op}: needs a tensor of rank 2 or more, received rank {x.ndim}")
    return apply("trilu", x, upper=upper, k=kw.integer(op, "diagonal", diagonal))


def diagonal(x: Tensor, offset: Any = 0, dim1: Any = 0, dim2: Any = 1) -> Tensor:
    """PyTorch's diagonal: the entries x[..., i, i + offset, ...] over dims dim1 and dim2, as a
    last axis (offset > 0 above the main diagonal, < 0 below). Both dims must have fixed sizes in
    a trace (the diagonal's length is read from them)."""
    a, b = kw.axis("diagonal", dim1, x.ndim), kw.axis("diagonal", dim2, x.ndim)
    if a == b:
        raise OpError(f"diagonal: dim1 and dim2 must differ, received {dim1} and {dim2}")
    if isinstance(offset, bool) or not isinstance(offset, (int, np.integer)):
        raise OpError(f"diagonal: offset must be an integer, received {offset!r}")
    for axis in (a, b):  # the diagonal's length is read from them
        if live(x.shape[axis]):
            x.shape[axis].fixed(f"diagonal over axis {axis}",
                                "the diagonal's length would stay the traced one")
    moved = x.movedim((a, b), (-2, -1))
    rows, cols = moved._data.shape[-2:]
    first_row, first_col = max(-int(offset), 0), max(int(offset), 0)
    length = max(0, min(rows - first_row, cols - first_col))
    result = moved[..., np.arange(first_row, first_row + length),
                   np.arange(first_col, first_col + length)]
    attrs = {"offset": int(offset), "dim1": a, "dim2": b}
    return _as_view(result, x, np.diagonal(x._data, int(offset), a, b), "diagonal", attrs)


def _as_view(result: Tensor, x: Tensor, view: np.ndarray, op: str, attrs: dict) -> Tensor:
    """`result` (whose record computes it from x) made to hold `view`, the same values in x's
    own storage, as PyTorch's view: a write into either is seen by the other. Its record stays
    the composition that made it (autograd and a trace follow it); a recorded write into it
    gives x the history of `diagonal_put` (inplace.py), and a recorded write into x leaves it
    stale, refused when next used (versions.py)."""
    if x._data.flags.writeable:  # (numpy makes a diagonal read-only; x's storage is not)
        view.flags.writeable = True
    result._data = view
    counter = x._version_counter()
    result._counter, result._seen, result._view_of = counter, counter.rebases, (x, op, attrs)
    return result


def diagonal_put(base: Tensor, values: Tensor, *, offset: int, dim1: int, dim2: int) -> Tensor:
    """base with its diagonal (`diagonal(offset, dim1, dim2)`) replaced by values (..., length):
    the base's history after a recorded write through its diagonal (PyTorch's CopySlices: the
    written places' gradient goes to the values, the rest to base). The write is index_put's
    (the same as `x[i, j] = v`'s), the two axes moved first and back."""
    moved = base.movedim((dim1, dim2), (0, 1))
    length = values._data.shape[-1]
    steps = np.arange(length)
    rows, cols = (Tensor(steps + max(-offset, 0)), Tensor(steps + max(offset, 0)))
    written = apply("index_put", moved, values.movedim(-1, 0), rows, cols, accumulate=False)
    return written.movedim((0, 1), (dim1, dim2))


_diagonal = diagonal  # (diag's argument is named diagonal, as PyTorch's)


def diag(x: Tensor, diagonal: Any = 0) -> Tensor:
    """PyTorch's diag: of a matrix, its diagonal (offset `diagonal`); of a vector, the square
    matrix with it on that diagonal."""
    if x.ndim == 2:  # a copy, as PyTorch's diag (diagonal is the view)
        return _diagonal(x, diagonal, 0, 1).clone()
    if x.ndim != 1:
        raise OpError(f"diag: needs a vector or a matrix, received a tensor of rank {x.ndim}")
    if live(x.shape[0]):
        x.shape[0].fixed("diag of a vector", "the matrix's size would stay the traced one")
    n, k = x._data.shape[0], int(diagonal)
    size = n + abs(k)
    places = (np.arange(n) + max(-k, 0)) * size + np.arange(n) + max(k, 0)  # flat (row, col)
    empty = Tensor(np.zeros(size * size, x.dtype))
    return apply("scatter_reduce", empty, Tensor(places), x, axis=0, reduce=SUM,
                 include_self=1).reshape(size, size)


def nonzero(x: Tensor, *, as_tuple: Any = False) -> Any:
    """PyTorch's nonzero: the positions of x's non-zero entries (NaN is non-zero), in row-major
    order, as an int64 (count, rank) tensor, or with as_tuple=True one int64 tensor per axis. Its
    size is read from the values, so a trace refuses it; no gradient, as PyTorch has none."""
    kw.flag("nonzero", "as_tuple", as_tuple)
    values = x._read("nonzero(), whose result's size is read from the values")
    places = np.argwhere(values).astype(np.int64)
    if as_tuple:
        if x.ndim == 0:  # PyTorch's: a 0-d tensor answers as a 1-d one of one entry
            return (Tensor._wrap(np.zeros(len(places), np.int64)),)
        return tuple(Tensor._wrap(np.ascontiguousarray(places[:, k])) for k in range(x.ndim))
    return Tensor._wrap(places)


def argwhere(x: Tensor) -> Tensor:
    """PyTorch's argwhere: `nonzero(x)`."""
    return nonzero(x)


def masked_select(x: Tensor, mask: Any) -> Tensor:
    """PyTorch's masked_select: the entries of x where the bool mask holds (x and mask broadcast
    together), as a 1-d tensor in row-major order; the gradient goes back to those entries."""
    mask = as_tensor(mask)
    if mask.dtype != np.bool_:
        raise OpError(f"masked_select: the mask must be a bool tensor, received {mask.dtype}")
    try:
        shape = np.broadcast_shapes(tuple(x.shape), tuple(mask.shape))
    except ValueError:
        raise OpError(f"masked_select: the mask {tuple(mask.shape)} cannot be broadcast with the "
                      f"input {tuple(x.shape)}") from None
    x = x if tuple(x.shape) == shape else x.expand(*shape)
    mask = mask if tuple(mask.shape) == shape else mask.expand(*shape)
    return x[mask]


def unique(x: Tensor, sorted: Any = True, return_inverse: Any = False,
           return_counts: Any = False, dim: Any = None) -> Any:
    """PyTorch's unique: the distinct values in ascending order (also when sorted=False, where
    PyTorch leaves the order open), with the inverse (each entry's place among them, in the
    input's shape) and the counts when asked; with dim, the distinct slices along it. Its size is
    read from the values, so a trace refuses it. The values require gradients when x does, as
    PyTorch's, and a backward through them is refused (PyTorch has no derivative for unique)."""
    for name, value in (("sorted", sorted), ("return_inverse", return_inverse),
                        ("return_counts", return_counts)):
        kw.flag("unique", name, value)
    x._read("unique(), whose result's size is read from the values")
    axis = None if dim is None else kw.axis("unique", dim, x.ndim)
    results = apply("unique", x, axis=axis)
    chosen = [results[0]] + [r for r, wanted in zip(results[1:], (return_inverse, return_counts))
                             if wanted]
    return chosen[0] if len(chosen) == 1 else tuple(chosen)
