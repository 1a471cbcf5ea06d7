"""Tensor: a numpy array with reverse-mode autograd, and `apply`, the one way operations run.

Every operation goes through `apply(op, *inputs, **attrs)`, which runs the primitive's forward rule
and, when an input requires gradients or is traced, leaves one `Record` on the result: the op's
name, its input tensors, its integer and float attributes, and what the backward rule saved.
`backward` walks those records; the tracer lowers the very same records to ONNX.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from deepsharp.errors import OpError
from deepsharp.tensors import keywords, modes
from deepsharp.tensors.modes import _grad_enabled, _trace_hook
from deepsharp.tensors.methods import TensorMethods
from deepsharp.tensors.primitives import lookup
from deepsharp.tensors.promotion import FLOATING, PROMOTES, promoted
from deepsharp.tensors.symint import SymInt, holds_live, live
from deepsharp.tensors.versions import (
    Version, check_current, saved_outputs, share_views,
)


class Record:
    """What one operation left behind: autograd's and the tracer's common input."""

    __slots__ = ("op", "inputs", "attrs", "saved", "shapes", "dtypes", "edges", "versions",
                 "saved_outputs")

    def __init__(self, op: str, inputs: tuple["Tensor", ...], attrs: dict[str, Any], saved: Any,
                 outputs: Sequence[np.ndarray]) -> None:
        self.op = op
        self.inputs = inputs
        self.attrs = attrs
        self.saved = saved
        self.shapes = tuple([o.shape for o in outputs])
        self.dtypes = tuple([o.dtype for o in outputs])
        # where each input's gradient goes, as it was when this ran (an input written in place
        # later gets a new history, which this record must not follow), and each input's version,
        # which backward checks (versions.py); an input whose history is stale is refused
        self.edges, self.versions = [], []
        for t in inputs:
            self.edges.append((t.record, t.index, t.requires_grad))
            counter = t._counter
            if counter is None:
                self.versions.append(0)
                continue
            if t._seen != counter.rebases:
                check_current((t,), op)
            self.versions.append(counter.version)
        self.saved_outputs: tuple[tuple[int, Version, int], ...] = ()

    def __repr__(self) -> str:
        attrs = ", ".join(f"{k}={v!r}" for k, v in self.attrs.items())
        return f"Record({self.op}, inputs={len(self.inputs)}{', ' if attrs else ''}{attrs})"


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:80] + "..."


def _as_array(value: Any, dtype: Any = None, what: str = "Tensor()") -> np.ndarray:
    """`value` as an array: floats take the default float type, integers int64. Reading a
    tensor's values this way is a read the tracer watches (`what` names it)."""
    if isinstance(value, Tensor):
        value = value._read(what)
    try:
        array = np.asarray(value, dtype=dtype)
    except (TypeError, ValueError, OverflowError) as error:
        raise OpError(f"{what}: cannot hold {_short(value)} as an array: {error}") from None
    if array.dtype.kind == "O":  # (an integer past int64, ragged lists, objects): no numbers
        raise OpError(f"{what}: cannot hold {_short(value)} as numbers (numpy reads it as "
                      f"objects)")
    if dtype is None:
        if array.dtype.kind == "f" and array.dtype != modes.default_float():
            array = array.astype(modes.default_float())
        elif array.dtype.kind in "iu" and array.dtype != np.int64:
            array = array.astype(np.int64)
    return array


