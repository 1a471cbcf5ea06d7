"""In-place writes: `x[...] = v`, `fill_`, `zero_`, `copy_`, `add_`, `sub_`, `mul_`, `div_` (and
`+=`, `-=`, `*=`, `/=`), and the `_` twins of the functions (`clamp_`, `masked_fill_`, `relu_`,
... `IN_PLACE` in tensor.py), as PyTorch has them.

A write nothing records (no gradient needed, no trace) writes into the storage and moves its
version counter, so a record that saved the old values refuses its backward (versions.py).

A write autograd or a trace needs (the tensor or the value requires gradients, or either is
traced) is recorded: the new values are computed by a primitive from a stand-in for the tensor as
it was (`x[...] = v` is `setitem`, `add_` is `add`, `x[mask] = v` is `where`), copied into the
storage, and the tensor takes that record as its history (it is *rebased*, PyTorch's
CopySlices). Earlier records keep sending gradients to the old history. A write into a view made by
reshape, transpose or a slice rebases the tensor it views too (the inverse view, or a `setitem`
of its region). Refused by name, never silently wrong:

- a leaf that requires gradients (a Parameter) written while gradients are recorded, as PyTorch
  refuses it (write under `no_grad()`, as optimizers do);
- a recorded write into a view of another kind (an expand, a detached alias) or with an index a
  graph cannot hold (integer arrays);
- a tensor whose storage was rebased through another tensor after it was made (versions.py).
"""

from __future__ import annotations

import contextlib
from typing import Any, Iterator

import numpy as np

from deepsharp.errors import OpError
from deepsharp.tensors import modes
from deepsharp.tensors.advanced_index import (
    arrays_adjacent, index_parts, is_advanced, torch_order,
)
from deepsharp.tensors.indexing import basic_index
from deepsharp.tensors.tensor import Tensor, _as_array, apply, as_tensor
from deepsharp.tensors.versions import check_current, describe, reads, refuse_write

# views whose base can be rebased from the view's new values, and how
_INVERSE_VIEWS = ("reshape", "transpose", "slice", "diagonal")


def _recorded(tensor: Tensor, value: Tensor) -> bool:
    """Whether autograd or a trace needs the write: the tensor, the value or a tensor the tensor
    is a view of requires gradients (while they are recorded), or any of them is traced."""
    bases = _bases(tensor)
    if modes.grad_enabled() and any(t.requires_grad for t in (tensor, value, *bases)):
        return True
    hook = modes.trace_hook()
    return hook is not None and hook.involves((tensor, value, *bases))


def _bases(tensor: Tensor) -> list[Tensor]:
    bases = []
    while tensor._view_of is not None:
        tensor = tensor._view_of[0]
        bases.append(tensor)
    return bases


def assign(tensor: Tensor, index: Any, value: Any, what: str) -> Tensor:
    """tensor[index] = value (numpy's meaning), recorded when it must be."""
    given = as_tensor(value, like=tensor._data)
    value = _without_leading_ones(given)
    if not _recorded(tensor, value):
        with _writable(tensor, what):
            parts = torch_order(index)
            if parts is None:
                tensor._data[_plain_index(index)] = _as_array(value._data)
            else:  # PyTorch's order of the selected values, not numpy's
                tensor._data[parts[0]][parts[1]] = _as_array(value._data)
        tensor._write(what)
        return tensor
    _check_writable(tensor, what)
    mask = _bool_mask(index)
    if mask is not None:
        return _rebase(tensor, _masked(tensor, mask, _cast(given, tensor, what), what), what)
    arrays = _index_arrays(index)
    if arrays is not None:  # x[i, j] = v: numpy's meaning is index_put's
        old = _stand_in(tensor, share=True)
        return _rebase(tensor, apply("index_put", old, _cast(value, tensor, what), *arrays,
                                     accumulate=0), what)
    if is_advanced(index):
        through = _through_a_view(tensor, index)
        if through is None:
            raise refuse_write(tensor, f"{what}: writing through boolean masks mixed with other "
                               f"indices is not recorded; write through integer arrays (with "
                               f"slices, integers and None), a boolean mask alone, or under "
                               f"no_grad()")
        view, arrays, region, order = through
        arranged = apply("transpose", apply("expand", _cast(value, tensor, what), shape=region),
                         perm=order)
        assign(view, arrays, arranged, what)
        return tensor
    starts, stops, steps, out_shape, kinds = basic_index(tensor.shape, index)
    value = _region_value(_cast(value, tensor, what), out_shape, kinds, tensor.shape, what)
    old = _stand_in(tensor, share=True)
    return _rebase(tensor, apply("setitem", old, value, starts=starts, stops=stops, steps=steps),
                   what)


