"""Flatten -> flatten (a channels-first image's row keeps its order for the dense layer after,
which `layout` puts back); Reshape and Squeeze keeping the batch -> reshape, or, on a
channels-first value, flatten (one row per example) or the row of places of an adaptive pool
with unequal bins."""

from __future__ import annotations

import onnx

from deepsharp_export_onnx.read.normalise.graph import dims_product
from deepsharp_export_onnx.read.readers.base import Read, Reading, reads
from deepsharp_export_onnx.read.readers.patterns import reshaped_dims
from deepsharp_export_onnx.read.readers.pool import read_adaptive_composition
from deepsharp_export_onnx.read.readers.windows import spec_of
from layout import Order


@reads("Flatten")
def read_flatten(node: onnx.NodeProto, r: Reading) -> Read:
    axis = int(r.view.attrs(node).get("axis", 1))
    if axis != 1:
        raise r.unreadable(node, f"axis {axis}: flatten keeps the batch axis (axis 1)")
    return _flatten(node, r)


def _flatten(node: onnx.NodeProto, r: Reading) -> Read:
    spec = spec_of(node, r, "flatten")
    if r.order is Order.CHANNELS_FIRST and r.rank >= 3:
        dims = r.view.dims(r.value) or ()
        other, product = _product_after(r, node.output[0])
        if other is not None:
            raise r.unreadable(node, f"its channel-by-channel row {other}; the network's flatten "
                                     f"holds the values place by place, so only a dense layer "
                                     f"(whose rows are put back in order) may read it")
        r.extra["image"] = _image(r, node, dims, _kernel_rows(r, product))
        return Read(node.output[0], [node], [spec], [{}], order=Order.FLAT_CHANNELS_FIRST, rank=2)
    return Read(node.output[0], [node], [spec], [{}], rank=2)


def _image(r: Reading, node: onnx.NodeProto, dims: tuple, rows: int | None) -> tuple[int, ...]:
    """The flattened channels-first value as the network holds it, (*places, channels): its
    dims, or, where one of its channels and place axes is unknown (a series of any length in the
    annotations, as deepsharp's exporter writes a conv1d over steps, and PyTorch's dynamic axes;
    a channel axis that inference lost behind a Slice), the size the dense kernel's `rows` leave
    for it: the kernel fixes the row's length, so the graph runs at that size only."""
    if len(dims) != r.rank:
        raise r.unreadable(node, "a Flatten of a channels-first value of unknown places")
    sizes = dims[1:]  # the channels, then the places
    unknown = [i for i, d in enumerate(sizes) if not isinstance(d, int)]
    known = dims_product(d for d in sizes if isinstance(d, int)) or 1
    if unknown and (len(unknown) != 1 or rows is None or rows % known or rows < known):
        raise r.unreadable(node, f"a Flatten of a channels-first value of unknown places "
                                 f"(dims {list(dims)}; the kernel after it has {rows} rows)")
    solved = tuple(rows // known if unknown and i == unknown[0] else d
                   for i, d in enumerate(sizes))
    return (*solved[1:], solved[0])


def _kernel_rows(r: Reading, product: onnx.NodeProto | None) -> int | None:
    """How many rows the MatMul's or Gemm's kernel has (the length of the row it reads)."""
    kernel = None if product is None else r.view.constant(product.input[1])
    if kernel is None or kernel.ndim != 2:
        return None
    turned = product.op_type == "Gemm" and r.view.attrs(product).get("transB", 0)
    return int(kernel.shape[1] if turned else kernel.shape[0])


# elementwise operators: any order of a row's values gives the same values in the same order
_ELEMENTWISE = {"Relu", "Sigmoid", "Tanh", "Softplus", "Elu", "LeakyRelu", "Gelu", "Softmax"}


def _product_after(r: Reading, value: str) -> tuple[str | None, onnx.NodeProto | None]:
    """(None, the MatMul or Gemm) when the row reaches one through elementwise nodes; else (what
    it meets, None)."""
    while True:
        readers = r.view.open_consumers(value)
        kinds = sorted(n.op_type for n in readers)
        if kinds == ["Mul", "Sigmoid"]:  # x * Sigmoid(x): a SiLU
            value = next(n for n in readers if n.op_type == "Mul").output[0]
            continue
        if len(readers) != 1:
            return ("ends the graph" if not readers else
                    f"is read by {', '.join(r.view.label(n) for n in readers)}"), None
        node = readers[0]
        if node.op_type in ("MatMul", "Gemm") and node.input[0] == value:
            return None, node
        if node.op_type not in _ELEMENTWISE:
            return f"is read by {r.view.label(node)}", None
        value = node.output[0]


def _flattens(r: Reading, out: tuple | None) -> bool:
    """Whether a value of dims `out` is the current value's batch, each example in one row:
    two axes, the batch kept. Where the dims give the row's length, `out` must give it too;
    where a place axis is symbolic, the row holds whatever is left (a Reshape moves no value
    out of its example), and `_flatten` takes the places from the kernel reading the row."""
    dims = r.view.dims(r.value)
    if out is None or dims is None or len(out) != 2 or len(dims) < 3:
        return False
    if out[0] != dims[0] or out[0] is None:
        return False
    rest = dims_product(dims[1:])
    return out[1] == rest if rest is not None else not isinstance(out[1], int) or out[1] > 0


@reads("Reshape")
def read_reshape(node: onnx.NodeProto, r: Reading) -> Read:
    """A Reshape keeping the batch: of a channels-first value to one row each, a flatten (as
    PyTorch writes nn.Flatten and x.view(x.size(0), -1)); of a channels-last one, a reshape."""
    out = reshaped_dims(r, node)
    if r.order is Order.CHANNELS_FIRST and r.rank >= 3:
        if _flattens(r, out):
            return _flatten(node, r)
        return read_adaptive_composition(node, r)
    return _reshape(node, r, out, "shape")


@reads("Squeeze")
def read_squeeze(node: onnx.NodeProto, r: Reading) -> Read:
    """A Squeeze of axes of size 1 keeping the batch: a flatten (of a channels-first value
    whose places are all of size 1) or a reshape."""
    out = r.view.dims(node.output[0])
    if r.order is Order.CHANNELS_FIRST and r.rank >= 3:
        if _flattens(r, out):
            return _flatten(node, r)
        raise r.unreadable(node, f"a Squeeze of a channels-first value to {out}: only its places, "
                                 f"all of size 1, read as a flatten")
    return _reshape(node, r, out, "axes")


def _reshape(node: onnx.NodeProto, r: Reading, out: tuple | None, what: str) -> Read:
    dims = r.view.dims(r.value)
    if out is None or dims is None or len(out) < 2 or out[0] != dims[0] \
            or not all(isinstance(d, int) and d > 0 for d in out[1:]):
        raise r.unreadable(node, f"by its {what}, dims {dims} become {out}: a reshape layer "
                                 f"keeps the batch and gives every other size")
    spec = spec_of(node, r, "reshape", shape=tuple(out[1:]))
    return Read(node.output[0], [node], [spec], [{}], order=Order.CHANNELS_LAST, rank=len(out))