class Tensor(TensorMethods):
    """A float32 (or int64 / bool) array that records the operations made from it.

    >>> x = Tensor([[1.0, 2.0]], requires_grad=True)
    >>> y = (x * x).sum()
    >>> y.backward()
    >>> x.grad
    array([[2., 4.]], dtype=float32)

    Library code reads the array as `_data`; user code reads values with `numpy()`, `item()` or
    `tolist()` (which a tracer refuses on traced tensors). The vocabulary (reductions, axes,
    comparisons, indexing by arrays, ...) comes from `TensorMethods` (deepsharp/tensors/methods.py).
    """

    __slots__ = ("_data", "requires_grad", "grad", "record", "index", "name", "_counter", "_seen",
                 "_view_of", "__weakref__")
    __array_priority__ = 1000.0  # numpy defers to our operators in `array * tensor`

    def __init__(self, data: Any, requires_grad: bool = False, dtype: Any = None,
                 name: str | None = None) -> None:
        self._data = _as_array(data, dtype)
        self.requires_grad = bool(requires_grad)
        self.grad: np.ndarray | None = None
        self.record: Record | None = None
        self.index = 0
        self.name = name
        self._counter: Version | None = None  # made on the first write or view (versions.py)
        self._seen = 0
        self._view_of: tuple[Tensor, str, dict] | None = None  # (base, op, attrs) of a view

    @classmethod
    def _wrap(cls, array: np.ndarray) -> "Tensor":
        t = cls.__new__(cls)
        t._data = array
        t.requires_grad = False
        t.grad = None
        t.record = None
        t.index = 0
        t.name = None
        t._counter = None
        t._seen = 0
        t._view_of = None
        return t

    # -- versions (deepsharp/tensors/versions.py) -------------------------------------------
    def _version_counter(self) -> Version:
        if self._counter is None:
            self._counter = Version()
        return self._counter

    @property
    def _version(self) -> int:
        """How many times the storage was written in place (PyTorch's `_version`)."""
        return 0 if self._counter is None else self._counter.version

    @_version.setter
    def _version(self, value: int) -> None:  # an optimizer's step moves it
        self._version_counter().version = value

    # -- what a tensor is -------------------------------------------------------------------
    @property
    def shape(self) -> tuple[int, ...]:
        """The sizes. While a trace records, a symbolic axis's size is a `SymInt` (an int that
        carries the symbolic size: deepsharp/tensors/symint.py); library code reads
        `_data.shape` where it means the traced run's numbers."""
        hook = _trace_hook.get()  # (the context variable itself: .shape is read very often)
        return self._data.shape if hook is None else hook.shape_of(self)

    @property
    def dtype(self) -> np.dtype:
        return self._data.dtype

    @property
    def ndim(self) -> int:
        return self._data.ndim

    def __len__(self) -> int:
        size = self.shape[0]
        if isinstance(size, SymInt):  # len() can only give a plain int
            size.fixed("len(x)", "read the size as x.shape[0], which the graph computes")
        return self._data.shape[0]

    def __repr__(self) -> str:
        grad = ", requires_grad=True" if self.requires_grad else ""
        op = f", op={self.record.op}" if self.record is not None else ""
        return f"Tensor(shape={self.shape}, dtype={self.dtype}{grad}{op})"

    # -- reads and writes: the tracer watches these -----------------------------------------
    def _read(self, what: str) -> np.ndarray:
        hook = modes.trace_hook()
        if hook is not None:
            hook.on_read(self, what)
        return self._data

    def _write(self, what: str) -> None:
        hook = modes.trace_hook()
        if hook is not None:
            hook.on_write(self, what)
        self._version_counter().moved(what)

    @property
    def data(self) -> np.ndarray:
        """The values as a numpy array (shared, not copied)."""
        return self._read("data")

    def numpy(self) -> np.ndarray:
        return self._read("numpy()")

    def item(self) -> float | int:
        return self._read("item()").item()

    def tolist(self) -> Any:
        return self._read("tolist()").tolist()

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        array = self._read("__array__")
        return array if dtype is None else array.astype(dtype)

    def __bool__(self) -> bool:
        return bool(self._one("__bool__", "Boolean value of Tensor with more than one value is "
                                          "ambiguous (PyTorch's words too): use .any() or .all()"))

    def __float__(self) -> float:
        return float(self._one("__float__", "only one element tensors can be converted to "
                                            "Python scalars"))

    def __int__(self) -> int:
        return int(self._one("__int__", "only one element tensors can be converted to Python "
                                        "scalars"))

    def __index__(self) -> int:
        value = self._read("__index__")
        if value.size != 1 or value.dtype.kind not in "iu":
            # (a TypeError, as Python's protocol asks of what is no index, and as PyTorch's)
            raise TypeError("only integer tensors of a single element can be converted to an "
                            "index")
        return int(value.reshape(()).item())

    def _one(self, what: str, refusal: str) -> Any:
        """The one value of a tensor of one element (a Python number), or OpError."""
        value = self._read(what)
        if value.size != 1:
            raise OpError(f"{what}: {refusal}; this tensor has shape {tuple(value.shape)}")
        return value.reshape(()).item()

    # -- in-place writes: recorded when autograd or a trace needs them (inplace.py) ----------
    def fill_(self, value: Any) -> "Tensor":
        from deepsharp.tensors.inplace import assign

        return assign(self, Ellipsis, value, "fill_()")

    def zero_(self) -> "Tensor":
        from deepsharp.tensors.inplace import assign

        return assign(self, Ellipsis, 0, "zero_()")

    def copy_(self, source: Any) -> "Tensor":
        from deepsharp.tensors.inplace import assign

        return assign(self, Ellipsis, source, "copy_()")

    def __setitem__(self, index: Any, value: Any) -> None:
        from deepsharp.tensors.inplace import assign

        assign(self, index, value, "x[...] = value")

    def add_(self, other: Any, *, alpha: float = 1) -> "Tensor":
        from deepsharp.tensors.inplace import update

        return update(self, "add", other if alpha == 1 else other * alpha, "add_()")

    def sub_(self, other: Any, *, alpha: float = 1) -> "Tensor":
        from deepsharp.tensors.inplace import update

        return update(self, "sub", other if alpha == 1 else other * alpha, "sub_()")

    def mul_(self, other: Any) -> "Tensor":
        from deepsharp.tensors.inplace import update

        return update(self, "mul", other, "mul_()")

    def div_(self, other: Any) -> "Tensor":
        from deepsharp.tensors.inplace import update

        return update(self, "div", other, "div_()")

    # `x += y` writes into x, as in PyTorch (a view of x sees it, a leaf that requires
    # gradients refuses it)
    def __iadd__(self, other): return self.add_(other)
    def __isub__(self, other): return self.sub_(other)
    def __imul__(self, other): return self.mul_(other)
    def __itruediv__(self, other): return self.div_(other)

    def detach(self) -> "Tensor":
        """The same values with no record: gradients stop here. The result shares the storage
        (and its version counter), as PyTorch's does."""
        result = Tensor._wrap(self._data)
        counter = self._version_counter()
        result._counter, result._seen = counter, counter.rebases
        result._view_of = (self, "detach", {})
        hook = modes.trace_hook()
        if hook is not None:
            hook.on_alias(self, result, "detach()")
        return result

    def clone(self) -> "Tensor":
        return apply("copy", self)

    def contiguous(self) -> "Tensor":
        """The tensor itself when its values lie in row-major order already (as PyTorch returns
        `self` then, so a write into the result is a write into this tensor), else a copy."""
        return self if self._data.flags.c_contiguous else self.clone()

    # -- autograd ---------------------------------------------------------------------------
    def backward(self, grad: Any = None) -> None:
        """Accumulate d(self)/d(leaf) into `.grad` of every leaf that requires gradients."""
        from deepsharp.tensors.autograd import backward

        backward(self, grad)

    # -- operators (each one primitive, or a short composition) -----------------------------
    def __add__(self, other): return apply("add", self, other)
    def __radd__(self, other): return apply("add", other, self)
    def __sub__(self, other): return apply("sub", self, other)
    def __rsub__(self, other): return apply("sub", other, self)
    def __mul__(self, other): return apply("mul", self, other)
    def __rmul__(self, other): return apply("mul", other, self)
    def __truediv__(self, other): return apply("div", self, other)
    def __rtruediv__(self, other): return apply("div", other, self)
    def __pow__(self, other): return apply("pow", self, other)
    def __rpow__(self, other): return apply("pow", other, self)
    def __matmul__(self, other): return self.matmul(other)
    def __rmatmul__(self, other):
        from deepsharp.tensors.api.arithmetic import matmul

        return matmul(other, self)
    def __neg__(self): return apply("neg", self)

    def exp(self): return apply("exp", self)
    def log(self): return apply("log", self)
    def sqrt(self): return apply("sqrt", self)
    def abs(self): return apply("abs", self)
    def relu(self): return apply("relu", self)
    def sigmoid(self): return apply("sigmoid", self)
    def tanh(self): return apply("tanh", self)

    def reshape(self, *shape: int) -> "Tensor":
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        return apply("reshape", self, shape=tuple(s if live(s) else int(s) for s in shape))

    def select(self, dim: int, index: int) -> "Tensor":
        """The values at position `index` of `dim`, which is dropped: a view, as PyTorch's
        (`x[:, index]` on that axis; a negative index counts from the end, whatever the axis's
        size). An index that is a tensor (a traced number) is a gather by it."""
        axis = keywords.axis("select", dim, self.ndim)
        if live(index) or isinstance(index, Tensor):
            return apply("gather", self, as_tensor(index), axis=axis)
        from deepsharp.tensors.indexing import getitem

        position = keywords.integer("select", "index", index)
        return getitem(self, (slice(None),) * axis + (position,), op="select")

    def __getitem__(self, index: Any) -> "Tensor":
        from deepsharp.tensors.indexing import getitem

        return getitem(self, index)

    def astype(self, dtype: Any) -> "Tensor":
        return apply("cast", self, to=np.dtype(dtype).str)