def _through_a_view(tensor: Tensor, index: Any):
    """x[index] = v for integer arrays mixed with slices, integers, None and Ellipsis, as PyTorch
    means it (read as advanced_index.getitem reads it: `index_parts`, `arrays_adjacent`), as a
    write through a view: (view, arrays, region, order) where `view` is x with the basic parts
    applied (an integer, or a 0-d integer array, selects its axis first) and the arrays' axes
    moved first, so that view[arrays] = v' is index_put's write into the leading axes; `region`
    is the shape PyTorch's x[index] has (the arrays' broadcast block where the first array stood
    when they are next to each other, else first) and v' the value expanded to it with its block
    moved first (`order`). None when the index holds a boolean mask."""
    items = index if isinstance(index, tuple) else (index,)
    if any(isinstance(i, (bool, np.bool_)) or np.asarray(
            i._data if isinstance(i, Tensor) else i).dtype == np.bool_
           for i in items if isinstance(i, (Tensor, np.ndarray, list, bool, np.bool_))):
        return None
    # a 0-d index array is read as the integer it holds, so that the basic part is a view (a
    # trace refuses reading it, by name)
    parts = [("int", int(value._read("an index"))) if kind == "array" and not value.ndim
             else (kind, value) for kind, value in index_parts(tensor, tuple(items))]
    kinds = [kind for kind, _ in parts]
    basic = [slice(None) if kind == "array" else value for kind, value in parts]
    places, position = [], 0
    for kind, _ in parts:
        if kind == "array":
            places.append(position)
        position += kind in ("array", "slice", "none")
    view = tensor[tuple(basic)]
    arrays = tuple(value for kind, value in parts if kind == "array")
    others = [a for a in range(view.ndim) if a not in places]
    block = np.broadcast_shapes(*(tuple(a.shape) for a in arrays))
    first = places[0] if arrays_adjacent(kinds) else 0
    region = ([view.shape[a] for a in others[:first]] + list(block)
              + [view.shape[a] for a in others[first:]])
    width = len(block)
    order = (tuple(range(first, first + width)) + tuple(range(first))
             + tuple(range(first + width, len(region))))
    moved = apply("transpose", view, perm=tuple(places + others))
    return moved, arrays, tuple(region), order


def _without_leading_ones(value: Tensor) -> Tensor:
    """The value with its leading axes of size 1 dropped: broadcasting puts them back, so they
    never change where a write's values go, and PyTorch takes a value with more of them than the
    region written has axes (x[0] = v of shape (1,), v of shape (1, n) into n places), where
    numpy refuses some. Only axes that are 1 at every size (not symbolic ones) are dropped."""
    shape = value.shape
    lead = 0
    while lead < len(shape) and type(shape[lead]) is int and shape[lead] == 1:
        lead += 1
    return apply("reshape", value, shape=tuple(shape[lead:])) if lead else value


def update(tensor: Tensor, op: str, other: Any, what: str) -> Tensor:
    """tensor = op(tensor, other), written into tensor's storage (add_, mul_, ...)."""
    other = as_tensor(other, like=tensor._data)
    if not _recorded(tensor, other):
        from deepsharp.tensors.primitives import lookup

        result, _ = lookup(op).forward(tensor._data, other._data)
        with _writable(tensor, what):
            tensor._data[...] = _fits(tensor, Tensor._wrap(np.asarray(result)), what)._data
        tensor._write(what)
        return tensor
    _check_writable(tensor, what)
    # the stand-in keeps the old values where the rule reads them (mul_'s gradient of `other`)
    old = _stand_in(tensor, share=not reads(op, 0))
    return _rebase(tensor, _fits(tensor, apply(op, old, other), what), what)


