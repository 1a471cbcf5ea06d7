"""How each operation carries symbolic axes from its inputs to its outputs.

A rule takes the `DimContext` of one recorded operation (its operands' symbolic dims, its
attributes, the example shapes of its results) and returns the symbolic dims of every result, or
raises `ctx.symbolic(...)` when a symbolic axis meets something that cannot express it. Rules are
attached to primitives beside their ONNX nodes (`deepsharp_export_onnx.write.nodes.writes_primitive(...,
dims=rule)`); a primitive registered without one gets `positional`.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from deepsharp.errors import TraceErrorKind, TraceException
from deepsharp.tensors.symint import live
from deepsharp.tracing.size_reads import user_line
from deepsharp.tracing.reshape import Inexpressible, reshape_dims, reshape_given
from deepsharp.tensors.ops.windows import NOTSET
from deepsharp.tracing.sized_slices import fixed_position
from deepsharp.tracing.sizes import Poly, as_product
from deepsharp.tracing.symbols import Atom, Dim, Dims, Sym, describe, example, symbolic


@dataclass(frozen=True)
class Operand:
    """One input of a recorded operation, as the tracer sees it."""

    dims: Dims
    dtype: np.dtype
    traced: bool
    array: np.ndarray | None = None  # a constant's values (None for traced values)

    @property
    def rank(self) -> int:
        return len(self.dims)


@dataclass
class DimContext:
    op: str
    label: str                             # how messages name the operation
    attrs: dict[str, Any]
    operands: list[Operand]
    shapes: tuple[tuple[int, ...], ...]    # the results' example shapes
    known_atoms: Callable[[], list[Atom]]
    make_atom: Callable[[int, int, int], Atom]  # (result index, axis, example size) -> new atom
    # (size, name, result index, axis, create) -> the atom of a size computed from other atoms
    # (`steps-1`, `steps//2`: a slice's or a range's length, a size computed in Python), the
    # same for every operation asking for it, held by the first one; None when not made yet
    # and not `create`
    sized_atom: Callable[[Poly, str, int, int, bool], Atom | None] | None = None

    def symbolic(self, message: str) -> TraceException:
        return TraceException(TraceErrorKind.SYMBOLIC_SHAPE,
                              f"{self.label}: {message}{user_line(' (traced at', ')')}")

    def unsupported(self, message: str) -> TraceException:
        return TraceException(TraceErrorKind.UNSUPPORTED_OPERATION, f"{self.label}: {message}")

    def first_traced(self) -> Operand:
        return next(o for o in self.operands if o.traced)

    def new_atom(self, output: int, axis: int) -> Sym:
        """A fresh atom for an extent this operation makes, held by result `output` at `axis`."""
        size = self.shapes[output][axis]
        if size < 2:
            raise self.symbolic(f"axis {axis} of its result is symbolic but only {size} in the "
                                f"traced run, where it would broadcast or vanish; trace with "
                                f"larger symbol sizes")
        return Sym(1, (self.make_atom(output, axis, size),))

    def derived(self, base: Sym, d: int, stride: int, output: int, axis: int, *,
                create: bool = True) -> Dim | None:
        """The size ceil((base + d) / stride): `base` itself when d is 0 and stride 1, else one
        atom shared by every operation making it (see `dim_of`)."""
        size = (Poly.of(base) + (d + stride - 1)) // stride
        return self.dim_of(size, output, axis, create=create, name=derived_name(base, d, stride))

    def dim_of(self, size: Poly, output: int, axis: int, *, create: bool = True,
               name: str | None = None) -> Dim | None:
        """A size computed from atoms as the Dim of axis `axis` of result `output`: a number, a
        product of atoms, or else one atom shared by every operation making the same size (held
        by the first one, which computes it from its polynomial). None when `create` is off
        and no operation made it yet."""
        dim = size.as_dim()
        if dim is None:
            dim = as_product(size, self.known_atoms())
        if dim is not None:
            return dim
        if create and size.example < 2:
            raise self.symbolic(f"axis {axis} of its result, {name or size}, is only "
                                f"{max(size.example, 0)} in the traced run, where it would "
                                f"broadcast or vanish; trace with larger symbol sizes")
        atom = self.sized_atom(size, name or str(size), output, axis, create)
        return None if atom is None else Sym(1, (atom,))


def derived_name(base: Sym, d: int, stride: int) -> str:
    """How a derived size is written as a dim_param: `steps-1`, `ceil(steps/2)`."""
    if stride == 1:
        return f"{base}{d:+d}"
    return f"ceil(({base}{d:+d})/{stride})" if d else f"ceil({base}/{stride})"


DimRule = Callable[[DimContext], list[Dims]]


def _agree(ctx: DimContext, axis: int, dims: Sequence[Dim], size: int, why: str) -> Dim:
    """The one size several operands give one axis: a symbol must meet the same symbol or 1."""
    syms = {d for d in dims if isinstance(d, Sym)}
    fixed = {int(d) for d in dims if not isinstance(d, Sym) and int(d) != 1}
    if len(syms) > 1:
        raise ctx.symbolic(f"axis {axis} is {' in one operand and '.join(sorted(map(str, syms)))} "
                           f"in another, {why}")
    if syms and fixed:
        (sym,) = syms
        raise ctx.symbolic(f"axis {axis} is the symbolic size {sym} in one operand and fixed at "
                           f"{min(fixed)} in another, {why} (a constant made with the example's "
                           f"size cannot follow the symbol)")
    return syms.pop() if syms else size


def broadcast(ctx: DimContext, operands: Sequence[Dims], shape: Sequence[int]) -> Dims:
    """numpy broadcasting of symbolic dims to the example result `shape`."""
    rank = len(shape)
    out = []
    for axis in range(rank):
        present = [d[axis - (rank - len(d))] for d in operands if axis >= rank - len(d)]
        out.append(_agree(ctx, axis, present, shape[axis], "where they broadcast"))
    return tuple(out)


def elementwise(ctx: DimContext) -> list[Dims]:
    """Results take the broadcast of every operand (unary functions keep their input's dims)."""
    return [broadcast(ctx, [o.dims for o in ctx.operands], shape) for shape in ctx.shapes]


def like_first(ctx: DimContext) -> list[Dims]:
    """The result takes its first operand's dims (prelu: the weight lies along one axis)."""
    return [tuple(ctx.operands[0].dims)]


def matmul(ctx: DimContext) -> list[Dims]:
    a, b = (o.dims for o in ctx.operands)
    _agree(ctx, len(a) - 1, [a[-1], b[-2]], example(a[-1]), "the axis the product contracts")
    batch = broadcast(ctx, [a[:-2], b[:-2]], ctx.shapes[0][:-2])
    return [batch + (a[-2], b[-1])]


def reduce(ctx: DimContext) -> list[Dims]:
    dims, axes = ctx.operands[0].dims, set(ctx.attrs["axes"])
    if ctx.attrs["keepdims"]:
        return [tuple(1 if i in axes else d for i, d in enumerate(dims))]
    return [tuple(d for i, d in enumerate(dims) if i not in axes)]


def transpose(ctx: DimContext) -> list[Dims]:
    dims = ctx.operands[0].dims
    return [tuple(dims[p] for p in ctx.attrs["perm"])]


def reshape(ctx: DimContext) -> list[Dims]:
    """The sizes given as sizes read from symbolic axes (SymInts: `x.view(b, t, 2, -1)`) are
    their Dims; the other axes take what is left of the input's atoms by value
    (tracing/reshape.py), or, when the given sizes hold atoms the input lacks (`t // 2`), are
    fixed as written, a -1 a new atom."""
    shape = ctx.attrs["shape"]
    try:
        if not any(live(n) for n in shape):
            return [reshape_dims(ctx.operands[0].dims, ctx.shapes[0])]
        given = {axis: ctx.dim_of(n.expr, 0, axis) for axis, n in enumerate(shape) if live(n)}
        return [reshape_given(ctx.operands[0].dims, ctx.shapes[0], given,
                              lambda axis: ctx.new_atom(0, axis) if shape[axis] == -1 else None)]
    except Inexpressible as error:
        raise ctx.symbolic(str(error)) from None


def matching_atoms(ctx: DimContext, size: int) -> Dim:
    """`size` as the one product of known atoms equal to it, or as a fixed size when none is: a
    size taken from a symbolic axis in Python (`x.shape[0]`) arrives as a plain integer."""
    atoms = ctx.known_atoms()
    longest = len(atoms) if len(atoms) <= 8 else 3
    found = {tuple(c) for n in range(1, longest + 1) for c in itertools.combinations(atoms, n)
             if math.prod(a.example for a in c) == size}
    if len(found) > 1:
        options = " or ".join("*".join(a.name for a in c) for c in sorted(found, key=str))
        raise ctx.symbolic(f"the size {size} could be {options}; trace with symbol sizes that "
                           f"differ from each other's products")
    return Sym.of(found.pop()) if found else size


def expand(ctx: DimContext) -> list[Dims]:
    """Axes the input has (other than size 1) carry over; a new extent given as a size read from
    a symbolic axis (a SymInt: `y.expand(x.shape[0], 4)`) is its Dim; a plain one is the symbol
    whose example size it equals, if one does, else fixed."""
    dims, shape = ctx.operands[0].dims, ctx.shapes[0]
    given = ctx.attrs["shape"]
    lead = len(shape) - len(dims)
    out: list[Dim] = []
    for axis, size in enumerate(shape):
        own = dims[axis - lead] if axis >= lead else 1
        if isinstance(own, Sym) or own != 1:
            out.append(own)
        elif live(given[axis]):
            out.append(ctx.dim_of(given[axis].expr, 0, axis))
        else:
            out.append(1 if size == 1 else matching_atoms(ctx, size))
    return [tuple(out)]


def concat(ctx: DimContext) -> list[Dims]:
    """Other axes must agree; the joined axis is the sum of the parts: a multiple of the same
    atoms when every part is one, else a new atom held by the result."""
    axis, shape = ctx.attrs["axis"], ctx.shapes[0]
    parts = [o.dims for o in ctx.operands]
    out: list[Dim] = []
    for i, size in enumerate(shape):
        if i != axis:
            out.append(_agree(ctx, i, [p[i] for p in parts], size, "where the parts are joined"))
            continue
        joined = [p[i] for p in parts]
        if not any(isinstance(d, Sym) for d in joined):
            out.append(size)
        elif all(isinstance(d, Sym) and d.atoms == joined[0].atoms for d in joined):
            out.append(Sym(sum(d.coef for d in joined), joined[0].atoms))
        else:
            out.append(ctx.new_atom(0, i))
    return [tuple(out)]


def gather(ctx: DimContext) -> list[Dims]:
    """data[..., indices, ...] along `axis`: the indices' dims replace that axis. Constant indices
    into a symbolic axis are kept as written (a negative index counts from the end)."""
    data, indices = ctx.operands[0].dims, ctx.operands[1].dims
    axis = ctx.attrs["axis"]
    _constant_positions(ctx, data[axis], ctx.operands[1].array, axis)
    return [data[:axis] + indices + data[axis + 1:]]


def _constant_positions(ctx: DimContext, dim: Dim, positions: np.ndarray | None,
                        axis: int) -> None:
    """Constant positions into a symbolic axis must not hold its last position in the traced run
    (see tracing/sized_slices.py `fixed_position`)."""
    if isinstance(dim, Sym) and positions is not None and positions.dtype.kind in "iu" \
            and bool((positions == dim.example - 1).any()):
        raise ctx.symbolic(fixed_position(dim, axis, dim.example - 1))


# -- series, images and volumes: x (N, *places, C) ------------------------------------------------
def _fixed(ctx: DimContext, operands: Sequence[Operand], what: str) -> None:
    for operand in operands:
        if symbolic(operand.dims):
            raise ctx.symbolic(f"its {what} {describe(operand.dims)} has a symbolic size; it "
                               f"must be fixed")


def _keeps_length(ctx: DimContext, axis: int, nd: int) -> bool:
    """Whether the window keeps every length of place axis `axis`: at stride 1 the length
    changes by a constant (the border less the window's reach), zero here at every length."""
    attrs = ctx.attrs
    if attrs["strides"][axis] != 1:
        return False
    if ctx.op == "conv_transpose":
        k, d, extra = example(ctx.operands[1].dims[axis]), attrs["dilations"][axis], \
            attrs["output_padding"][axis]
        return attrs["pads"][axis] + attrs["pads"][nd + axis] == (k - 1) * d + extra
    if attrs.get("auto_pad", NOTSET) != NOTSET:  # SAME_UPPER: ceil(n / 1) = n
        return True
    k = attrs["kernel"][axis] if "kernel" in attrs else example(ctx.operands[1].dims[axis])
    d = (attrs.get("dilations") or (1,) * nd)[axis]
    return attrs["pads"][axis] + attrs["pads"][nd + axis] == (k - 1) * d


def windowed(ctx: DimContext) -> list[Dims]:
    """conv, conv_transpose, max_pool, avg_pool: the batch carries over; a symbolic place keeps
    its symbol where the window keeps every length (stride 1, a border making up for the window),
    else becomes a new atom held by the result; a convolution's channels are fixed (its kernel's),
    a pool's carry over."""
    x, shape = ctx.operands[0].dims, ctx.shapes[0]
    nd = len(x) - 2
    kernel = ctx.op in ("conv", "conv_transpose")
    if kernel:
        _fixed(ctx, ctx.operands[1:], "kernel or bias")
        taken = example(ctx.operands[1].dims[-2]) * ctx.attrs.get("groups", 1)
        _agree(ctx, nd + 1, [x[-1], taken], taken, "the input channels its kernel takes")
    out: list[Dim] = [x[0]]
    for axis, dim in enumerate(x[1:-1]):
        if not isinstance(dim, Sym):
            out.append(shape[1 + axis])
        else:
            out.append(dim if _keeps_length(ctx, axis, nd) else ctx.new_atom(0, 1 + axis))
    out.append(shape[-1] if kernel else x[-1])
    return [tuple(out)]


def adaptive(ctx: DimContext) -> list[Dims]:
    """adaptive pools: the places become the `sizes` (fixed), the batch and channels carry over.
    Symbolic places are written for sizes of 1 (a reduction) or a series' one length (bins worked
    out in the graph); channels must be fixed unless the sizes are 1."""
    x, sizes = ctx.operands[0].dims, tuple(ctx.attrs["sizes"])
    if not all(s == 1 for s in sizes):
        if len(sizes) > 1 and symbolic(x[1:-1]):
            raise ctx.symbolic(f"an adaptive pool of places {describe(x[1:-1])} to sizes {sizes}: "
                               f"symbolic places are written for sizes of 1 or a series' one "
                               f"length only")
        if isinstance(x[-1], Sym):
            raise ctx.symbolic(f"an adaptive pool over symbolic channels {x[-1]}: only sizes of "
                               f"1 are written for them")
    return [(x[0], *sizes, x[-1])]


def resized(ctx: DimContext) -> list[Dims]:
    """resize: the places become the recorded sizes, which were computed in Python from the
    example's sizes: a symbolic place cannot follow them."""
    x, sizes = ctx.operands[0].dims, tuple(ctx.attrs["sizes"])
    for axis, dim in enumerate(x[1:-1], start=1):
        if isinstance(dim, Sym):
            raise ctx.symbolic(f"place axis {axis} is the symbolic size {dim}, but its output size "
                               f"{sizes[axis - 1]} was fixed from the example's {dim.example} "
                               f"places; resize fixed places only (trace with that axis fixed)")
    return [(x[0], *sizes, x[-1])]


def padded(ctx: DimContext) -> list[Dims]:
    """pad: an axis padded by nothing carries over; a padded symbolic axis is a new atom."""
    x, pads, shape = ctx.operands[0].dims, ctx.attrs["pads"], ctx.shapes[0]
    out: list[Dim] = []
    for axis, dim in enumerate(x):
        if pads[axis] + pads[len(x) + axis] == 0:
            out.append(dim)
        else:
            out.append(ctx.new_atom(0, axis) if isinstance(dim, Sym) else shape[axis])
    return [tuple(out)]


# -- sequences -------------------------------------------------------------------------------------
def embedding(ctx: DimContext) -> list[Dims]:
    """weight[ids]: the ids' dims, then the table's width."""
    weight, ids = (o.dims for o in ctx.operands[:2])
    return [ids + (weight[-1],)]


def attention(ctx: DimContext) -> list[Dims]:
    """q (..., Tq, d), k (..., Tk, d), v (..., Tk, dv)[, key_mask (batch, Tk)] -> (..., Tq, dv):
    the leading axes, the contracted width and the keys must agree."""
    q, k, v = (o.dims for o in ctx.operands[:3])
    rank = len(q)
    lead = broadcast(ctx, [q[:-2], k[:-2], v[:-2]], ctx.shapes[0][:-2])
    _agree(ctx, rank - 1, [q[-1], k[-1]], example(q[-1]), "the width the scores contract")
    keys = _agree(ctx, rank - 2, [k[-2], v[-2]], example(k[-2]), "the keys and their values")
    if len(ctx.operands) > 3:
        mask = ctx.operands[3].dims
        _agree(ctx, 0, [mask[0], lead[0]], example(mask[0]), "the key mask's batch")
        _agree(ctx, 1, [mask[1], keys], example(mask[1]), "the key mask's keys")
    return [lead + (q[-2], v[-1])]


def recurrent(ctx: DimContext) -> list[Dims]:
    """lstm, gru: x (batch, steps, in)[, lengths (batch,)] -> y (batch, steps, H) and the last
    state(s) (batch, H). The weights must be constants: ONNX's LSTM and GRU take them in their
    own gate order, which the writer makes from their numbers."""
    x = ctx.operands[0].dims
    weights = ctx.operands[1:5]
    if any(w.traced for w in weights):
        raise ctx.unsupported("its weights depend on an input; they must be constants (ONNX's "
                              "node takes them in its own gate order, made from their numbers)")
    _fixed(ctx, weights, "weight")
    _agree(ctx, 2, [x[2], weights[0].dims[0]], example(x[2]), "the input width its kernel takes")
    batch = x[0]
    if len(ctx.operands) > 5:
        batch = _agree(ctx, 0, [x[0], ctx.operands[5].dims[0]], example(x[0]),
                       "the series' lengths")
    hidden = ctx.shapes[0][-1]
    return [(batch, x[1], hidden)] + [(batch, hidden)] * (len(ctx.shapes) - 1)


def positional(ctx: DimContext) -> list[Dims]:
    """The default: result axis i answers to axis i of the first traced operand. It carries the
    operand's symbol when its example size is unchanged; a symbolic extent whose size changed
    (a convolution's output width) becomes a new atom held by the result; other axes are fixed."""
    source = ctx.first_traced().dims
    results = []
    for k, shape in enumerate(ctx.shapes):
        out: list[Dim] = []
        for axis, size in enumerate(shape):
            own = source[axis] if axis < len(source) else None
            if not isinstance(own, Sym):
                out.append(size)
            elif own.example == size:
                out.append(own)
            else:
                out.append(ctx.new_atom(k, axis))
        results.append(tuple(out))
    return results


__all__ = ["DimContext", "DimRule", "Operand", "adaptive", "attention", "broadcast", "concat",
           "describe", "elementwise", "embedding", "expand", "gather", "like_first", "matmul", "padded",
           "positional", "recurrent", "reduce", "resized", "reshape", "transpose", "windowed"]
