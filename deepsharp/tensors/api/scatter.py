"""Writing entries by index, as PyTorch: `scatter`/`scatter_add`/`scatter_reduce` along one dim
elementwise (one primitive, `scatter_reduce`, ONNX ScatterElements), `index_put` by index arrays
into the first axes (ONNX ScatterND), and `index_add`/`index_fill`/`index_copy`, which write whole
slices along a dim through the two. Where an index repeats a position, the last write wins
(PyTorch's CPU order, and ONNX Runtime's), unless the writes add up."""

from __future__ import annotations

from typing import Any

import numpy as np

from deepsharp.errors import OpError
from deepsharp.tensors import keywords as kw
from deepsharp.tensors.api.arithmetic import is_one
from deepsharp.tensors.api.build import full_like
from deepsharp.tensors.api.select import _index, fill_value
from deepsharp.tensors.ops.index import SCATTER_REDUCTIONS, SUM
from deepsharp.tensors.symint import live
from deepsharp.tensors.tensor import Tensor, apply, as_tensor


def _scatter(op: str, x: Tensor, dim: Any, index: Any, src: Any, reduce: str,
             include_self: Any) -> Tensor:
    index = _index(op, index)
    if isinstance(src, Tensor):
        if src.dtype != x.dtype:
            raise OpError(f"{op}: src must have the input's dtype {x.dtype}, received {src.dtype} "
                          f"(PyTorch refuses it too)")
    elif isinstance(src, (int, float, bool, np.number)) and not live(src):
        # a number: the value written at every position of index (PyTorch's `value`)
        src = full_like(index, src, x.dtype)  # (index's shape, symbolic axes included)
    else:
        raise OpError(f"{op}: src must be a tensor or a number, received {type(src).__name__}")
    return apply("scatter_reduce", x, index, src, axis=kw.axis(op, dim, x.ndim),
                 reduce=SCATTER_REDUCTIONS[reduce],
                 include_self=int(kw.flag(op, "include_self", include_self)))


def _tensor_src(op: str, src: Any) -> Tensor:
    """src as a tensor (a numpy array is made one); a number or anything else is refused, as
    PyTorch refuses it here."""
    if isinstance(src, np.ndarray):
        return as_tensor(src)
    if not isinstance(src, Tensor):
        raise OpError(f"{op}: src must be a tensor, received {type(src).__name__}")
    return src


def scatter(x: Tensor, dim: Any, index: Any, src: Any = None, *, value: Any = None,
            reduce: str | None = None) -> Tensor:
    """PyTorch's scatter: x with src[i][j] written at x[i][index[i][j]] for dim 1 (src a tensor,
    or a number `value` written everywhere index points); where index repeats a position, the
    last write wins. reduce="add" adds instead (the deprecated form of scatter_add);
    "multiply" is refused."""
    if (src is None) == (value is None):
        raise OpError("scatter: give src (a tensor or a number) or value, not both nor neither")
    if reduce not in (None, "add"):
        raise OpError(f"scatter: reduce={reduce!r} is not supported; reduce=None or 'add' (a "
                      f"product of scattered values is not)")
    return _scatter("scatter", x, dim, index, value if src is None else src,
                    "none" if reduce is None else "sum", True)


def scatter_add(x: Tensor, dim: Any, index: Any, src: Any) -> Tensor:
    """PyTorch's scatter_add: x with src[i][j] added at x[i][index[i][j]] for dim 1 (repeats add
    up); index has x's rank, no larger a size than src's, nor x's on the other axes."""
    return _scatter("scatter_add", x, dim, index, _tensor_src("scatter_add", src), "sum", True)


def scatter_reduce(x: Tensor, dim: Any, index: Any, src: Any, reduce: str, *,
                   include_self: bool = True) -> Tensor:
    """PyTorch's scatter_reduce: src[i][j] combined into x[i][index[i][j]] for dim 1 by reduce
    ("sum", "mean", "amax" or "amin"), with x's own value unless include_self=False (then a
    position index names holds only what is scattered there). Positions index never names keep
    x's value. An integer mean floors, as PyTorch's. "prod" is refused."""
    if reduce not in ("sum", "mean", "amax", "amin"):
        raise OpError(f"scatter_reduce: reduce must be 'sum', 'mean', 'amax' or 'amin', received "
                      f"{reduce!r}" + (" (a product of scattered values is not supported)"
                                       if reduce == "prod" else ""))
    return _scatter("scatter_reduce", x, dim, index, _tensor_src("scatter_reduce", src), reduce,
                    include_self)