def as_tensor(value: Any, like: np.ndarray | None = None) -> Tensor:
    """`value` as a Tensor. A Python number mixed into a float operation takes that operation's
    float type, so `x * 2.0` stays float32 (numpy would otherwise promote a float64 scalar)."""
    if isinstance(value, Tensor):
        return value
    if live(value):  # a size read from a symbolic axis: computed in the graph (x / n)
        kind = like.dtype if like is not None and like.dtype.kind == "f" else np.dtype(np.int64)
        return apply("full", shape=(), value=value, dtype=kind.str)
    if (like is not None and like.dtype.kind == "f" and isinstance(value, (int, float))
            and not isinstance(value, bool)):
        return Tensor._wrap(np.asarray(value, dtype=like.dtype))
    return Tensor(value)


def _cast(tensor: Tensor, dtype: np.dtype) -> Tensor:
    return apply("cast", tensor, to=np.dtype(dtype).str)


def _refused(op: str, tensors: tuple, attrs: dict, error: BaseException) -> OpError:
    """What numpy raised inside a primitive's forward rule, as the project's error naming the
    operation, its operands and settings (a public entry point raises only the project's errors;
    the rules check what they can name better themselves)."""
    operands = ", ".join(f"{t.dtype}{tuple(t.shape)}" for t in tensors)
    settings = ", ".join(f"{k}={v!r}" for k, v in attrs.items())
    text = str(error) or type(error).__name__
    return OpError(f"{op}: cannot compute on {operands or 'no operands'}"
                   f"{' with ' + settings if settings else ''}: {text[:200]}")


