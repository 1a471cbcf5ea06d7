"""ONNX nodes for the spatial primitives, in the shared table (`nodes.PRIMITIVE_NODES`), and the
node groups the spatial writers share with them.

Our values are channels-last, x (N, *places, C); ONNX's Conv, ConvTranspose, pools, Resize,
BatchNormalization and GroupNormalization take channels-first (N, C, *places). A layer writer
receives its value already turned (the exporter writes one Transpose for a run of spatial steps);
a primitive's entry, written for the tracer, turns its input with one Transpose, writes the node
the layer writer writes, and turns the result back (ONNX Runtime's basic optimisations cancel the
pairs between such nodes, through elementwise ones). LayerNormalization and RMSNormalization take
the last axis and Pad any axes: no Transpose. Kernels are turned by a Transpose whose perm
`layout` gives (the runtime folds it for a constant kernel): the parameter keeps its name.

- `conv` -> Conv, `conv_transpose` -> ConvTranspose, `max_pool`/`avg_pool` -> MaxPool/AveragePool;
- `adaptive_avg_pool`/`adaptive_max_pool` -> ReduceMean/ReduceMax to sizes of 1, a pool whose
  window is the bin where every bin is as wide, the bins' matrix or table over fixed places, or
  the composition over a series' free length (`compositions`);
- `pad` -> Pad; `resize` -> Resize by scales (fixed places only);
- `layer_norm`, `rms_norm`, `batch_norm_eval`, `group_norm` -> the operator of the same name.

The entries read shapes from the trace (`TraceEmit.dims`): only the tracer writes them.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np
from onnx import TensorProto

from deepsharp.tensors.ops.pool import adaptive_avg_flat_matrix, adaptive_max_flat_table
from deepsharp.tensors.ops.windows import NOTSET, same_upper_pads
from deepsharp.tracing import dims
from deepsharp.tracing.symbols import Dims, onnx_dims
from deepsharp_export_onnx.compositions import adaptive_pool_over_length
from deepsharp_export_onnx.write.nodes import PRIMITIVE_NODES, Emit, writes_primitive
from layout import (
    conv_kernel_onnx_perm, conv_transpose_kernel_onnx_perm, permute_dims, to_channels_first,
    to_channels_last,
)

FLOAT = TensorProto.FLOAT


def ints(values: Sequence[int]) -> list[int]:
    return [int(v) for v in values]


# -- attributes and node groups shared with the layer writers (channels-first values) -------------
def border(pads: Sequence[int], auto_pad: str, places: Sequence[Any], kernel: Sequence[int],
           strides: Sequence[int], dilations: Sequence[int]) -> dict[str, Any]:
    """The `pads` (or `auto_pad`) attribute for places of `places` (numbers, or anything else for
    a size left free)."""
    if auto_pad == NOTSET:
        return {"pads": list(pads)}
    symbolic = [i for i, n in enumerate(places) if not isinstance(n, int)]
    if any(strides[i] != 1 for i in symbolic):
        return {"auto_pad": auto_pad}
    # with stride 1 the border is the same for every length: work it out for any
    lengths = [n if isinstance(n, int) else 1 for n in places]
    return {"pads": list(same_upper_pads(lengths, kernel, strides, dilations))}


def conv_attrs(attrs: dict[str, Any], kernel: Sequence[int], places: Sequence[Any]) -> dict:
    """Conv's attributes from the `conv` primitive's (a layer spec's `attrs()`)."""
    strides, dilations = attrs["strides"], attrs["dilations"]
    return {"kernel_shape": ints(kernel), "strides": ints(strides), "dilations": ints(dilations),
            "group": int(attrs.get("groups", 1)),
            **border(attrs["pads"], attrs.get("auto_pad", NOTSET), places, kernel, strides,
                     dilations)}


def conv_transpose_attrs(attrs: dict[str, Any], kernel: Sequence[int]) -> dict:
    """ConvTranspose's attributes from the `conv_transpose` primitive's."""
    return {"kernel_shape": ints(kernel), "strides": ints(attrs["strides"]),
            "dilations": ints(attrs["dilations"]), "pads": ints(attrs["pads"]),
            "output_padding": ints(attrs["output_padding"])}


def pool_node_form(primitive: str, attrs: dict[str, Any], places: Sequence[Any]
                   ) -> tuple[str, dict]:
    """(MaxPool or AveragePool, its attributes) from the `max_pool`/`avg_pool` primitive's."""
    kernel, strides = attrs["kernel"], attrs["strides"]
    dilations = attrs.get("dilations") or (1,) * len(kernel)
    form = {"kernel_shape": ints(kernel), "strides": ints(strides),
            **border(attrs["pads"], attrs.get("auto_pad", NOTSET), places, kernel, strides,
                     dilations)}
    # (Runtime's count and divisors are PyTorch's: tested); at stride 1 the count rounds alike
    # either way, and onnx's reference evaluator miscounts ceil_mode windows there
    if attrs.get("ceil_mode") and any(s != 1 for s in strides):
        form["ceil_mode"] = 1
    if primitive == "max_pool":
        if any(d != 1 for d in dilations):  # an attribute of MaxPool from set 10 only
            form["dilations"] = ints(dilations)
        return "MaxPool", form
    form["count_include_pad"] = int(attrs["count_include_pad"])
    return "AveragePool", form


def adaptive_pool_nodes(emit: Emit, x: str, x_dims: Sequence[Any], sizes: Sequence[int],
                        average: bool, elem_type: int = FLOAT) -> str:
    """An adaptive pool of x (N, C, *places), places of fixed sizes, to `sizes`: a pool whose
    window is the bin where every bin is as wide, else the places in one row, a product by the
    bins' averaging matrix (average) or a gather of every bin's places and a ReduceMax (max), then
    the bins laid out again. `x_dims` annotate the values in between."""
    batch, channels, places = x_dims[0], x_dims[1], tuple(x_dims[2:])
    if all(n % s == 0 for n, s in zip(places, sizes)):
        window = [n // s for n, s in zip(places, sizes)]
        attrs = {"kernel_shape": window, "strides": window, "pads": [0] * (2 * len(window))}
        if average:
            attrs["count_include_pad"] = 0
        return emit("AveragePool" if average else "MaxPool", [x], attrs)
    tape = emit.tape
    row = emit("Reshape", [x, emit.constant("row_shape", [0, channels, -1])], suffix="row")
    tape.annotate(row, (batch, channels, int(np.prod(places))), elem_type)
    if average:
        matrix = adaptive_avg_flat_matrix(places, sizes, np.float32)
        pooled = emit("MatMul", [row, emit.constant("bins_matrix", matrix, np.float32)],
                      suffix="bins")
    else:
        table = adaptive_max_flat_table(places, sizes)
        gathered = emit("Gather", [row, emit.constant("bins_table", table)], {"axis": 2},
                        suffix="bins")
        tape.annotate(gathered, (batch, channels, *table.shape), elem_type)
        pooled = emit("ReduceMax", [gathered], {"axes": [3], "keepdims": 0}, suffix="max")
    tape.annotate(pooled, (batch, channels, int(np.prod(sizes))), elem_type)
    return emit("Reshape", [pooled, emit.constant("bins_shape", [0, channels, *sizes])])


def pad_node(emit: Emit, x: str, pads: Sequence[int], mode: str, value: float) -> str:
    """Pad of x's axes by `pads` (the begins of every axis, then the ends)."""
    attrs: dict[str, Any] = {"mode": mode, "pads": ints(pads)}
    if mode == "constant":
        attrs["value"] = float(value)
    return emit("Pad", [x], attrs)


def size_scale(length: int, size: int) -> np.float32:
    """The float32 scale whose product with `length` floors to `size` (the runtime's rule for
    the output length)."""
    scale = np.float32(size / length)
    # runtimes multiply in float32, shape inference in float64: both must reach the size
    while (np.floor(np.float32(length) * scale) < size
           or np.floor(float(length) * float(scale)) < size):
        scale = np.nextafter(scale, np.float32(np.inf))
    return scale


def coordinates(nearest: bool, align_corners: bool) -> dict[str, Any]:
    """Resize's attributes for PyTorch's coordinates: nearest as "asymmetric" with "floor",
    linear as "half_pixel" (or "align_corners")."""
    if nearest:
        return {"mode": "nearest", "coordinate_transformation_mode": "asymmetric",
                "nearest_mode": "floor"}
    return {"mode": "linear", "coordinate_transformation_mode":
            "align_corners" if align_corners else "half_pixel"}


def resize_node(emit: Emit, x: str, scales: Sequence[float], coords: dict[str, Any]) -> str:
    """Resize of x (N, C, *places) by one scale per place."""
    scale_input = emit.constant("scales", [1.0, 1.0, *scales], np.float32)
    return emit("Resize", [x, emit.constant("roi", [], np.float32), scale_input], coords)


# primitive -> (ONNX operator, its attributes beyond epsilon)
_NORMS: dict[str, tuple[str, Callable[[dict[str, Any]], dict[str, Any]]]] = {
    "layer_norm": ("LayerNormalization", lambda a: {"axis": -1}),
    "rms_norm": ("RMSNormalization", lambda a: {"axis": -1}),
    # no `momentum`: a training setting, which the reference evaluator of sets 9-13 would apply
    "batch_norm_eval": ("BatchNormalization", lambda a: {}),
    "group_norm": ("GroupNormalization", lambda a: {"num_groups": int(a["groups"])}),
}


def norm_node(emit: Emit, primitive: str, inputs: Sequence[str], attrs: dict[str, Any]) -> str:
    """The ONNX operator of a normalisation primitive, on its inputs in the primitive's order
    (which is ONNX's); batch and group norms take x channels-first."""
    op_type, extra = _NORMS[primitive]
    return emit(op_type, inputs, {**extra(attrs), "epsilon": float(attrs["eps"])})


# -- the primitives' entries (channels-last values, shapes from the trace) ------------------------
def _dims(emit: Emit, index: int) -> Dims:
    known = emit.dims(index)
    if known is None:
        raise ValueError("the spatial primitives' nodes are written from a trace, which knows "
                         "every operand's shape")
    return known


Core = Callable[[Emit, str], str]


def turned(emit: Emit, x: str, rank: int, label: str, core: Core) -> str:
    """`core` (nodes on a channels-first value) on x turned channels-first, its result turned
    back channels-last; a value of rank 2 (N, C) is both, and is not turned."""
    if rank < 3:
        return core(emit, x)
    perm = to_channels_first(rank)
    first = emit("Transpose", [x], {"perm": list(perm)}, suffix="channels_first")
    emit.annotate_as(first, operand=0, perm=perm)
    y = core(Emit(emit.tape, f"{emit.name}/{label}"), first)
    emit.annotate_as(y, result=0, perm=perm)
    return emit("Transpose", [y], {"perm": list(to_channels_last(rank))})


def _kernel(emit: Emit, name: str, perm: tuple[int, ...]) -> str:
    kernel = emit("Transpose", [name], {"perm": list(perm)}, suffix="kernel")
    emit.annotate_as(kernel, operand=1, perm=perm)
    return kernel


@writes_primitive("conv", dims=dims.windowed)
def _conv(emit: Emit, inputs: Sequence[str], attrs: dict, ranks: Sequence[int]) -> str:
    nd = ranks[0] - 2
    kernel = _dims(emit, 1)[:nd]
    w = _kernel(emit, inputs[1], conv_kernel_onnx_perm(nd))
    form = conv_attrs(attrs, kernel, _dims(emit, 0)[1:-1])
    return turned(emit, inputs[0], ranks[0], "conv",
                  lambda e, x: e("Conv", [x, w, *inputs[2:]], form))


@writes_primitive("conv_transpose", dims=dims.windowed)
def _conv_transpose(emit: Emit, inputs: Sequence[str], attrs: dict, ranks: Sequence[int]) -> str:
    nd = ranks[0] - 2
    w = _kernel(emit, inputs[1], conv_transpose_kernel_onnx_perm(nd))
    form = conv_transpose_attrs(attrs, _dims(emit, 1)[:nd])
    return turned(emit, inputs[0], ranks[0], "conv_transpose",
                  lambda e, x: e("ConvTranspose", [x, w, *inputs[2:]], form))


def _pool(primitive: str):
    def write(emit: Emit, inputs: Sequence[str], attrs: dict, ranks: Sequence[int]) -> str:
        op_type, form = pool_node_form(primitive, attrs, _dims(emit, 0)[1:-1])
        return turned(emit, inputs[0], ranks[0], primitive, lambda e, x: e(op_type, [x], form))

    return write


writes_primitive("max_pool", dims=dims.windowed)(_pool("max_pool"))
writes_primitive("avg_pool", dims=dims.windowed)(_pool("avg_pool"))


def _adaptive_pool(average: bool):
    reduce = "mean" if average else "max"

    def write(emit: Emit, inputs: Sequence[str], attrs: dict, ranks: Sequence[int]) -> str:
        rank, sizes = ranks[0], tuple(attrs["sizes"])
        x_dims = _dims(emit, 0)
        if all(s == 1 for s in sizes):  # over places of any size: a reduction keeping the axes
            return PRIMITIVE_NODES[reduce](emit, inputs, {"axes": tuple(range(1, rank - 1)),
                                                          "keepdims": 1}, ranks)
        if all(isinstance(n, int) for n in x_dims[1:-1]):
            first = onnx_dims(permute_dims(x_dims, to_channels_first(rank)))
            return turned(emit, inputs[0], rank, "pool",
                          lambda e, x: adaptive_pool_nodes(e, x, first, sizes, average))
        # a series' free length (the dims rule refuses other symbolic places)
        return turned(emit, inputs[0], rank, "pool",
                      lambda e, x: adaptive_pool_over_length(e, x, sizes[0], average))

    return write


writes_primitive("adaptive_avg_pool", dims=dims.adaptive)(_adaptive_pool(True))
writes_primitive("adaptive_max_pool", dims=dims.adaptive)(_adaptive_pool(False))


@writes_primitive("pad", dims=dims.padded)
def _pad(emit: Emit, inputs: Sequence[str], attrs: dict, ranks: Sequence[int]) -> str:
    return pad_node(emit, inputs[0], attrs["pads"], attrs.get("mode", "constant"),
                    attrs.get("value", 0.0))


@writes_primitive("resize", dims=dims.resized)
def _resize(emit: Emit, inputs: Sequence[str], attrs: dict, ranks: Sequence[int]) -> str:
    places = _dims(emit, 0)[1:-1]  # fixed: the dims rule refuses symbolic ones
    scales = [size_scale(n, s) for n, s in zip(places, attrs["sizes"])]
    coords = coordinates(attrs["mode"] == "nearest", bool(attrs.get("align_corners", 0)))
    return turned(emit, inputs[0], ranks[0], "resize",
                  lambda e, x: resize_node(e, x, scales, coords))


def _norm(primitive: str, channels_first: bool):
    def write(emit: Emit, inputs: Sequence[str], attrs: dict, ranks: Sequence[int]) -> str:
        if not channels_first:
            return norm_node(emit, primitive, inputs, attrs)
        return turned(emit, inputs[0], ranks[0], primitive,
                      lambda e, x: norm_node(e, primitive, [x, *inputs[1:]], attrs))

    return write


for _primitive, _first in {"layer_norm": False, "rms_norm": False, "batch_norm_eval": True,
                           "group_norm": True}.items():
    writes_primitive(_primitive, dims=dims.elementwise)(_norm(_primitive, _first))

__all__ = ["adaptive_pool_nodes", "border", "conv_attrs", "conv_transpose_attrs",
           "coordinates", "norm_node", "pad_node", "pool_node_form", "resize_node", "size_scale",
           "turned"]
