"""What the readers of spatial nodes share: attribute lists as layer arguments, the place axes of
the value read, the turn the exporter writes, and floats as the shortest decimal that names the
float32 ONNX stored (so a re-export writes the same bits)."""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import onnx

from deepsharp.errors import SpecError
from deepsharp.layers.base import SPEC_KINDS, LayerSpec, make_spec
from deepsharp_export_onnx.read.readers.base import Read, Reading, reads
from layout import Order, to_channels_first, to_channels_last


def spec_of(node: onnx.NodeProto, r: Reading, kind: str, **values: Any) -> LayerSpec:
    """The layer spec of `kind`, or the node refused with the spec's complaint."""
    try:
        return make_spec(SPEC_KINDS[kind], kind, **values)
    except SpecError as error:
        raise r.unreadable(node, str(error)) from None


def compact(values: Sequence[int]) -> int | tuple[int, ...]:
    """One integer when every axis has the same, else the tuple."""
    values = tuple(int(v) for v in values)
    return values[0] if len(set(values)) == 1 else values


def padding_of(pads: Sequence[int], nd: int) -> Any:
    """A layer's padding argument giving these pads (begins, then ends)."""
    begins, ends = tuple(pads[:nd]), tuple(pads[nd:])
    if not any(pads):
        return "valid"
    if begins == ends:
        return compact(begins)
    return tuple(zip(begins, ends))


def border_of(node: onnx.NodeProto, r: Reading, attrs: dict[str, Any], nd: int) -> Any:
    auto_pad = attrs.get("auto_pad", "NOTSET")
    if auto_pad == "SAME_UPPER":
        return "same"
    if auto_pad == "VALID":
        return "valid"
    if auto_pad != "NOTSET":
        raise r.unreadable(node, f"auto_pad {auto_pad!r}: no padding of ours puts the extra place "
                                 f"of an odd border first")
    return padding_of(attrs.get("pads", [0] * (2 * nd)), nd)


def decimal32(value: float) -> float:
    """The shortest decimal naming the same float32 (1e-05, not 9.999999747378752e-06)."""
    return float(str(np.float32(value)))


def channels_first(node: onnx.NodeProto, r: Reading) -> None:
    """Refuse a spatial node reading a value that is not channels-first (rank 3 and above)."""
    if r.rank >= 3 and r.order is not Order.CHANNELS_FIRST:
        raise r.unreadable(node, f"it reads a {r.order.value} value; the exporter turns "
                                 f"series and images channels-first for it")


def place_dims(r: Reading) -> tuple:
    """The current value's place axes (numbers or symbols), from its annotation."""
    dims = r.view.dims(r.value) or ()
    return dims[2:] if r.order is Order.CHANNELS_FIRST else dims[1:-1]


def int_attr_list(attrs: dict[str, Any], name: str, default: Sequence[int]) -> list[int]:
    return [int(v) for v in attrs.get(name, default)]


@reads("Transpose")
def read_turn(node: onnx.NodeProto, r: Reading) -> Read:
    """The exporter's turn between channels-last and channels-first: no layer of its own."""
    perm = tuple(int(p) for p in r.view.attrs(node).get("perm", ()))
    if r.order is Order.CHANNELS_LAST and perm == to_channels_first(r.rank):
        return Read(node.output[0], [node], order=Order.CHANNELS_FIRST)
    if r.order is Order.CHANNELS_FIRST and perm == to_channels_last(r.rank):
        return Read(node.output[0], [node], order=Order.CHANNELS_LAST)
    raise r.unreadable(node, f"perm {list(perm)} of a rank-{r.rank} {r.order.value} value is not "
                             f"a turn between channels-last and channels-first")


def written_as(node: onnx.NodeProto, kind: str) -> bool:
    """Whether the exporter named this node for a layer of `kind` (`3.adaptive_avg_pool`): it
    tells apart layers written as the same node (an adaptive pool whose bins are a window)."""
    return node.name.rsplit(".", 1)[-1] == kind

