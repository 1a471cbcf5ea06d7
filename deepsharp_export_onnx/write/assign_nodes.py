"""ONNX nodes for the primitives that place values: `setitem` (an in-place write, recorded),
`arange` (a `Range` whose limits symbolic sizes feed) and `full` (a tensor of one value whose
shape, or value, symbolic sizes give).

x[region] = value is written as Where(mask, placed, x): `mask` is True on the region, `placed` the
value gathered along every axis the region takes part of, so each position of x finds the value
meant for it. Over fixed axes both are constants; over a symbolic axis they are computed in the
graph from the positions `Range(0, n)`, sliced with the bounds as written (ONNX's Slice counts
negative bounds from the end, as Python does) and scattered back; the value gets one spare entry
on such an axis (`Pad`), so that a region holding no place at some size still gathers. A bool tensor is written with
And/Or/Not (ONNX Runtime has no bool Where).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
from onnx import TensorProto, helper

from deepsharp.tracing import slices
from deepsharp.tracing.sizes import Poly
from deepsharp.tracing.symbols import Sym
from deepsharp_export_onnx.write.nodes import Emit, slice_node, writes_primitive


def _scalar(emit: Emit, value: str, label: str) -> str:
    return emit("Reshape", [value, emit.constant(f"{label}_scalar", np.zeros(0, np.int64))],
                suffix=label)


def _axis_of_rank(emit: Emit, vector: str, axis: int, rank: int, label: str) -> str:
    shape = [1] * rank
    shape[axis] = -1
    return emit("Reshape", [vector, emit.constant(f"{label}_shape", shape)], suffix=label)


def _fixed_axis(n: int, b: int, e: int, s: int) -> tuple[np.ndarray, np.ndarray]:
    """The region's mask over an axis of fixed size n, and the value's index for each position."""
    taken = list(range(n))[slice(b, e, s)]
    mask = np.zeros(n, np.bool_)
    place = np.zeros(n, np.int64)
    mask[taken] = True
    place[taken] = np.arange(len(taken))
    return mask, place


def _symbolic_axis(emit: Emit, dim: Sym | int, b: int | Poly, e: int | Poly, s: int, axis: int,
                   placed: bool) -> tuple[str, str | None]:
    """The same, computed in the graph at the axis's run-time size (and bounds: a bound read
    from a symbolic axis is a polynomial the graph computes)."""
    label = f"axis{axis}"
    zero, one = emit.constant(f"{label}_zero", np.asarray(0, np.int64)), \
        emit.constant(f"{label}_one", np.asarray(1, np.int64))
    n = _scalar(emit, emit.size(dim), f"{label}_size")
    positions = emit("Range", [zero, n, one], suffix=f"{label}_positions")
    taken = slice_node(emit, positions, [b], [e], [0], [s], label=f"{label}_taken")
    zeros = emit("Sub", [positions, positions], suffix=f"{label}_zeros")
    ones = emit("Add", [emit("Sub", [taken, taken], suffix=f"{label}_taken_zeros"), one],
                suffix=f"{label}_ones")
    hits = emit("ScatterElements", [zeros, taken, ones], {"axis": 0}, suffix=f"{label}_hits")
    mask = emit("Cast", [hits], {"to": TensorProto.BOOL}, suffix=f"{label}_mask")
    if not placed:
        return mask, None
    count = emit("Size", [taken], suffix=f"{label}_count")
    order = emit("Range", [zero, count, one], suffix=f"{label}_order")
    return mask, emit("ScatterElements", [zeros, taken, order], {"axis": 0},
                      suffix=f"{label}_place")


@writes_primitive("setitem", dims=slices.setitem)
def _setitem(emit: Emit, inputs: Sequence[str], attrs: dict, ranks: Sequence[int]) -> str:
    old, value = inputs
    known, value_dims = emit.dims(0), emit.dims(1)
    if known is None or value_dims is None:
        raise ValueError("setitem is written from a trace only (its symbolic dims are needed)")
    rank = len(known)
    fixed_mask = np.ones((1,) * rank, np.bool_)
    masks, placed = [], value
    written = attrs.get("_bounds", {})
    kinds = slices.slice_axes(known, attrs)  # (a part of a symbolic axis: whatever its length)
    for axis, (dim, b, e, s, v) in enumerate(zip(known, attrs["starts"], attrs["stops"],
                                                 attrs["steps"], value_dims)):
        broadcast = not isinstance(v, Sym) and int(v) == 1
        kind, b, e = written.get(axis, (kinds[axis], b, e))
        if axis in written or isinstance(dim, Sym):
            if kind == "full":
                continue
            mask, place = _symbolic_axis(emit, dim, b, e, s, axis, not broadcast)
            masks.append(_axis_of_rank(emit, mask, axis, rank, f"axis{axis}_mask_{rank}d"))
            if not broadcast:  # the region may hold no place at some size: one spare entry, so
                # that the places outside it (index 0, masked out) have something to gather
                pads = [0] * (2 * rank)
                pads[rank + axis] = 1
                placed = emit("Pad", [placed], {"mode": "constant", "pads": pads},
                              suffix=f"axis{axis}_spare")
        else:
            if slices.of_fixed(int(dim), b, e, s) == "full":
                continue
            vector, index = _fixed_axis(int(dim), b, e, s)
            fixed_mask = fixed_mask & vector.reshape([-1 if a == axis else 1 for a in range(rank)])
            place = emit.constant(f"axis{axis}_place", index)
        if not broadcast:
            placed = emit("Gather", [placed, place], {"axis": axis}, suffix=f"axis{axis}_placed")
    mask = emit.constant("mask", fixed_mask, np.bool_)
    for k, runtime in enumerate(masks):
        mask = emit("And", [mask, runtime], suffix=f"mask_{k}")
    if emit.dtype_of(0) == np.bool_:
        kept = emit("And", [emit("Not", [mask], suffix="outside"), old], suffix="kept")
        return emit("Or", [emit("And", [mask, placed], suffix="written"), kept])
    return emit("Where", [mask, placed, old])


@writes_primitive("arange", dims=slices.arange)
def _arange(emit: Emit, inputs: Sequence[str], attrs: dict, ranks: Sequence[int]) -> str:
    """Range(start, stop, step), its start and stop the sizes the trace read them as (a size
    read from a symbolic axis is computed from the input's shape)."""
    dtype = np.dtype(attrs["dtype"])
    ends = []
    for key in ("start", "stop"):
        value = attrs.get(f"_{key}", attrs[key])
        if isinstance(value, (Sym, Poly)):
            value = _typed(emit, _scalar(emit, emit.size(value), key), dtype, key)
        else:
            value = emit.constant(key, np.asarray(value, dtype), dtype)
        ends.append(value)
    step = emit.constant("step", np.asarray(attrs["step"], dtype), dtype)
    return emit("Range", [ends[0], ends[1], step])


def _typed(emit: Emit, value: str, dtype: np.dtype, label: str) -> str:
    if dtype == np.int64:
        return value
    return emit("Cast", [value], {"to": helper.np_dtype_to_tensor_dtype(dtype)},
                suffix=f"{label}_cast")


@writes_primitive("full", dims=slices.full)
def _full(emit: Emit, inputs: Sequence[str], attrs: dict, ranks: Sequence[int]) -> str:
    """ConstantOfShape of the shape the graph computes; a value read from a symbolic axis is
    computed too and expanded to that shape."""
    dtype = np.dtype(attrs["dtype"])
    shape = emit.shape_operand(attrs["shape"])
    if "_value" not in attrs:
        return emit("ConstantOfShape", [shape],
                    {"value": helper.make_tensor("value", helper.np_dtype_to_tensor_dtype(dtype),
                                                 [1], [attrs["value"]])})
    value = _typed(emit, _scalar(emit, emit.size(attrs["_value"]), "value"), dtype, "value")
    if not attrs["shape"]:
        return value
    return emit("Expand", [value, shape], suffix=None)
