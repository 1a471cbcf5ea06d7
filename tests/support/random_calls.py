"""Random calls of the tensor vocabulary, spelled as a PyTorch user spells them: reductions over
random dims, elementwise operators between tensors and numbers of every dtype with broadcasting,
shape changes, indexing and indexed writes, gathers and sorts, matrix products.

A call is the same Python on either side: `call.run(namespace, tensors)`, with PyTorch's tensors
and `torch` or with ours and `deepsharp.functional`. scripts/fuzz_numbers.py (`tensors`) holds
our answers, dtypes and gradients to PyTorch's; tests/fuzz/test_tensor_calls.py runs them on our
side alone, where a fault is any error that is not the project's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from tests.support.parity_cases import Input

FLOATS = ("normal", "ties", "special", "distinct", "positive")


@dataclass(frozen=True)
class Call:
    text: str
    arrays: list[np.ndarray]
    run: Callable[[Any, list], Any]

    @property
    def grads(self) -> list[bool]:
        return [a.dtype.kind == "f" for a in self.arrays]


def _shape(g, low: int = 0, high: int = 4) -> tuple[int, ...]:
    sizes = g.integers(1, 5, int(g.integers(low, high + 1)))
    if g.random() < 0.05 and len(sizes):  # an empty axis
        sizes[int(g.integers(0, len(sizes)))] = 0
    return tuple(int(s) for s in sizes)


def _array(g, shape, kind: str) -> np.ndarray:
    if kind == "int":
        return np.asarray(Input("int", shape, -5, 6).make(g))
    return np.asarray(Input(kind, shape).make(g))


def _kind(g, floats: float = 0.7, ints: bool = True, bools: bool = True) -> str:
    if g.random() < floats or not (ints or bools):
        return FLOATS[int(g.integers(0, len(FLOATS)))]
    return "int" if ints and (not bools or g.random() < 0.6) else "bool"


def _dim(g, rank: int) -> int:
    return int(g.integers(-rank, rank)) if rank else int(g.integers(-1, 1))


def _dims(g, rank: int):
    """None, one dim, or a tuple of distinct dims (some negative)."""
    pick = g.random()
    if pick < 0.25:
        return None
    if pick < 0.6 or rank < 2:
        return _dim(g, rank)
    count = int(g.integers(1, rank + 1))
    return tuple(int(d) - (rank if g.random() < 0.4 else 0)
                 for d in g.permutation(rank)[:count])


def _kw(**kwargs) -> dict:
    return {k: v for k, v in kwargs.items() if v is not None}


def _text(name: str, args: tuple, kwargs: dict, arrays) -> str:
    spelled = ", ".join([repr(a) for a in args] + [f"{k}={v!r}" for k, v in kwargs.items()])
    return f"x.{name}({spelled}) on " + ", ".join(f"{a.dtype}{a.shape}" for a in arrays)


def _method(name: str, arrays, *args, **kwargs) -> Call:
    return Call(_text(name, args, kwargs, arrays), arrays,
                lambda ns, t: getattr(t[0], name)(*args, **kwargs))


def reduction(g) -> Call:
    shape = _shape(g)
    rank = len(shape)
    name = ["sum", "mean", "amax", "amin", "prod", "var", "std", "logsumexp", "norm", "all",
            "any", "argmax", "argmin", "max", "min", "cumsum", "cumprod", "softmax",
            "log_softmax"][int(g.integers(0, 19))]
    ordered = name in ("argmax", "argmin", "max", "min")
    kind = "distinct" if ordered and g.random() < 0.7 else _kind(g, 0.75)
    x = _array(g, shape, kind)
    keep = {"keepdim": bool(g.random() < 0.5)} if g.random() < 0.6 else {}
    if name in ("prod", "cumsum", "cumprod", "softmax", "log_softmax"):
        return _method(name, [x], _dim(g, rank), **(keep if name == "prod" else {}))
    if name in ("argmax", "argmin", "max", "min"):
        if g.random() < 0.3:
            return _method(name, [x])
        return _method(name, [x], _dim(g, rank), **keep)
    dims = _dims(g, rank)
    extra = {}
    if name in ("var", "std"):
        extra = ({"correction": int(g.integers(0, 3))} if g.random() < 0.5
                 else {"unbiased": bool(g.random() < 0.5)} if g.random() < 0.5 else {})
    if name == "norm" and g.random() < 0.5:
        extra = {"p": [1, 2, float("inf"), "fro"][int(g.integers(0, 4))]}
    if dims is None and name != "logsumexp":
        return _method(name, [x], **extra)
    if dims is None:
        dims = tuple(range(rank))
    if name == "norm":  # norm's first place is p
        return _method(name, [x], dim=dims, **keep, **extra)
    return _method(name, [x], dims, **keep, **extra)


BINARY = ["__add__", "__sub__", "__mul__", "__truediv__", "__floordiv__", "__mod__", "__pow__",
          "__radd__", "__rsub__", "__rmul__", "__rtruediv__", "__rfloordiv__", "__rmod__",
          "__rpow__", "__lt__", "__le__", "__gt__", "__ge__", "__eq__", "__ne__", "__and__",
          "__or__", "__xor__", "maximum", "minimum", "fmod", "remainder", "logical_and",
          "logical_or", "logical_xor", "add", "sub", "div"]
DIVIDES = ("__floordiv__", "__mod__", "__rfloordiv__", "__rmod__", "fmod", "remainder", "div",
           "__truediv__", "__rtruediv__")


def _broadcast_partner(g, shape) -> tuple[int, ...]:
    """A shape that broadcasts with `shape`: leading axes dropped or added, some sizes 1."""
    kept = list(shape[int(g.integers(0, len(shape) + 1)):]) if shape else []
    kept = [1 if g.random() < 0.3 else s for s in kept]
    if g.random() < 0.2:
        kept = [int(g.integers(1, 3))] + kept
    return tuple(kept)


def _divisor(g, a: np.ndarray) -> np.ndarray:
    """Integer divisors without zeros (PyTorch raises on an integer division by zero)."""
    if a.dtype.kind == "i" and g.random() < 0.95:
        return np.where(a == 0, 3, a).astype(a.dtype)
    return a


def binary(g) -> Call:
    name = BINARY[int(g.integers(0, len(BINARY)))]
    bitwise = name in ("__and__", "__or__", "__xor__")
    shape = _shape(g)
    x = _array(g, shape, _kind(g, 0.0 if bitwise else 0.6, ints=True))
    if g.random() < 0.3 and not bitwise:  # a Python number on the other side
        y = [2, -3, 0.5, -1.5, True, 0][int(g.integers(0, 6))]
        if name in DIVIDES and not isinstance(y, float) and x.dtype.kind != "f":
            y = -3 if y == 0 or y is True else y
        if name in ("__rfloordiv__", "__rmod__", "__rtruediv__"):
            x = _divisor(g, x)
        kwargs = {"alpha": 2} if name in ("add", "sub") and g.random() < 0.3 and \
            x.dtype != np.bool_ else {}
        return Call(_text(name, (y,), kwargs, [x]), [x],
                    lambda ns, t: getattr(t[0], name)(y, **kwargs))
    y = _array(g, _broadcast_partner(g, shape),
               _kind(g, 0.0 if bitwise else 0.6, ints=True) if g.random() < 0.5 else
               ("int" if x.dtype.kind == "i" else "bool" if x.dtype.kind == "b"
                else "normal"))
    if name in DIVIDES:
        y = _divisor(g, y)
    if name in ("__pow__", "__rpow__") and g.random() < 0.7 and \
            (x, y)[0 if name == "__pow__" else 1].dtype != np.bool_:
        base = 0 if name == "__pow__" else 1
        (x, y)[base][...] = np.abs((x, y)[base]) + (x, y)[base].dtype.type(1)
    kwargs = {}
    if name in ("add", "sub") and g.random() < 0.3 and x.dtype != np.bool_:
        kwargs = {"alpha": 2}  # (of two bool tensors PyTorch's alpha is read as a bool: not ours)
    if name == "div" and g.random() < 0.6:
        kwargs = {"rounding_mode": ["floor", "trunc", None][int(g.integers(0, 3))]}
    arrays = [x, y] if g.random() < 0.8 or name.startswith("__r") else [y, x]
    return Call(_text(name, ("y",), kwargs, arrays), arrays,
                lambda ns, t: getattr(t[0], name)(t[1], **kwargs))


UNARY = ["abs", "neg", "sign", "exp", "log", "sqrt", "rsqrt", "sin", "cos", "tanh", "sigmoid",
         "relu", "erf", "reciprocal", "square", "floor", "ceil", "round", "trunc", "log1p",
         "nan_to_num", "clamp", "__neg__", "__abs__", "__invert__", "logical_not", "isnan",
         "isinf", "isfinite", "float", "long", "bool", "int", "double"]


def unary(g) -> Call:
    name = UNARY[int(g.integers(0, len(UNARY)))]
    kind = _kind(g, 0.0 if name == "__invert__" else 0.7, ints=True)
    x = _array(g, _shape(g), kind)
    if name == "clamp":
        bounds = [(-0.5, 0.5), (None, 1), (0, None), (1, -1), (-2, 2.5)][int(g.integers(0, 5))]
        kwargs = _kw(min=bounds[0], max=bounds[1])
        if g.random() < 0.3 and x.ndim:  # a tensor bound, broadcast
            bound = _array(g, _broadcast_partner(g, x.shape), "normal")
            return Call(_text(name, (), {"min": "b"}, [x, bound]), [x, bound],
                        lambda ns, t: t[0].clamp(min=t[1]))
        return _method(name, [x], **kwargs)
    if name == "round" and g.random() < 0.4:
        return _method(name, [x], decimals=int(g.integers(-1, 3)))
    if name == "nan_to_num" and g.random() < 0.5:
        return _method(name, [x], nan=1.5, posinf=9.0)
    return _method(name, [x])


def _permutation(g, rank: int) -> tuple[int, ...]:
    return tuple(int(d) - (rank if g.random() < 0.3 else 0) for d in g.permutation(rank))


def shape_change(g) -> Call:
    shape = _shape(g, 0 if g.random() < 0.1 else 1)  # a 0-d tensor now and then: dim 0 or -1
    rank = len(shape)
    x = _array(g, shape, _kind(g, 0.8))
    name = ["reshape", "flatten", "squeeze", "unsqueeze", "transpose", "permute", "movedim",
            "flip", "roll", "repeat", "tile", "repeat_interleave", "expand", "narrow", "split",
            "chunk", "unbind", "tril", "triu", "diagonal", "unflatten", "view", "t", "mT",
            "T"][int(g.integers(0, 25))]
    d = _dim(g, rank)
    if name in ("reshape", "view"):
        sizes = list(shape)
        g.shuffle(sizes)
        if sizes and g.random() < 0.5:
            sizes[int(g.integers(0, len(sizes)))] = -1
        return _method(name, [x], *sizes)
    if name == "flatten" and not rank:
        return _method(name, [x])
    if name == "flatten":
        first, last = sorted(int(v) for v in g.integers(0, rank, 2))
        return _method(name, [x], first - (rank if g.random() < 0.3 else 0), last)
    if name == "squeeze":
        return _method(name, [x]) if g.random() < 0.3 else _method(name, [x], _dims(g, rank)
                                                                   or 0)
    if name == "unsqueeze":
        return _method(name, [x], int(g.integers(-rank - 1, rank + 1)))
    if name == "transpose":
        return _method(name, [x], d, _dim(g, rank))
    if name == "permute":
        return _method(name, [x], *_permutation(g, rank))
    if name == "movedim":
        return _method(name, [x], d, _dim(g, rank))
    if name == "flip":
        return _method(name, [x], _dims(g, rank) or (0,))
    if name == "roll":
        if g.random() < 0.3:
            return _method(name, [x], int(g.integers(-7, 8)))
        return _method(name, [x], int(g.integers(-7, 8)), d)
    if name in ("repeat", "tile"):
        count = rank + int(g.integers(0, 2)) if name == "repeat" else int(g.integers(1, rank + 2))
        return _method(name, [x], tuple(int(v) for v in g.integers(1, 3, count)))
    if name == "repeat_interleave":
        return _method(name, [x], int(g.integers(1, 4)), **({} if g.random() < 0.3
                                                              else {"dim": d}))
    if name == "expand":
        sizes = [-1 if g.random() < 0.3 else (int(g.integers(1, 4)) if s == 1 else s)
                 for s in shape]
        return _method(name, [x], *([2] if g.random() < 0.3 else []), *sizes)
    if name == "narrow":
        size = shape[d] if rank else 1
        start = int(g.integers(0, size + 1)) if size else 0
        return _method(name, [x], d, start - (size if g.random() < 0.3 and start < size else 0),
                       int(g.integers(0, size - start + 1)))
    if name == "split":
        if g.random() < 0.5:
            return _method(name, [x], int(g.integers(1, 4)), d)
        size, parts = (shape[d] if rank else 1), []
        while sum(parts) < size:
            parts.append(int(g.integers(0, size - sum(parts) + 1)))
        return _method(name, [x], parts or [0], d)
    if name == "chunk":
        return _method(name, [x], int(g.integers(1, 5)), d)
    if name == "unbind":
        return _method(name, [x], d)
    if name in ("tril", "triu"):
        kind = "normal" if x.dtype.kind == "f" else "int"
        matrix = _array(g, shape + (3,) * max(0, 2 - rank), kind)
        return _method(name, [matrix], int(g.integers(-2, 3)))
    if name == "diagonal":
        x = _array(g, shape + (3,) * max(0, 2 - rank), "normal")
        a, b = (int(v) for v in g.permutation(x.ndim)[:2])
        return _method(name, [x], int(g.integers(-2, 3)), a, b)
    if name == "unflatten":
        size = shape[d] if rank else 1
        sizes = next(((f, size // f) for f in (2, 3) if size % f == 0 and size > f), (size, 1))
        return _method(name, [x], d, sizes if g.random() < 0.5 else (-1, sizes[1]))
    if name in ("t", "mT", "T"):
        x = _array(g, shape[:2] if name == "t" else shape, "normal")
        if name == "t":
            return _method(name, [x])
        return Call(f"x.{name} on {x.dtype}{x.shape}", [x], lambda ns, t: getattr(t[0], name))
    raise AssertionError(name)


def _basic_index(g, shape) -> list:
    """A basic index: integers (some negative), slices (some steps, starts and stops out of
    range), None, one Ellipsis."""
    index, axis = [], 0
    while axis < len(shape) and g.random() < 0.8:
        pick, size = g.random(), shape[axis]
        if pick < 0.3 and size:
            index.append(int(g.integers(-size, size)))
        elif pick < 0.8:
            start = [None, 0, 1, -1, -3, 5][int(g.integers(0, 6))]
            stop = [None, 2, -1, 7, 0][int(g.integers(0, 5))]
            index.append(slice(start, stop, [None, 1, 2, 3][int(g.integers(0, 4))]))
        elif pick < 0.9:
            index.append(None)
            continue
        else:
            index.append(Ellipsis)
            axis = len(shape) - int(g.integers(0, len(shape) - axis + 1))
            continue
        axis += 1
    return index


def indexing(g) -> Call:
    shape = _shape(g, 1)
    x = _array(g, shape, _kind(g, 0.85))
    arrays, index = [x], _basic_index(g, shape)
    index = [i for i in index if i is not Ellipsis]  # advanced indices beside one another
    axis = sum(1 for i in index if i is not None)
    if axis < len(shape) and g.random() < 0.6:  # an advanced index on an axis after the basic
        size = shape[axis]
        if g.random() < 0.4:
            index.append(_array(g, shape[axis:axis + 1], "bool"))
        elif size:
            index.append(g.integers(-size, size, _shape(g, 1, 2)).astype(np.int64))
        if index and isinstance(index[-1], np.ndarray) and axis + 1 < len(shape) and \
                g.random() < 0.4 and shape[axis + 1]:  # and a second, broadcast against it
            index.append(g.integers(0, shape[axis + 1], (1,)).astype(np.int64))
    arrays += [i for i in index if isinstance(i, np.ndarray)]
    written = g.random() < 0.35

    def key(t):
        tensors = iter(t[1:])
        return tuple(next(tensors) if isinstance(i, np.ndarray) else i for i in index)

    text = f"x[{', '.join('t' if isinstance(i, np.ndarray) else repr(i) for i in index)}]"
    if not written:
        return Call(text + " on " + ", ".join(f"{a.dtype}{a.shape}" for a in arrays), arrays,
                    lambda ns, t: t[0][key(t)])
    try:
        picked = x[tuple(index)].shape
    except IndexError:
        picked = ()
    value = _array(g, _broadcast_partner(g, picked), "normal" if x.dtype.kind == "f" else "int")
    value = value.astype(x.dtype)
    arrays.append(value)

    def write(ns, t):
        y = t[0].clone()
        y[key(t[:-1])] = t[-1]
        return y
    return Call(text + " = v on " + ", ".join(f"{a.dtype}{a.shape}" for a in arrays), arrays,
                write)


def gathering(g) -> Call:
    shape = _shape(g, 1)
    rank, x = len(shape), _array(g, shape, "distinct")
    d = _dim(g, rank)
    size = shape[d]
    name = ["gather", "index_select", "take_along_dim", "topk", "sort", "argsort",
            "scatter_add", "scatter", "cat", "stack", "where", "masked_fill"][int(g.integers(0,
                                                                                          12))]
    if name in ("gather", "take_along_dim", "scatter_add", "scatter"):
        sizes = tuple(int(g.integers(1, s + 1)) if s else 0 for s in shape)
        sizes = sizes[:d % rank] + (int(g.integers(1, 4)),) + sizes[d % rank + 1:]
        if not size:
            return _method("sum", [x])
        index = g.integers(0, size, sizes).astype(np.int64)
        if name in ("gather", "take_along_dim"):
            return Call(f"x.{name}({d}, index) on {x.shape}, index {index.shape}", [x, index],
                        lambda ns, t: getattr(t[0], name)(t[1], dim=d) if name != "gather"
                        else t[0].gather(d, t[1]))
        src = _array(g, index.shape, "normal")
        return Call(f"x.{name}({d}, index, src) on {x.shape}, index {index.shape}",
                    [x, index, src], lambda ns, t: getattr(t[0], name)(d, t[1], t[2]))
    if name == "index_select":
        if not size:
            return _method("sum", [x])
        index = g.integers(0, size, int(g.integers(0, 5))).astype(np.int64)
        return Call(f"x.index_select({d}, index) on {x.shape}, {index}", [x, index],
                    lambda ns, t: t[0].index_select(d, t[1]))
    if name == "topk":
        return _method(name, [x], int(g.integers(0, size + 1)), d,
                       largest=bool(g.random() < 0.5))
    if name in ("sort", "argsort"):
        return _method(name, [x], dim=d, descending=bool(g.random() < 0.5))
    if name in ("cat", "stack"):
        kinds = ["normal", "normal", _kind(g, 0.5)]
        parts = [_array(g, shape if name == "stack" else
                        shape[:d % rank] + (int(g.integers(0, 3)),) + shape[d % rank + 1:], k)
                 for k in kinds[:int(g.integers(1, 4))]]
        dim = d if name == "cat" else int(g.integers(-rank - 1, rank + 1))
        return Call(f"{name}({[p.shape for p in parts]}, dim={dim}) of "
                    f"{[str(p.dtype) for p in parts]}", parts,
                    lambda ns, t: getattr(ns, name)(list(t), dim=dim))
    condition = _array(g, _broadcast_partner(g, shape), "bool")
    if name == "masked_fill":
        return Call(f"x.masked_fill(mask{condition.shape}, -1.5) on {x.shape}", [x, condition],
                    lambda ns, t: t[0].masked_fill(t[1], -1.5))
    other = _array(g, _broadcast_partner(g, shape), _kind(g, 0.6))
    return Call(f"where(c{condition.shape}, x{x.shape}, y{other.dtype}{other.shape})",
                [condition, x, other], lambda ns, t: ns.where(t[0], t[1], t[2]))


def product(g) -> Call:
    """`a @ b` as torch.matmul means it: vectors on either side, batches broadcast."""
    inner = int(g.integers(1, 5))
    ranks = (int(g.integers(1, 5)), int(g.integers(1, 5)))
    batch = _shape(g, 0, 2)
    a_shape = (inner,) if ranks[0] == 1 else batch[len(batch) - min(len(batch), ranks[0] - 2):] \
        + (int(g.integers(1, 4)), inner)
    b_batch = _broadcast_partner(g, batch) if ranks[1] > 2 else ()
    b_shape = (inner,) if ranks[1] == 1 else b_batch + (inner, int(g.integers(1, 4)))
    arrays = [_array(g, a_shape, "normal"), _array(g, b_shape, "normal")]
    if g.random() < 0.5:
        return Call(f"a{a_shape} @ b{b_shape}", arrays, lambda ns, t: t[0] @ t[1])
    return Call(f"a{a_shape}.matmul(b{b_shape})", arrays, lambda ns, t: t[0].matmul(t[1]))


FAMILIES = (reduction, binary, unary, shape_change, indexing, gathering, product)


def random_call(seed: int) -> Call:
    # the rest of the vocabulary lives beside this module and draws with its helpers
    from tests.support.random_calls_extra import EXTRA

    families = FAMILIES + EXTRA
    g = np.random.default_rng(seed)
    return families[seed % len(families)](g)