def apply(op: str, *inputs: Any, **attrs: Any) -> Tensor | tuple[Tensor, ...]:
    """Run primitive `op` on `inputs`, recording it when gradients or a trace need it."""
    # (list comprehensions and the context variables read directly: this runs for every
    # operation, and generator expressions cost several microseconds a call here)
    prim = lookup(op)
    like = None
    for i in inputs:
        if isinstance(i, Tensor):
            like = i._data
            break
    tensors = tuple([i if isinstance(i, Tensor) else as_tensor(i, like) for i in inputs])
    if op in PROMOTES:  # PyTorch's promotion (int with float -> the float), not numpy's
        tensors = promoted(op, tensors, _cast)
    elif op in FLOATING and tensors[0].dtype.kind != "f":  # PyTorch's exp(int64) is float32
        tensors = (_cast(tensors[0], np.dtype(modes.default_float())),) + tensors[1:]
    hook = _trace_hook.get()
    sized = hook is not None and holds_live(attrs)
    if sized:  # sizes read from symbolic axes: the trace refuses those the op keeps as numbers
        hook.on_sizes(op, attrs)
    try:
        out, saved = prim.forward(*[t._data for t in tensors], **attrs)
    except (TypeError, ValueError, IndexError, OverflowError, MemoryError,
            AttributeError) as error:  # (numpy's, on operands of a kind the rule takes not)
        raise _refused(op, tensors, attrs, error) from None
    outs = out if prim.outputs > 1 else (out,)
    results = tuple([Tensor._wrap(o) for o in outs])
    share_views(tensors, outs, results, op, attrs)
    needs_grad = (prim.differentiable and _grad_enabled.get()
                  and any([t.requires_grad for t in tensors]))
    # an operation without tensor inputs (arange) is shown to the tracer: its size may be symbolic
    # so is one on constants given a size read from a symbolic axis (`weight[:n]`, `zeros(b, 5)`)
    traced = hook is not None and (not tensors or sized or hook.involves(tensors))
    if needs_grad or traced:
        record = Record(op, tensors, attrs, saved, outs)
        if needs_grad and saved is not None:
            counters = {i: results[i]._version_counter() for i in saved_outputs(saved, outs)}
            record.saved_outputs = tuple((i, c, c.version) for i, c in counters.items())
        for i, r in enumerate(results):
            r.record = record
            r.index = i
            r.requires_grad = needs_grad and r.dtype.kind == "f"  # (bool and int results: none)
        if traced:
            hook.on_record(record, results)
    return results if prim.outputs > 1 else results[0]