def index_put(x: Tensor, indices: Any, values: Any, accumulate: bool = False) -> Tensor:
    """PyTorch's index_put: x with values written at x[indices] (a tuple of integer index tensors
    for x's first axes, broadcast together; values broadcast to the positions they pick). Where a
    position repeats, the last write wins, or with accumulate=True all of them add up. Bool masks
    are refused here: `masked_fill`, or `x[mask] = v`, write through one."""
    if not isinstance(indices, (tuple, list)) or not indices or len(indices) > x.ndim:
        raise OpError(f"index_put: indices must be a tuple of 1 to {x.ndim} index tensors, "
                      f"received {indices!r}")
    found = []
    for k, index in enumerate(indices):
        index = index if isinstance(index, Tensor) else Tensor(np.asarray(index))
        if index.dtype == np.bool_:
            raise OpError(f"index_put: indices[{k}] is a bool mask; write through it with "
                          f"masked_fill or x[mask] = value")
        found.append(_index("index_put", index))
    values = as_tensor(values, like=x._data)
    if values.dtype != x.dtype:
        raise OpError(f"index_put: values must have the input's dtype {x.dtype}, received "
                      f"{values.dtype} (PyTorch refuses it too)")
    return apply("index_put", x, values, *found,
                 accumulate=int(kw.flag("index_put", "accumulate", accumulate)))


def index_add(x: Tensor, dim: Any, index: Any, source: Any, *, alpha: Any = 1) -> Tensor:
    """PyTorch's index_add: x with alpha * source[..., i, ...] added at x[..., index[i], ...]
    along dim (index 1-d, as long as source's dim; repeats add up)."""
    index = _index("index_add", index)
    at = kw.axis("index_add", dim, x.ndim)
    source = as_tensor(source, like=x._data)
    if index.ndim != 1 or source.ndim != x.ndim or index.shape[0] != source.shape[at]:
        raise OpError(f"index_add: a 1-d index as long as source's dim {at}, received an index "
                      f"{tuple(index.shape)} and source {tuple(source.shape)}")
    spread = index.reshape(*[-1 if d == at else 1 for d in range(x.ndim)]).expand(*source.shape)
    if not is_one(alpha):
        source = apply("mul", source, alpha)
    return apply("scatter_reduce", x, spread, source, axis=at, reduce=SUM, include_self=1)


def _along_first(op: str, x: Tensor, dim: Any, index: Any, fill) -> Tensor:
    """fill(x with `dim` moved first, the 1-d index, dim): index_put along `dim`, moved back."""
    at = kw.axis(op, dim, x.ndim)
    index = _index(op, index)
    if index.ndim != 1:
        raise OpError(f"{op}: index must be 1-d, received shape {tuple(index.shape)}")
    moved = x.movedim(at, 0) if at else x
    done = fill(moved, index, at)
    return done.movedim(0, at) if at else done


def index_fill(x: Tensor, dim: Any, index: Any, value: Any) -> Tensor:
    """PyTorch's index_fill: x with `value` (a number or a 0-d tensor, taken in x's dtype) at
    every position of `dim` the 1-d index names; the gradient reaches x elsewhere (and a 0-d
    tensor value, summed over the filled places)."""
    value = fill_value("index_fill", x, value)
    return _along_first("index_fill", x, dim, index,
                        lambda moved, idx, at: index_put(moved, (idx,), value))


def index_copy(x: Tensor, dim: Any, index: Any, source: Any) -> Tensor:
    """PyTorch's index_copy: x with source's slices along `dim` written at the positions the
    1-d index names (source: x's shape with len(index) along dim, x's dtype); where the index
    repeats, the last write wins (PyTorch leaves it open)."""
    source = as_tensor(source, like=x._data)
    if source.dtype != x.dtype:
        raise OpError(f"index_copy: source must have the input's dtype {x.dtype}, received "
                      f"{source.dtype} (PyTorch refuses it too)")

    def fill(moved: Tensor, idx: Tensor, at: int) -> Tensor:
        wanted = list(x.shape)
        wanted[at] = idx.shape[0]
        if tuple(source.shape) != tuple(wanted):
            raise OpError(f"index_copy: source must have shape {tuple(wanted)} (the input's, "
                          f"with {idx.shape[0]} along dim {at}), received {tuple(source.shape)}")
        return index_put(moved, (idx,), source.movedim(at, 0) if at else source)

    return _along_first("index_copy", x, dim, index, fill)
