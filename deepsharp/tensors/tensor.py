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
from deepsharp.tensors.methods import TensorMethods
from deepsharp.tensors.primitives import lookup


class Record:
    """What one operation left behind: autograd's and the tracer's common input."""

    __slots__ = ("op", "inputs", "attrs", "saved", "shapes", "dtypes")

    def __init__(self, op: str, inputs: tuple["Tensor", ...], attrs: dict[str, Any], saved: Any,
                 outputs: Sequence[np.ndarray]) -> None:
        self.op = op
        self.inputs = inputs
        self.attrs = attrs
        self.saved = saved
        self.shapes = tuple(o.shape for o in outputs)
        self.dtypes = tuple(o.dtype for o in outputs)

    def __repr__(self) -> str:
        attrs = ", ".join(f"{k}={v!r}" for k, v in self.attrs.items())
        return f"Record({self.op}, inputs={len(self.inputs)}{', ' if attrs else ''}{attrs})"


def _as_array(value: Any, dtype: Any = None, what: str = "Tensor()") -> np.ndarray:
    """`value` as an array: floats take the default float type, integers int64. Reading a
    tensor's values this way is a read the tracer watches (`what` names it)."""
    if isinstance(value, Tensor):
        value = value._read(what)
    array = np.asarray(value, dtype=dtype)
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

    __slots__ = ("_data", "requires_grad", "grad", "record", "index", "name", "_version",
                 "__weakref__")
    __array_priority__ = 1000.0  # numpy defers to our operators in `array * tensor`

    def __init__(self, data: Any, requires_grad: bool = False, dtype: Any = None,
                 name: str | None = None) -> None:
        self._data = _as_array(data, dtype)
        self.requires_grad = bool(requires_grad)
        self.grad: np.ndarray | None = None
        self.record: Record | None = None
        self.index = 0
        self.name = name
        self._version = 0

    @classmethod
    def _wrap(cls, array: np.ndarray) -> "Tensor":
        t = cls.__new__(cls)
        t._data = array
        t.requires_grad = False
        t.grad = None
        t.record = None
        t.index = 0
        t.name = None
        t._version = 0
        return t

    # -- what a tensor is -------------------------------------------------------------------
    @property
    def shape(self) -> tuple[int, ...]:
        return self._data.shape

    @property
    def dtype(self) -> np.dtype:
        return self._data.dtype

    @property
    def ndim(self) -> int:
        return self._data.ndim

    def __len__(self) -> int:
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
        self._version += 1

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
        return bool(self._read("__bool__"))

    def __float__(self) -> float:
        return float(self._read("__float__"))

    def __int__(self) -> int:
        return int(self._read("__int__"))

    def __index__(self) -> int:
        return int(self._read("__index__"))

    def fill_(self, value: float) -> "Tensor":
        self._write("fill_()")
        self._data.fill(value)
        return self

    def zero_(self) -> "Tensor":
        return self.fill_(0)

    def copy_(self, source: Any) -> "Tensor":
        self._write("copy_()")
        self._data[...] = _as_array(source, what="copy_() from it")
        return self

    def __setitem__(self, index: Any, value: Any) -> None:
        self._write("__setitem__")
        self._data[index] = _as_array(value, what="__setitem__ from it")

    def detach(self) -> "Tensor":
        """The same values with no record: gradients stop here."""
        result = Tensor._wrap(self._data)
        hook = modes.trace_hook()
        if hook is not None:
            hook.on_alias(self, result, "detach()")
        return result

    def clone(self) -> "Tensor":
        return apply("copy", self)

    contiguous = clone

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
    def __matmul__(self, other): return apply("matmul", self, other)
    def __rmatmul__(self, other): return apply("matmul", other, self)
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
        return apply("reshape", self, shape=tuple(int(s) for s in shape))

    def select(self, dim: int, index: int) -> "Tensor":
        """The values at position `index` of `dim`, which is dropped: a gather by a scalar index,
        kept as given (a negative index counts from the end, whatever the axis's size)."""
        return apply("gather", self, Tensor(np.asarray(int(index), dtype=np.int64)),
                     axis=keywords.axis("select", dim, self.ndim))

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
    if (like is not None and like.dtype.kind == "f" and isinstance(value, (int, float))
            and not isinstance(value, bool)):
        return Tensor._wrap(np.asarray(value, dtype=like.dtype))
    return Tensor(value)


def apply(op: str, *inputs: Any, **attrs: Any) -> Tensor | tuple[Tensor, ...]:
    """Run primitive `op` on `inputs`, recording it when gradients or a trace need it."""
    prim = lookup(op)
    like = next((i._data for i in inputs if isinstance(i, Tensor)), None)
    tensors = tuple(as_tensor(i, like) for i in inputs)
    out, saved = prim.forward(*(t._data for t in tensors), **attrs)
    outs = out if prim.outputs > 1 else (out,)
    results = tuple(Tensor._wrap(o) for o in outs)
    needs_grad = (prim.differentiable and modes.grad_enabled()
                  and any(t.requires_grad for t in tensors))
    hook = modes.trace_hook()
    traced = hook is not None and hook.involves(tensors)
    if needs_grad or traced:
        record = Record(op, tensors, attrs, saved, outs)
        for i, r in enumerate(results):
            r.record = record
            r.index = i
            r.requires_grad = needs_grad and r.dtype.kind == "f"  # (bool and int results: none)
        if traced:
            hook.on_record(record, results)
    return results if prim.outputs > 1 else results[0]
