"""ONNX nodes for the tensor vocabulary's index, order and building primitives (gather by index
arrays, one_hot, topk, sort, einsum, tile, tril/triu, full_like), in the shared table: see
`vocabulary_nodes` for the element-type rules they follow."""

from __future__ import annotations

import functools

import numpy as np

from deepsharp.tensors.ops.index import SCATTER_REDUCTIONS, identity
from deepsharp.tracing import dims
from deepsharp.tracing import vocabulary_dims as vdims
from deepsharp_export_onnx.write.nodes import Emit, writes_primitive
from deepsharp_export_onnx.write.vocabulary_nodes import BOOL, INT64, axis_size, dtype_of


# -- choosing by index and order -------------------------------------------------------------------
@writes_primitive("take_along_axis", dims=vdims.index_dims)
def _take_along_axis(emit, inputs, attrs, ranks):
    return emit("GatherElements", list(inputs), {"axis": int(attrs["axis"])})


@writes_primitive("scatter_reduce", dims=vdims.scattered)
def _scatter_reduce(emit, inputs, attrs, ranks):
    """ScatterElements (scatter, scatter_add, scatter_reduce, index_add, diag): reduction none,
    add (sum and mean), max or min; without include_self the named positions first take the
    reduction's identity (a ScatterElements of it); a mean is the sum over each position's
    count, floored for integers (the divisor is positive: the remainder Mod takes is exact)."""
    data, index, src = inputs
    reduce = {v: k for k, v in SCATTER_REDUCTIONS.items()}[int(attrs["reduce"])]
    axis, kind = {"axis": int(attrs["axis"])}, emit.result_dtype()
    shape = functools.cache(lambda: emit("Shape", [index], suffix="index_shape"))
    if emit.dims(1) is None or emit.dims(1) != emit.dims(2):  # src read over index's shape
        src = emit("Slice", [src, emit.constant("starts", [0] * ranks[1]), shape()],
                   suffix="src")
    if reduce == "none":
        return emit("ScatterElements", [data, index, src], axis)

    def spread(label: str, value) -> str:  # `value` at every position of index
        return emit("Expand", [emit.constant(label, np.asarray(value, kind), kind), shape()],
                    suffix=f"{label}_spread")

    if not attrs["include_self"]:
        data = emit("ScatterElements", [data, index, spread("identity", identity(
            SCATTER_REDUCTIONS[reduce], kind))], axis, suffix="without_self")
    reduction = {"sum": "add", "mean": "add", "amax": "max", "amin": "min"}[reduce]
    if reduce != "mean":
        return emit("ScatterElements", [data, index, src], {**axis, "reduction": reduction})
    total = emit("ScatterElements", [data, index, src], {**axis, "reduction": "add"},
                 suffix="total")
    ones = emit("Expand", [emit.constant("one", np.asarray(1, kind), kind),
                           emit("Shape", [data], suffix="shape")], suffix="ones")
    if not attrs["include_self"]:  # a named position counts its scattered values only
        ones = emit("ScatterElements", [ones, index, spread("zero", 0)], axis, suffix="uncounted")
    counts = emit("ScatterElements", [ones, index, spread("count", 1)],
                  {**axis, "reduction": "add"}, suffix="counts")
    if kind.kind == "f":
        return emit("Div", [total, counts])
    remainder = emit("Mod", [total, counts], {"fmod": 0}, suffix="remainder")
    return emit("Div", [emit("Sub", [total, remainder], suffix="multiple"), counts])


def _stacked(emit: Emit, indices: list[str], ranks) -> str:
    """Index arrays broadcast together and stacked on a last axis: GatherND's and ScatterND's
    indices."""
    width = max(ranks)
    if any(r != width for r in ranks) or len(indices) > 1:
        zeros = [emit("Mul", [i, emit.constant("zero", np.asarray(0, np.int64))],
                      suffix=f"zero_{k}") for k, i in enumerate(indices)]
        total = zeros[0]
        for k, z in enumerate(zeros[1:]):
            total = emit("Add", [total, z], suffix=f"broadcast_{k}")
        indices = [emit("Add", [i, total], suffix=f"index_{k}") for k, i in enumerate(indices)]
    columns = [emit("Unsqueeze", [i], {"axes": [width]}, suffix=f"column_{k}")
               for k, i in enumerate(indices)]
    return columns[0] if len(columns) == 1 else emit("Concat", columns, {"axis": -1},
                                                      suffix="stacked")


