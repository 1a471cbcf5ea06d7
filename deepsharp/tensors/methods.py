"""The tensor vocabulary as `Tensor` methods, with PyTorch's names and meanings (numpy's
keywords `axis`/`keepdims` accepted beside `dim`/`keepdim`). Each method is a line calling
`deepsharp.tensors.api`, where the rules and the checks are; docs/tensors.md lists them all and
every deliberate difference from PyTorch."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from deepsharp.errors import OpError
from deepsharp.tensors import keywords as kw
from deepsharp.tensors import api  # the submodules are bound once deepsharp.tensors is imported
from deepsharp.tensors.symint import UNROLLED, SymInt, plain


class Size(SymInt):
    """The number of elements (numpy's `x.size`), callable as PyTorch's `x.size()` (the shape) and
    `x.size(dim)` (one axis's size). While a trace records, sizes of symbolic axes are SymInts
    (deepsharp/tensors/symint.py), and so is the number of elements when one is."""

    _shape: tuple[int, ...]

    def __new__(cls, shape: tuple[int, ...]) -> "Size":
        total: Any = 1
        for n in shape:
            total = total * n  # a SymInt's product keeps its expression
        size = super().__new__(cls, plain(total), getattr(total, "expr", None),
                               getattr(total, "owner", None))
        size._shape = tuple(shape)
        return size

    def __call__(self, dim: Any = None) -> Any:
        if dim is None:
            return self._shape
        from deepsharp.tensors.keywords import axis

        return self._shape[axis("size", dim, len(self._shape))]


def _apply(op: str, *inputs: Any, **attrs: Any) -> Any:
    return api.shape.apply(op, *inputs, **attrs)  # tensor.apply, reached without a circular import


def _reduction(name: str):
    """The method calling `api.reduce.<name>(self, dim, keepdim, axis=, keepdims=, ...)` (the
    rest as the function takes them: `dtype=` for sum, mean and prod, as PyTorch's)."""

    def method(self, dim=None, keepdim=None, *, axis=None, keepdims=None, **options):
        return getattr(api.reduce, name)(self, dim, keepdim, axis=axis, keepdims=keepdims,
                                         **options)

    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"See deepsharp.tensors.api.reduce.{name}."
    return method


def _unary(name: str):
    """The method applying primitive `name` to the tensor alone."""

    def method(self):
        return _apply(name, self)

    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"{name}(x), elementwise (docs/tensors.md)."
    return method


class TensorMethods:
    __slots__ = ()
    __hash__ = object.__hash__  # identity, as PyTorch's: code keys dicts and sets by tensors

    # -- what a tensor is -------------------------------------------------------------------
    @property
    def size(self) -> Size:
        return Size(self.shape)

    def numel(self) -> int:
        return math.prod(self.shape)  # a SymInt while a trace records a symbolic axis

    def dim(self) -> int:
        return self.ndim

    ndimension = dim

    def __iter__(self):
        if self.ndim == 0:
            raise OpError("iteration over a 0-d tensor")
        size = self.shape[0]
        if isinstance(size, SymInt):
            size.fixed("iterating over a tensor (for t in x)", UNROLLED)
        return (self.select(0, i) for i in range(self._data.shape[0]))

    # -- comparisons and logic (bool results) -----------------------------------------------
    def _operator(self, op: str, other: Any, reflected: bool = False) -> Any:
        """An operator's primitive (comparisons, %, //), or NotImplemented for an operand it
        cannot take (Python then tries the other side, and == falls back to identity)."""
        if not api.elementwise.comparable(other):
            return NotImplemented
        return _apply(op, other, self) if reflected else _apply(op, self, other)

    def __eq__(self, other): return self._operator("equal", other)
    def __ne__(self, other): return self._operator("not_equal", other)
    def __lt__(self, other): return self._operator("less", other)
    def __le__(self, other): return self._operator("less_equal", other)
    def __gt__(self, other): return self._operator("greater", other)
    def __ge__(self, other): return self._operator("greater_equal", other)
    def eq(self, other): return _apply("equal", self, other)
    def ne(self, other): return _apply("not_equal", self, other)
    def lt(self, other): return _apply("less", self, other)
    def le(self, other): return _apply("less_equal", self, other)
    def gt(self, other): return _apply("greater", self, other)
    def ge(self, other): return _apply("greater_equal", self, other)
    less, less_equal, greater, greater_equal, not_equal = lt, le, gt, ge, ne

    def logical_and(self, other): return _apply("logical_and", self, other)
    def logical_or(self, other): return _apply("logical_or", self, other)
    def logical_xor(self, other): return _apply("logical_xor", self, other)
    def logical_not(self): return _apply("logical_not", self)

    def _bits(self, symbol: str, other: Any = None, reflected: bool = False) -> Any:
        if other is None:
            return api.elementwise.bitwise(symbol, self)
        if not api.elementwise.comparable(other):
            return NotImplemented
        pair = (other, self) if reflected else (self, other)
        return api.elementwise.bitwise(symbol, *pair)

    def __and__(self, other): return self._bits("&", other)
    def __rand__(self, other): return self._bits("&", other, True)
    def __or__(self, other): return self._bits("|", other)
    def __ror__(self, other): return self._bits("|", other, True)
    def __xor__(self, other): return self._bits("^", other)
    def __rxor__(self, other): return self._bits("^", other, True)
    def __invert__(self): return self._bits("~")
    def bitwise_and(self, other): return self._bits("&", other)
    def bitwise_or(self, other): return self._bits("|", other)
    def bitwise_xor(self, other): return self._bits("^", other)
    def bitwise_not(self): return self._bits("~")

    def where(self, condition, other): return api.select.where(condition, self, other)
    def masked_fill(self, mask, value): return api.select.masked_fill(self, mask, value)

    # -- elementwise functions --------------------------------------------------------------
    (sign, log1p, rsqrt, sin, cos, tan, asin, acos, atan, sinh, cosh, asinh, acosh, atanh, floor,
     ceil, trunc, isnan, isinf, neg) = (_unary(n) for n in (
        "sign", "log1p", "rsqrt", "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh",
        "asinh", "acosh", "atanh", "floor", "ceil", "trunc", "isnan", "isinf", "neg"))
    arcsin, arccos, arctan, arcsinh, arccosh, arctanh = asin, acos, atan, asinh, acosh, atanh
    fix, negative = trunc, neg

    def __abs__(self): return _apply("abs", self)
    def __pos__(self): return self
    def pow(self, exponent): return _apply("pow", self, exponent)
    def maximum(self, other): return _apply("maximum", self, other)
    def minimum(self, other): return _apply("minimum", self, other)

    def add(self, other, *, alpha=1): return api.arithmetic.add(self, other, alpha)
    def sub(self, other, *, alpha=1): return api.arithmetic.sub(self, other, alpha)
    def mul(self, other): return _apply("mul", self, other)
    def div(self, other, *, rounding_mode=None):
        return api.arithmetic.div(self, other, rounding_mode)
    subtract, multiply, divide, true_divide = sub, mul, div, div
    def square(self):  # of bools an int64, as PyTorch's
        x = self.long() if self.dtype == np.bool_ else self
        return _apply("mul", x, x)
    def round(self, decimals=0): return api.arithmetic.round(self, decimals)
    def erf(self): return api.arithmetic.erf(self)
    def reciprocal(self): return api.arithmetic.reciprocal(self)
    def isfinite(self): return api.arithmetic.isfinite(self)

    def __mod__(self, other): return self._operator("remainder", other)
    def __rmod__(self, other): return self._operator("remainder", other, True)
    def __floordiv__(self, other): return self._operator("floor_divide", other)
    def __rfloordiv__(self, other): return self._operator("floor_divide", other, True)
    def remainder(self, other): return _apply("remainder", self, other)
    def fmod(self, other): return _apply("fmod", self, other)
    def floor_divide(self, other): return _apply("floor_divide", self, other)

    def clamp(self, min=None, max=None, *, a_min=None, a_max=None):
        return api.elementwise.clamp(self, min, max, a_min=a_min, a_max=a_max)

    clip = clamp

    def softmax(self, dim=None, *, axis=None, dtype=None):
        from deepsharp import functional

        return functional.softmax(self, dim, axis=axis, dtype=dtype)

    def log_softmax(self, dim=None, *, axis=None, dtype=None):
        from deepsharp import functional

        return functional.log_softmax(self, dim, axis=axis, dtype=dtype)

    def matmul(self, other): return api.arithmetic.matmul(self, other)
    def mm(self, other): return api.arithmetic.mm(self, other)
    def dot(self, other): return api.arithmetic.dot(self, other)
    def cross(self, other, dim=None): return api.arithmetic.cross(self, other, dim)
    def addmm(self, mat1, mat2, *, beta=1, alpha=1):
        return api.arithmetic.addmm(self, mat1, mat2, beta=beta, alpha=alpha)
    def lerp(self, end, weight): return api.arithmetic.lerp(self, end, weight)
    def nan_to_num(self, nan=0.0, posinf=None, neginf=None):
        return api.arithmetic.nan_to_num(self, nan, posinf, neginf)
    def roll(self, shifts, dims=None): return api.join.roll(self, shifts, dims)
    def bmm(self, other): return api.arithmetic.bmm(self, other)

    # -- reductions and scans ---------------------------------------------------------------
    sum, mean, max, min, amax, amin, argmax, argmin, prod, logsumexp, all, any = (
        _reduction(n) for n in ("sum", "mean", "max", "min", "amax", "amin", "argmax", "argmin",
                                "prod", "logsumexp", "all", "any"))

    def var(self, dim=None, unbiased=None, keepdim=None, *, correction=None, axis=None,
            keepdims=None, ddof=None):
        return api.reduce.var(self, dim, unbiased, keepdim, correction=correction, axis=axis,
                              keepdims=keepdims, ddof=ddof)

    def std(self, dim=None, unbiased=None, keepdim=None, *, correction=None, axis=None,
            keepdims=None, ddof=None):
        return api.reduce.std(self, dim, unbiased, keepdim, correction=correction, axis=axis,
                              keepdims=keepdims, ddof=ddof)

    def norm(self, p="fro", dim=None, keepdim=None, dtype=None, *, axis=None, keepdims=None):
        return api.arithmetic.norm(self, p, dim, keepdim, dtype, axis=axis, keepdims=keepdims)

    def cumsum(self, dim=None, *, axis=None, dtype=None):
        return api.reduce.cumsum(self, dim, axis=axis, dtype=dtype)

    def cumprod(self, dim=None, *, axis=None, dtype=None):
        return api.reduce.cumprod(self, dim, axis=axis, dtype=dtype)

    # -- axes and shapes --------------------------------------------------------------------
    def transpose(self, *dims): return api.shape.transpose(self, *dims)
    swapaxes = swapdims = transpose
    def permute(self, *dims): return api.shape.permute(self, *dims)
    def t(self): return api.shape.t(self)

    @property
    def T(self): return api.shape.reverse(self)

    @property
    def mT(self): return api.shape.matrix_transpose(self)

    def movedim(self, source, destination): return api.shape.movedim(self, source, destination)
    moveaxis = movedim
    def expand(self, *sizes): return api.shape.expand(self, *sizes)
    def expand_as(self, other):
        return api.shape.expand(self, kw.tensor_like("expand_as", "other", other).shape)
    def view(self, *shape): return api.shape.view(self, *shape)
    def view_as(self, other):
        return self.reshape(kw.tensor_like("view_as", "other", other).shape)
    reshape_as = view_as

    def flatten(self, start_dim=0, end_dim=-1):
        return api.shape.flatten(self, start_dim, end_dim)

    def unflatten(self, dim, sizes): return api.shape.unflatten(self, dim, sizes)
    def squeeze(self, dim=None, *, axis=None): return api.shape.squeeze(self, dim, axis=axis)
    def unsqueeze(self, dim=None, *, axis=None): return api.shape.unsqueeze(self, dim, axis=axis)
    def flip(self, *dims, axis=None): return api.shape.flip(self, *dims, axis=axis)
    def narrow(self, dim, start, length): return api.shape.narrow(self, dim, start, length)

    # -- joining, splitting, copying --------------------------------------------------------
    def split(self, split_size_or_sections, dim=None, *, axis=None):
        return api.join.split(self, split_size_or_sections, dim, axis=axis)

    def chunk(self, chunks, dim=None, *, axis=None):
        return api.join.chunk(self, chunks, dim, axis=axis)

    def unbind(self, dim=None, *, axis=None): return api.join.unbind(self, dim, axis=axis)
    def repeat(self, *sizes): return api.join.repeat(self, *sizes)
    def tile(self, *reps): return api.join.tile(self, *reps)

    def repeat_interleave(self, repeats, dim=None, *, axis=None):
        return api.join.repeat_interleave(self, repeats, dim, axis=axis)

    # -- choosing entries -------------------------------------------------------------------
    def gather(self, dim, index): return api.select.gather(self, dim, index)
    def diagonal(self, offset=0, dim1=0, dim2=1):
        return api.select.diagonal(self, offset, dim1, dim2)
    def diag(self, diagonal=0): return api.select.diag(self, diagonal)
    def unique(self, sorted=True, return_inverse=False, return_counts=False, dim=None):
        return api.select.unique(self, sorted, return_inverse, return_counts, dim)
    def scatter_add(self, dim, index, src): return api.scatter.scatter_add(self, dim, index, src)
    def nonzero(self, *, as_tuple=False): return api.select.nonzero(self, as_tuple=as_tuple)
    def argwhere(self): return api.select.argwhere(self)
    def masked_select(self, mask): return api.select.masked_select(self, mask)
    def index_fill(self, dim, index, value):
        return api.scatter.index_fill(self, dim, index, value)
    def index_copy(self, dim, index, source):
        return api.scatter.index_copy(self, dim, index, source)
    def index_put(self, indices, values, accumulate=False):
        return api.scatter.index_put(self, indices, values, accumulate)
    def scatter(self, dim, index, src=None, *, value=None, reduce=None):
        return api.scatter.scatter(self, dim, index, src, value=value, reduce=reduce)
    def scatter_reduce(self, dim, index, src, reduce, *, include_self=True):
        return api.scatter.scatter_reduce(self, dim, index, src, reduce, include_self=include_self)
    def index_add(self, dim, index, source, *, alpha=1):
        return api.scatter.index_add(self, dim, index, source, alpha=alpha)
    def take_along_dim(self, indices, dim=None):
        return api.select.take_along_axis(self, indices, dim)
    def index_select(self, dim, index): return api.select.index_select(self, dim, index)

    def topk(self, k, dim=None, largest=True, sorted=True, *, axis=None):
        return api.select.topk(self, k, dim, largest, sorted, axis=axis)

    def sort(self, dim=None, descending=False, stable=False, *, axis=None):
        return api.select.sort(self, dim, descending, stable, axis=axis)

    def argsort(self, dim=None, descending=False, stable=False, *, axis=None):
        return api.select.argsort(self, dim, descending, stable, axis=axis)

    def tril(self, diagonal=0): return api.select.tril(self, diagonal)
    def triu(self, diagonal=0): return api.select.triu(self, diagonal)

    # -- types and new tensors --------------------------------------------------------------
    def to(self, target: Any = None, dtype: Any = None, **ignored: Any):
        """`.to(dtype)`, `.to(other)` (its dtype), `.to("cpu")` (no change: every tensor is on
        the CPU); another device is refused."""
        target = dtype if target is None else target
        if isinstance(target, TensorMethods):
            target = target.dtype
        if isinstance(target, str) and target.split(":")[0] in ("cpu", "cuda", "mps", "meta"):
            if target.split(":")[0] != "cpu":
                raise OpError(f"to({target!r}): deepsharp runs on the CPU only")
            return self
        if target is None:
            return self
        wanted = api.build.dtype_of("to", target, None)
        return self if wanted == self.dtype else self.astype(wanted)

    def type_as(self, other): return self.to(kw.tensor_like("type_as", "other", other).dtype)
    def float(self): return self.to(np.float32)
    def double(self): return self.to(np.float64)
    def long(self): return self.to(np.int64)
    def int(self): return self.to(np.int32)
    def bool(self): return self.to(np.bool_)

    def new_zeros(self, *size, dtype=None):
        return api.build.zeros(*size, dtype=self.dtype if dtype is None else dtype)

    def new_ones(self, *size, dtype=None):
        return api.build.ones(*size, dtype=self.dtype if dtype is None else dtype)

    def new_full(self, size, fill_value, dtype=None):
        return api.build.full(size, fill_value, self.dtype if dtype is None else dtype)