def rewrite(tensor: Tensor, what: str, fn: Any, *operands: Any, **options: Any) -> Tensor:
    """tensor = fn(tensor, *operands, **options), written into tensor's storage (clamp_,
    masked_fill_, relu_, ...): when recorded, fn's own primitives run on a stand-in for the tensor
    as it was (a copy: their rules may read it back), so the gradients are fn's."""
    others = [o for o in operands if isinstance(o, Tensor)]
    if not any(_recorded(tensor, o) for o in others or [Tensor(np.float32(0))]):
        result = fn(Tensor._wrap(tensor._data), *operands, **options)
        with _writable(tensor, what):
            tensor._data[...] = _fits(tensor, result, what)._data
        tensor._write(what)
        return tensor
    _check_writable(tensor, what)
    old = _stand_in(tensor, share=False)
    return _rebase(tensor, _fits(tensor, fn(old, *operands, **options), what), what)


# -- the parts -----------------------------------------------------------------------------------
def _plain_index(index: Any) -> Any:
    if isinstance(index, Tensor):
        return index._read("an index")
    if isinstance(index, tuple):
        return tuple(i._read("an index") if isinstance(i, Tensor) else i for i in index)
    return index


def _index_arrays(index: Any) -> list[Tensor] | None:
    """The int64 index tensors of an index made of integer arrays (tensors, numpy arrays, lists)
    and integers alone, at least one of them an array (x[i] or x[i, j]: numpy's advanced
    indexing into the first axes); None for any other index."""
    items = index if isinstance(index, tuple) else (index,)
    found, any_array = [], False
    for item in items:
        if isinstance(item, (bool, np.bool_)) or item is None or item is Ellipsis \
                or isinstance(item, slice):
            return None
        if isinstance(item, (int, np.integer)):
            found.append(Tensor(np.asarray(item, np.int64)))
            continue
        if not isinstance(item, Tensor):
            try:
                item = np.asarray(item)
            except (TypeError, ValueError):
                return None
        if item.dtype.kind not in "iu":
            return None
        array = item if isinstance(item, Tensor) else Tensor(item)
        found.append(array if array.dtype == np.int64 else array.astype(np.int64))
        any_array = True
    return found if any_array else None


def _bool_mask(index: Any) -> Tensor | None:
    if isinstance(index, (Tensor, np.ndarray)) and index.dtype == np.bool_:
        return index if isinstance(index, Tensor) else Tensor(index)
    return None


@contextlib.contextmanager
def _writable(tensor: Tensor, what: str) -> Iterator[None]:
    try:
        yield
    except (ValueError, IndexError, TypeError) as error:  # numpy: a read-only (broadcast) view,
        # an index out of range, a value that does not broadcast to the place written
        raise OpError(f"{what}: cannot write into a tensor of shape {tensor.shape}: "
                      f"{error}") from None


def _check_writable(tensor: Tensor, what: str) -> None:
    """Refuse a recorded write into a leaf that requires gradients (or a view of one), into a view
    whose base cannot be rebased from it, or into a tensor whose history is stale."""
    check_current((tensor,), what)
    view, written = tensor._view_of, tensor
    while True:
        if modes.grad_enabled() and written.requires_grad and written.record is None:
            whose = "" if written is tensor else f"the tensor is a view of {describe(written)}: "
            raise refuse_write(tensor, (
                f"{what}: {whose}a leaf tensor that requires gradients (a Parameter, or one made "
                f"with requires_grad=True) cannot be written in place while gradients are "
                f"recorded (PyTorch: \"a leaf Variable that requires grad is being used in an "
                f"in-place operation\"); write under no_grad(), as optimizers do, or into a copy "
                f"(x.clone())"))
        if view is None:
            return
        base, op, _ = view
        if op not in _INVERSE_VIEWS:
            raise refuse_write(tensor, f"{what}: the tensor is a view ({op}) of {describe(base)}; "
                               f"a write into it cannot be recorded on that tensor (views made "
                               f"by reshape, transpose, slicing or diagonal can be written); "
                               f"write into a copy (x.clone())")
        if base.requires_grad and modes.grad_enabled() and written.record is None:
            raise refuse_write(tensor, f"{what}: the tensor is a view, made while gradients were "
                               f"not recorded (no_grad), of {describe(base)}, which requires "
                               f"them: PyTorch refuses writing into it while they are recorded; "
                               f"make the view outside no_grad(), or write into a copy")
        check_current((base,), what)
        view, written = base._view_of, base


