"""Version counters: how autograd knows a tensor it needs was changed in place (as PyTorch does).

Every write into a tensor's storage moves its storage's `Version`, which a view of the tensor (a
reshape, a transpose, a slice, `detach()`) shares with it. A `Record` notes the version of each
input when it is made; when `backward` reaches the record, an input whose values its backward rule
reads and whose version has moved since makes it raise `OpError`, naming the operation, the tensor
and the write, as PyTorch's "one of the variables needed for gradient computation has been modified
by an inplace operation" does. So does an output the record saved (exp, sigmoid and softmax keep
their own result) written in place afterwards.

A write that autograd (or a trace) records gives the written tensor a new history (it is *rebased*
onto the write's record) and moves `rebases`. Every other tensor sharing the storage keeps its old
history, which no longer matches its values: such a tensor is refused as an input of any recorded
operation (`check_current`).

`VALUES_READ` lists, for primitives whose backward rule reads only some inputs' values (or only
their shapes), which inputs it reads; a primitive not listed is taken to read every input, which
never misses a change (at worst it refuses where PyTorch would not).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterator, Sequence

import numpy as np

from deepsharp.errors import OpError

if TYPE_CHECKING:
    from deepsharp.tensors.tensor import Record, Tensor


class Version:
    """A storage's version counter, shared by every tensor viewing that storage."""

    __slots__ = ("version", "rebases", "last")

    def __init__(self) -> None:
        self.version = 0   # every write
        self.rebases = 0   # writes that gave one of the tensors a new history
        self.last = "an in-place write"  # what wrote last, for messages

    def moved(self, what: str, rebased: bool = False) -> None:
        self.version += 1
        self.rebases += rebased
        self.last = what


# Inputs whose values a primitive's backward rule reads (the others' shapes at most).
VALUES_READ: dict[str, tuple[int, ...]] = {
    "add": (), "sub": (), "neg": (), "reshape": (), "transpose": (), "slice": (), "expand": (),
    "concat": (), "copy": (), "cast": (), "sum": (), "mean": (), "setitem": (), "arange": (),
    "gather": (1,), "where": (0,),
    # shapes, indices or saved values only (PyTorch's backward keeps no more of them either)
    "cumsum": (), "pad": (), "roll": (), "tile": (), "trilu": (), "sign": (), "floor": (),
    "ceil": (), "round": (), "trunc": (), "avg_pool": (), "adaptive_avg_pool": (),
    "sort": (), "topk": (), "take_along_axis": (1,), "embedding": (1,),
}

# Inputs whose values a rule of any number of inputs never reads (the rest it may): index_nd's
# backward reads the indices, not the tensor indexed (PyTorch's IndexBackward keeps its shape).
VALUES_UNREAD: dict[str, tuple[int, ...]] = {"index_nd": (0,), "index_put": (0, 1)}


# Inputs whose values a rule reads only for the gradient of other inputs: x's values in x * w
# are needed only when w needs its gradient (as PyTorch saves them only then).
READ_FOR_OTHERS: dict[str, dict[int, tuple[int, ...]]] = {
    "mul": {0: (1,), 1: (0,)}, "matmul": {0: (1,), 1: (0,)},
}


def reads(op: str, index: int, needs: Sequence[bool] | None = None) -> bool:
    """Whether `op`'s backward rule reads the values of input `index` (given which inputs need
    their gradient, when known)."""
    others = READ_FOR_OTHERS.get(op, {}).get(index)
    if others is not None and needs is not None:
        return any(needs[j] for j in others)
    unread = VALUES_UNREAD.get(op)
    if unread is not None:
        return index not in unread
    read = VALUES_READ.get(op)
    return read is None or index in read


def _arrays(saved: Any) -> Iterator[np.ndarray]:
    if isinstance(saved, np.ndarray):
        yield saved
    elif isinstance(saved, (tuple, list)):
        for item in saved:
            yield from _arrays(item)


def saved_outputs(saved: Any, outs: Sequence[np.ndarray]) -> tuple[int, ...]:
    """The results whose storage the backward's saved values share (exp keeps its result)."""
    if saved is None:
        return ()
    kept = [saved] if isinstance(saved, np.ndarray) else list(_arrays(saved))
    found = []
    for i, o in enumerate(outs):
        for s in kept:
            if s is o or np.may_share_memory(s, o):
                found.append(i)
                break
    return tuple(found)


def share_views(tensors: Sequence["Tensor"], outs: Sequence[np.ndarray],
                results: Sequence["Tensor"], op: str, attrs: dict[str, Any]) -> None:
    """A result that is a view of an input's storage shares that input's counter, and keeps what
    it is a view of (`_view_of` = (base, op, attrs), as PyTorch's `._base`)."""
    for o, r in zip(outs, results):
        view = o.base is not None  # else only the input itself could share its storage
        for t in tensors:
            if o is t._data or (view and np.may_share_memory(o, t._data)):
                counter = t._version_counter()
                r._counter, r._seen, r._view_of = counter, counter.rebases, (t, op, attrs)
                break


def _made_by(tensor: "Tensor") -> str:
    record = tensor.record
    return f"made by {record.op}" if record is not None else "a leaf"


def describe(tensor: "Tensor") -> str:
    return f"a {tensor.dtype} tensor of shape {tuple(tensor.shape)} ({_made_by(tensor)})"


def refuse_write(tensor: "Tensor", message: str) -> OpError:
    """The error refusing a write or a use (`message` names it): a trace refuses it as an
    IN_PLACE_MUTATION when the tensor is traced."""
    from deepsharp.tensors import modes

    hook = modes.trace_hook()
    if hook is not None and hook.involves((tensor,)):
        hook.on_write(tensor, message)
    return OpError(message)


def check_current(tensors: Sequence["Tensor"], op: str) -> None:
    """Refuse an input whose storage was given a new history through another tensor after this
    one's was set: its recorded history no longer matches its values."""
    for t in tensors:
        counter = t._counter
        if counter is not None and t._seen != counter.rebases:
            raise refuse_write(t, (
                f"{op}: its input, {describe(t)}, shares its storage with a tensor that "
                f"{counter.last} wrote into after this one was made, so this one's recorded "
                f"history no longer matches its values; take a copy before writing "
                f"(v = x[...].clone()), or use the tensor written into"))


def check_saved(record: "Record") -> None:
    """At backward: refuse when a tensor whose values the record's backward rule needs was
    changed in place since the record was made."""
    needs = [edge[2] for edge in record.edges]
    for index, (t, seen) in enumerate(zip(record.inputs, record.versions)):
        counter = t._counter  # (t._version, read without the property: this runs per input)
        if (0 if counter is None else counter.version) != seen and reads(record.op, index, needs):
            raise _modified(record, f"input {index}, {describe(t)}", t._version, seen,
                            t._counter.last)
    for index, counter, seen in record.saved_outputs:
        if counter.version != seen:
            raise _modified(record, f"its own result {index} (which it saved)", counter.version,
                            seen, counter.last)


def _modified(record: "Record", what: str, now: int, then: int, last: str) -> OpError:
    return OpError(
        f"backward: one of the tensors needed for gradient computation has been modified by an "
        f"in-place operation: {record.op} needs {what}, which is at version {now}; expected "
        f"version {then} ({last} wrote into it after {record.op} used it). Write into a copy "
        f"(x.clone()), or compute what needs the old values before writing")
