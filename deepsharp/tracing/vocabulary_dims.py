"""How the tensor vocabulary's primitives carry symbolic axes (see `dims` for the rule form):
those not here use `dims.elementwise` (comparisons, clamp, scans, triangles, full_like) or
`dims.reduce` (min, prod, var, logsumexp, all, any)."""

from __future__ import annotations

from deepsharp.tensors.ops.einsum import parse
from deepsharp.tracing.dims import DimContext, _agree, broadcast
from deepsharp.tracing.symbols import Dim, Dims, Sym, example


def along(ctx: DimContext) -> list[Dims]:
    """max_along, min_along, argmax, argmin: one axis reduced (kept as 1 with keepdims); argmax
    over the flattened values gives a 0-d result (all ones with keepdims)."""
    dims = ctx.operands[0].dims
    if ctx.attrs.get("flat"):
        return [(1,) * len(dims) if ctx.attrs["keepdims"] else ()]
    axis = ctx.attrs["axis"]
    kept = dims[:axis] + ((1,) if ctx.attrs["keepdims"] else ()) + dims[axis + 1:]
    return [kept] * len(ctx.shapes)


def topk(ctx: DimContext) -> list[Dims]:
    """The chosen axis becomes k (fixed); both results. k equal to a symbolic axis's example
    size was read from it in Python and would stay fixed: refused, naming sort."""
    dims, axis, k = ctx.operands[0].dims, ctx.attrs["axis"] % ctx.operands[0].rank, ctx.attrs["k"]
    if isinstance(dims[axis], Sym) and k == dims[axis].example:
        raise ctx.symbolic(f"k={k} is the example size of the symbolic axis {axis} "
                           f"({dims[axis]}), and would stay {k} at other sizes; to order the "
                           f"whole axis use sort")
    return [dims[:axis] + (k,) + dims[axis + 1:]] * 2


def same_twice(ctx: DimContext) -> list[Dims]:
    """sort: values and indices keep the input's dims."""
    return [ctx.operands[0].dims] * 2


def index_dims(ctx: DimContext) -> list[Dims]:
    """take_along_axis: the result has the index's dims. Off the gathered axis an index may be
    shorter than the input (PyTorch's gather takes the first entries), but not the input's
    symbolic size fixed at its example size (a constant made with that size cannot follow it)."""
    data, index, axis = ctx.operands[0].dims, ctx.operands[1].dims, ctx.attrs["axis"]
    out: list[Dim] = []
    for d, (a, i) in enumerate(zip(data, index)):
        if d != axis and (isinstance(a, Sym) or isinstance(i, Sym)) and example(a) == example(i):
            out.append(_agree(ctx, d, [a, i], example(i), "where gather's index meets its input"))
        else:
            out.append(i)
    return [tuple(out)]


def index_nd(ctx: DimContext) -> list[Dims]:
    """x[i0, ..., ik-1]: the indices' broadcast dims, then x's remaining axes."""
    data, indices = ctx.operands[0].dims, [o.dims for o in ctx.operands[1:]]
    width = len(ctx.shapes[0]) - (len(data) - len(indices))
    return [broadcast(ctx, indices, ctx.shapes[0][:width]) + data[len(indices):]]


def one_hot(ctx: DimContext) -> list[Dims]:
    return [ctx.operands[0].dims + (ctx.attrs["depth"],)]


def tile(ctx: DimContext) -> list[Dims]:
    """Each axis times its count: a symbol's coefficient grows."""
    out: list[Dim] = []
    for dim, count in zip(ctx.operands[0].dims, ctx.attrs["reps"]):
        if isinstance(dim, Sym) and count:
            out.append(Sym(dim.coef * count, dim.atoms))
        else:
            out.append(example(dim) * count)
    return [tuple(out)]


def einsum(ctx: DimContext) -> list[Dims]:
    """Each letter one size across the operands; the result's axes by its letters."""
    inputs, output = parse(ctx.attrs["equation"])
    found: dict[str, list[Dim]] = {}
    for letters, operand in zip(inputs, ctx.operands):
        for c, d in zip(letters, operand.dims):
            found.setdefault(c, []).append(d)
    size = {c: _agree(ctx, i, ds, example(ds[0]), f"where einsum's letter {c!r} meets itself")
            for i, (c, ds) in enumerate(found.items())}
    return [tuple(size[c] for c in output)]


def linear(ctx: DimContext) -> list[Dims]:
    """x (..., in) @ weight (out, in).T: x's leading dims, then out."""
    x, weight = ctx.operands[0].dims, ctx.operands[1].dims
    _agree(ctx, len(x) - 1, [x[-1], weight[1]], example(weight[1]), "the width the weight takes")
    return [x[:-1] + (weight[0],)]


def scattered(ctx: DimContext) -> list[Dims]:
    """scatter_reduce, index_put: the result has the input's dims (the index and src write into
    it)."""
    return [ctx.operands[0].dims]