def _cast(value: Tensor, tensor: Tensor, what: str) -> Tensor:
    """The value in the tensor's dtype, as numpy's assignment casts it."""
    if value.dtype == tensor.dtype:
        return value
    return apply("cast", value, to=tensor.dtype.str)


def _fits(tensor: Tensor, result: Tensor, what: str) -> Tensor:
    """The result of an in-place operation must have the tensor's shape, and a dtype castable to
    its own within the same kind (PyTorch refuses float results into integer tensors)."""
    if result.shape != tensor.shape:
        raise OpError(f"{what}: the result has shape {result.shape}, which does not fit the tensor "
                      f"written into, of shape {tensor.shape} (an in-place operation cannot "
                      f"broadcast the tensor itself)")
    if result.dtype != tensor.dtype:
        if not np.can_cast(result.dtype, tensor.dtype, "same_kind"):
            raise OpError(f"{what}: the result's type {result.dtype} cannot be written into a "
                          f"tensor of type {tensor.dtype} (as PyTorch refuses it)")
        return apply("cast", result, to=tensor.dtype.str)
    return result


def _region_value(value: Tensor, out_shape: tuple[int, ...], kinds: tuple[str, ...],
                  shape: tuple[int, ...], what: str) -> Tensor:
    """The value as setitem takes it: numpy broadcasts it to the indexed result's shape
    (`out_shape`); give it the tensor's rank, with 1 on axes taken by an integer."""
    vshape = value.shape
    if len(vshape) > len(out_shape) and any(n != 1 for n in vshape[:len(vshape) - len(out_shape)]):
        raise OpError(f"{what}: could not broadcast a value of shape {vshape} into the indexed "
                      f"region of shape {out_shape}")
    vshape = (1,) * (len(out_shape) - len(vshape)) + vshape[max(0, len(vshape) - len(out_shape)):]
    try:
        np.broadcast_shapes(vshape, out_shape)
    except ValueError:
        raise OpError(f"{what}: could not broadcast a value of shape {value.shape} into the "
                      f"indexed region of shape {out_shape}") from None
    region: list[int] = []
    position = 0
    for kind in kinds:
        if kind == "int":
            region.append(1)
            continue
        if kind == "slice":
            region.append(vshape[position])
        position += 1  # a new axis (None) takes one axis of the value, of size 1
    if tuple(region) != value.shape:
        value = apply("reshape", value, shape=tuple(region))
    return value


def _masked(tensor: Tensor, mask: Tensor, value: Tensor, what: str) -> Tensor:
    """tensor[mask] = value as where(mask, value, tensor): the mask covers the leading axes; the
    value is one value, or one per trailing position (a value per selected row is data-dependent
    and refused)."""
    if mask.shape != tensor.shape[:mask.ndim]:
        raise OpError(f"{what}: a boolean mask of shape {mask.shape} does not cover the leading "
                      f"axes of a tensor of shape {tensor.shape}")
    trailing = tensor.shape[mask.ndim:]
    vshape = value.shape
    if len(vshape) > len(trailing) and vshape[0] == 1:
        vshape = vshape[1:]
    try:
        fits = len(vshape) <= len(trailing) and np.broadcast_shapes(vshape, trailing) == trailing
    except ValueError:
        fits = False
    if not fits:
        raise OpError(f"{what}: a value of shape {value.shape} written through a boolean mask is "
                      f"recorded only when it is one value or one per trailing position "
                      f"{trailing} (a value per selected element depends on the mask's values)")
    if vshape != value.shape:
        value = apply("reshape", value, shape=vshape)
    if mask.ndim < tensor.ndim:
        mask = apply("reshape", mask, shape=mask.shape + (1,) * (tensor.ndim - mask.ndim))
    return apply("where", mask, value, _stand_in(tensor, share=True))