@writes_primitive("index_nd", dims=vdims.index_nd)
def _index_nd(emit, inputs, attrs, ranks):
    """GatherND by the index arrays broadcast together and stacked on a last axis."""
    return emit("GatherND", [inputs[0], _stacked(emit, list(inputs[1:]), ranks[1:])])


@writes_primitive("index_put", dims=vdims.scattered)
def _index_put(emit, inputs, attrs, ranks):
    """ScatterND (reduction add when accumulating) of the values expanded to the positions the
    stacked indices pick; negative indices made positive first (ScatterND takes 0..n-1)."""
    data, values, indices = inputs[0], inputs[1], list(inputs[2:])
    positive = []
    for k, index in enumerate(indices):
        size = axis_size(emit, data, 0, k, ranks[0])
        wrapped = emit("Add", [index, size], suffix=f"wrapped_{k}")
        negative = emit("Less", [index, emit.constant(f"zero_{k}", np.asarray(0, np.int64))],
                        suffix=f"negative_{k}")
        positive.append(emit("Where", [negative, wrapped, index], suffix=f"positive_{k}"))
    stacked = _stacked(emit, positive, ranks[2:])
    region = emit("Shape", [emit("GatherND", [data, stacked], suffix="region")],
                  suffix="region_shape")
    updates = emit("Expand", [values, region], suffix="updates")
    return emit("ScatterND", [data, stacked, updates],
                {"reduction": "add"} if attrs["accumulate"] else {})


@writes_primitive("one_hot", dims=vdims.one_hot)
def _one_hot(emit, inputs, attrs, ranks):
    """ids[..., None] == 0..depth-1, as int64."""
    column = emit("Unsqueeze", [emit.promoted(inputs, to=INT64)[0]], {"axes": [ranks[0]]},
                  suffix="column")
    classes = emit.constant("classes", np.arange(attrs["depth"], dtype=np.int64))
    return emit("Cast", [emit("Equal", [column, classes], suffix="equal")], {"to": 7})


def _top(emit: Emit, x: str, k: str, axis: int, largest: bool) -> list[str]:
    """TopK, writing `largest` only when 0 (the attribute exists from set 11); bools sort as
    int64."""
    boolean = dtype_of(emit, 0) == BOOL
    source = emit("Cast", [x], {"to": 7}, suffix="as_int") if boolean else x
    attrs = {"axis": axis, **({} if largest else {"largest": 0})}
    values, indices = emit("TopK", [source, k], attrs, outputs=2,
                           suffix="top" if boolean else None)
    if boolean:
        values = emit("Cast", [values], {"to": 9})
    return [values, indices]


@writes_primitive("topk", dims=vdims.topk)
def _topk(emit, inputs, attrs, ranks):
    k = emit.constant("k", [int(attrs["k"])])
    return _top(emit, inputs[0], k, int(attrs["axis"]), bool(attrs["largest"]))


@writes_primitive("sort", dims=vdims.same_twice)
def _sort(emit, inputs, attrs, ranks):
    """TopK of the whole axis (its size read from the shape when symbolic)."""
    axis = int(attrs["axis"]) % ranks[0]
    k = axis_size(emit, inputs[0], 0, axis, ranks[0])
    return _top(emit, inputs[0], k, axis, bool(attrs["descending"]))


# -- building --------------------------------------------------------------------------------------
@writes_primitive("einsum", dims=vdims.einsum)
def _einsum(emit, inputs, attrs, ranks):
    """Einsum; over bools (numpy's: any of the ands) as int64, then non-zero."""
    if emit.result_dtype() != BOOL:
        return emit("Einsum", emit.promoted(inputs), {"equation": attrs["equation"]})
    counts = emit("Einsum", emit.promoted(inputs, to=INT64), {"equation": attrs["equation"]},
                  suffix="counts")
    return emit("Cast", [counts], {"to": 9})


@writes_primitive("tile", dims=vdims.tile)
def _tile(emit, inputs, attrs, ranks):
    return emit("Tile", [inputs[0], emit.constant("repeats", [int(r) for r in attrs["reps"]])])


@writes_primitive("trilu", dims=dims.elementwise)
def _trilu(emit, inputs, attrs, ranks):
    k = emit.constant("k", np.asarray(int(attrs["k"]), np.int64))
    return emit("Trilu", [inputs[0], k], {"upper": int(attrs["upper"])})


@writes_primitive("full_like", dims=dims.elementwise)
def _full_like(emit, inputs, attrs, ranks):
    """The value Expanded to the input's Shape."""
    kind = np.dtype(attrs["dtype"])
    value = emit.constant("value", np.asarray(attrs["value"], kind), kind)
    return emit("Expand", [value, emit("Shape", [inputs[0]], suffix="shape")])

