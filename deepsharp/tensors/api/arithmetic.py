"""Rounding, remainders, norms and products with PyTorch's names, arguments and meanings
(the primitives' rules: deepsharp/tensors/ops/rounding.py)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from deepsharp.errors import OpError
from deepsharp.tensors import keywords as kw
from deepsharp.tensors.tensor import Tensor, apply, as_tensor


def add(x: Any, other: Any, alpha: Any = 1) -> Tensor:
    """x + alpha * other (PyTorch's add)."""
    return apply("add", x, other if is_one(alpha) else apply("mul", other, alpha))


def sub(x: Any, other: Any, alpha: Any = 1) -> Tensor:
    """x - alpha * other (PyTorch's sub)."""
    return apply("sub", x, other if is_one(alpha) else apply("mul", other, alpha))


def is_one(alpha: Any) -> bool:
    """Whether alpha is the number 1 (a tensor or another number scales `other`)."""
    if isinstance(alpha, Tensor):
        return False
    return kw.number("alpha", "alpha", alpha) == 1


def div(x: Any, other: Any, rounding_mode: Any = None) -> Tensor:
    """x / other; rounding_mode "floor" is floor_divide (`//`), "trunc" the quotient truncated
    (PyTorch's; integers stay integers in both)."""
    if rounding_mode is None:
        return apply("div", x, other)
    if isinstance(rounding_mode, str) and rounding_mode == "floor":
        return apply("floor_divide", x, other)
    if isinstance(rounding_mode, str) and rounding_mode == "trunc":
        return _trunc_divide(x, other)
    raise OpError(f"div: rounding_mode must be None, 'trunc' or 'floor', received "
                  f"{rounding_mode!r}")


def _trunc_divide(x: Any, other: Any) -> Tensor:
    """Floats: trunc(x / other). Integers: the floored quotient, one more where the division
    was inexact and the quotient negative (so integers stay integers, as PyTorch's)."""
    if any(as_tensor(t).dtype.kind == "f" for t in (x, other)):
        return apply("trunc", apply("div", x, other))
    floored = apply("floor_divide", x, other)
    inexact = apply("not_equal", apply("remainder", x, other), 0)
    negative = apply("less", apply("div", x, other), 0)
    return apply("where", apply("logical_and", inexact, negative), apply("add", floored, 1),
                 floored)


def round(x: Tensor, decimals: Any = 0) -> Tensor:
    """Half to even (PyTorch's and numpy's rule); `decimals` other than 0 is refused: PyTorch
    scales by 10**decimals in the tensor's own type, a rounding of its own."""
    if isinstance(decimals, bool) or not isinstance(decimals, (int, np.integer)) or decimals != 0:
        raise OpError(f"round: decimals={decimals!r} is not supported (only 0); write "
                      f"(x * 10**d).round() / 10**d for the rounding it stands for")
    return apply("round", x)


def erf(x: Tensor) -> Tensor:
    """erf(x); an integer tensor is read as the default float type (PyTorch's; see
    promotion.FLOATING)."""
    return apply("erf", x)


def isfinite(x: Tensor) -> Tensor:
    """Neither NaN nor infinite (every integer is finite)."""
    return apply("logical_not", apply("logical_or", apply("isnan", x), apply("isinf", x)))


def reciprocal(x: Tensor) -> Tensor:
    """1 / x; an integer tensor gives the default float type (PyTorch's)."""
    return apply("div", 1.0, x)


def norm(x: Tensor, p: Any = "fro", dim: Any = None, keepdim: Any = None, dtype: Any = None, *,
         axis: Any = None, keepdims: Any = None, op: str = "norm") -> Tensor:
    """PyTorch's vector norm over `dim` (every axis when None): p = 2 or "fro" the Euclidean
    norm, 1 the sum of magnitudes, inf / -inf the largest / smallest magnitude. Other p (and the
    matrix norm "nuc") are refused by name. The gradient at a zero norm is zero, as PyTorch's."""
    if dtype is not None:
        x = x.to(dtype)
    kw.floating(op, x)
    axes = kw.dims(op, dim, axis, x.ndim)
    keep = int(kw.keep(op, keepdim, keepdims))
    order = _order(op, p, axes if dim is not None or axis is not None else ())
    if order in (1, 2):
        return apply("norm", x, p=order, axes=axes, keepdims=keep)
    magnitudes = apply("abs", x)
    return apply("max" if order > 0 else "min", magnitudes, axes=axes, keepdims=keep)


def vector_norm(x: Tensor, ord: Any = 2, dim: Any = None, keepdim: Any = False, *,
                dtype: Any = None) -> Tensor:
    """torch.linalg.vector_norm: `norm` with its argument named `ord`."""
    return norm(x, ord, dim, keepdim, dtype, op="vector_norm")


def _order(op: str, p: Any, axes: tuple[int, ...]) -> float:
    """p as a number; `axes` the dims given (none: every axis, where "fro" takes any rank)."""
    if isinstance(p, str) and p == "fro":
        if len(axes) > 2:
            raise OpError(f"{op}: p='fro' takes at most two dims, received {len(axes)}")
        return 2
    if isinstance(p, bool) or not isinstance(p, (int, float, np.integer, np.floating)) or \
            float(p) not in (1.0, 2.0, math.inf, -math.inf):
        raise OpError(f"{op}: p={p!r} is not supported; give 1, 2, 'fro', inf or -inf")
    return float(p)


def normalize(x: Tensor, p: Any = 2.0, dim: Any = 1, eps: float = 1e-12) -> Tensor:
    """PyTorch's F.normalize: x / max(norm(x, p, dim, keepdim=True), eps). As PyTorch's, the
    default dim is 1 (for a channels-last series or image, the channels are dim=-1)."""
    return x / norm(x, p, dim, keepdim=True, op="normalize").clamp(min=float(eps))


def matmul(a: Any, b: Any) -> Tensor:
    """a @ b as torch.matmul: batch axes broadcast; a 1-d operand is a row on the left or a
    column on the right, its axis dropped from the result (two vectors give their dot, 0-d)."""
    a, b = as_tensor(a), as_tensor(b)
    if a.ndim == 0 or b.ndim == 0:
        raise OpError(f"matmul: both operands need at least one axis, received shapes "
                      f"{tuple(a.shape)} and {tuple(b.shape)} (torch.matmul refuses a 0-d one "
                      f"too; multiply by it with *)")
    if a.ndim >= 2 and b.ndim >= 2:
        return apply("matmul", a, b)
    inner = (a._data.shape[-1], b._data.shape[0 if b.ndim == 1 else -2])
    if inner[0] != inner[1]:  # named with the shapes as given, not as made matrices
        where = "only" if b.ndim == 1 else "second to last"
        raise OpError(f"matmul: a's last axis ({inner[0]}) and b's {where} axis ({inner[1]}) "
                      f"differ, received shapes {tuple(a.shape)} and {tuple(b.shape)}")
    out = apply("matmul", a.unsqueeze(0) if a.ndim == 1 else a,
                b.unsqueeze(-1) if b.ndim == 1 else b)
    if b.ndim == 1:
        out = out.squeeze(-1)
    return out.squeeze(-1 if b.ndim == 1 else -2) if a.ndim == 1 else out


def mm(a: Tensor, b: Tensor) -> Tensor:
    """The product of two matrices (both 2-d, as PyTorch's torch.mm)."""
    return _product("mm", 2, a, b)


def bmm(a: Tensor, b: Tensor) -> Tensor:
    """Batched products of matrices: (B, n, m) @ (B, m, p), no broadcasting (torch.bmm)."""
    if a.ndim == 3 and b.ndim == 3 and a.shape[0] != b.shape[0]:
        raise OpError(f"bmm: the batches differ, received {tuple(a.shape)} and "
                      f"{tuple(b.shape)} (bmm does not broadcast; matmul does)")
    return _product("bmm", 3, a, b)


def _product(op: str, rank: int, a: Tensor, b: Tensor) -> Tensor:
    if not isinstance(a, Tensor) or not isinstance(b, Tensor) or a.ndim != rank or b.ndim != rank:
        shapes = [tuple(t.shape) if isinstance(t, Tensor) else type(t).__name__ for t in (a, b)]
        raise OpError(f"{op}: needs two {rank}-d tensors, received {shapes[0]} and {shapes[1]}")
    return apply("matmul", a, b)



def dot(a: Tensor, b: Tensor) -> Tensor:
    """The inner product of two 1-d tensors of one length (torch.dot)."""
    if not isinstance(a, Tensor) or not isinstance(b, Tensor) or a.ndim != 1 or b.ndim != 1 \
            or a._data.shape != b._data.shape:
        shapes = [tuple(t.shape) if isinstance(t, Tensor) else type(t).__name__ for t in (a, b)]
        raise OpError(f"dot: needs two 1-d tensors of one length, received {shapes[0]} and "
                      f"{shapes[1]}")
    return apply("sum", apply("mul", a, b), axes=(0,), keepdims=0)


def addmm(x: Any, a: Tensor, b: Tensor, *, beta: Any = 1, alpha: Any = 1) -> Tensor:
    """beta * x + alpha * (a @ b), a and b matrices (torch.addmm); beta 0 ignores x, NaN
    included, as PyTorch's."""
    product = mm(a, b)
    if not is_one(alpha):
        product = apply("mul", product, alpha)
    if not isinstance(beta, Tensor) and beta == 0:
        return product
    return apply("add", x if is_one(beta) else apply("mul", x, beta), product)


def lerp(start: Tensor, end: Any, weight: Any) -> Tensor:
    """start + weight * (end - start), by PyTorch's two formulas (from the nearer end: for
    |weight| < 0.5 from start, else end - (end - start) * (1 - weight))."""
    span = apply("sub", end, start)
    near_start = apply("add", start, apply("mul", weight, span))
    near_end = apply("sub", end, apply("mul", span, apply("sub", 1.0, weight)))
    small = apply("less", apply("abs", as_tensor(weight, like=start._data)), 0.5)
    return apply("where", small, near_start, near_end)


def nan_to_num(x: Tensor, nan: float = 0.0, posinf: Any = None, neginf: Any = None) -> Tensor:
    """NaN, inf and -inf replaced (by 0, and the type's largest and lowest finite values unless
    given); the gradient reaches the finite entries only, as PyTorch's. Integers are copied."""
    if x.dtype.kind != "f":
        return apply("copy", x)
    info = np.finfo(x.dtype)
    high = info.max if posinf is None else kw.number("nan_to_num", "posinf", posinf)
    low = info.min if neginf is None else kw.number("nan_to_num", "neginf", neginf)
    y = apply("where", apply("isnan", x), kw.number("nan_to_num", "nan", nan), x)
    y = apply("where", apply("equal", x, math.inf), float(high), y)
    return apply("where", apply("equal", x, -math.inf), float(low), y)


def cross(a: Tensor, b: Any, dim: Any = None) -> Tensor:
    """The cross product of 3-vectors along `dim` (PyTorch's torch.cross: without dim, the first
    axis of size 3), the two operands broadcast together: (a1 b2 - a2 b1, a2 b0 - a0 b2,
    a0 b1 - a1 b0)."""
    from deepsharp.tensors.api.join import stack

    b = as_tensor(b, like=a._data)
    try:
        shape = np.broadcast_shapes(a._data.shape, b._data.shape)
    except ValueError:
        raise OpError(f"cross: the operands {a._data.shape} and {b._data.shape} cannot be "
                      f"broadcast together") from None
    if dim is None:
        dim = next((d for d, n in enumerate(shape) if n == 3), None)
        if dim is None:
            raise OpError(f"cross: no axis of size 3 in the operands' shape {shape}; give dim")
    at = kw.axis("cross", dim, len(shape))
    if shape[at] != 3:
        raise OpError(f"cross: axis {at} has size {shape[at]}, not 3")
    # the operands given one rank (unit axes in front, sizes as they are: a trace follows them);
    # the other axes broadcast in the products, a size 1 on the cross axis by taking it thrice
    a, b = (t.reshape(*(1,) * (len(shape) - t.ndim), *t.shape) for t in (a, b))
    x, y = ([t.select(at, k if t._data.shape[at] == 3 else 0) for k in range(3)] for t in (a, b))
    parts = [x[(k + 1) % 3] * y[(k + 2) % 3] - x[(k + 2) % 3] * y[(k + 1) % 3] for k in range(3)]
    return stack(parts, at)