def _stand_in(tensor: Tensor, *, share: bool) -> Tensor:
    """A tensor standing for `tensor` as it is before the write: its history, and its storage
    (shared when the operation never reads it back, else a copy the write leaves alone). Nothing
    but the write's own record ever holds it."""
    old = Tensor._wrap(tensor._data if share else tensor._data.copy())
    old.record, old.index, old.requires_grad = tensor.record, tensor.index, tensor.requires_grad
    hook = modes.trace_hook()
    if hook is not None:
        hook.on_alias(tensor, old, "the value before an in-place write")
    return old


def _rebase(tensor: Tensor, result: Tensor, what: str) -> Tensor:
    """Write `result` into the tensor's storage and give it `result`'s history; then the same for
    every tensor it is a view of (their storage already holds the new values). Any other tensor
    sharing the storage keeps a history that no longer matches: it is stale (versions.py)."""
    with _writable(tensor, what):
        tensor._data[...] = result._data
    counter = tensor._version_counter()
    counter.moved(what, rebased=True)
    _take(tensor, result, counter.rebases, what)
    written = tensor
    while written._view_of is not None:
        base, op, attrs = written._view_of
        _take(base, _inverse(written, base, op, attrs), counter.rebases, what)
        written = base
    return tensor


def _take(tensor: Tensor, result: Tensor, rebases: int, what: str) -> None:
    tensor.record, tensor.index, tensor.requires_grad = (result.record, result.index,
                                                         result.requires_grad)
    tensor._seen = rebases
    hook = modes.trace_hook()
    if hook is not None:
        hook.on_alias(result, tensor, what)


def _inverse(view: Tensor, base: Tensor, op: str, attrs: dict) -> Tensor:
    """The base's new value from its view's (which already sits in the base's storage)."""
    if op == "reshape":
        return apply("reshape", view, shape=base.shape)
    if op == "transpose":
        return apply("transpose", view, perm=tuple(int(p) for p in np.argsort(attrs["perm"])))
    if op == "diagonal":
        from deepsharp.tensors.api.select import diagonal_put  # (the api builds on this module)

        return diagonal_put(_stand_in(base, share=True), view, **attrs)
    region = {k: attrs[k] for k in ("starts", "stops", "steps")}
    return apply("setitem", _stand_in(base, share=True), view, **region)


# the functions with an in-place twin `name_` (PyTorch's): the function's result written into the
# tensor (`rewrite`), with the function's values and gradients; add_, sub_, mul_ and div_ are
# Tensor's own (`update`)
IN_PLACE = ("clamp", "clip", "masked_fill", "relu", "sigmoid", "tanh", "exp", "log", "sqrt",
            "abs", "neg", "pow", "square", "floor", "ceil", "round", "trunc", "sign", "remainder",
            "fmod", "reciprocal", "sin", "cos", "rsqrt", "log1p", "erf", "tan", "asin", "acos",
            "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "lerp", "nan_to_num", "addmm",
            "scatter_add", "index_add", "scatter", "scatter_reduce", "index_put", "index_fill",
            "index_copy")


def _in_place_twin(name: str):
    def method(self: Tensor, *operands: Any, **options: Any) -> Tensor:
        return rewrite(self, f"{name}_()", getattr(type(self), name), *operands, **options)

    method.__name__ = method.__qualname__ = f"{name}_"
    method.__doc__ = f"`{name}` written into the tensor, as PyTorch's `{name}_`."
    return method


for _name in IN_PLACE:
    setattr(Tensor, f"{_name}_", _in_place_twin(_name))


# `x //= y`, `%=`, `**=`, `&=`, `|=`, `^=` write into x, as PyTorch's do: without these Python
# rebinds x to a new tensor, so a view of x, or another name for it, would not see the change
AUGMENTED = {"__ifloordiv__": ("__floordiv__", "//="), "__imod__": ("__mod__", "%="),
             "__ipow__": ("__pow__", "**="), "__iand__": ("__and__", "&="),
             "__ior__": ("__or__", "|="), "__ixor__": ("__xor__", "^=")}


def _augmented(name: str, operator: str, what: str):
    def method(self: Tensor, other: Any) -> Tensor:
        return rewrite(self, f"x {what} y", getattr(type(self), operator), other)

    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"`x {what} y` written into x, as PyTorch's."
    return method


for _name, (_operator, _what) in AUGMENTED.items():
    setattr(Tensor, _name, _augmented(_name, _operator, _what))
