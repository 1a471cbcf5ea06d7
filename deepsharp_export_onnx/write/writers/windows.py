"""What the writers of windowed steps share: the output dims (the border attributes are
`spatial_nodes.border`, shared with the tracer).

Places of fixed size (an image's) get their exact sizes and explicit pads. A series' steps are
the symbol `steps`: a step that keeps a series' length keeps its symbol; one that changes it by a
rule of the length (a stride, a valid window) gets a fresh symbol of its own (`steps_3` after
place 3), since an annotation holds a name, never an expression. A "same" border is written as
explicit pads where they do not depend on the length (stride 1), else as auto_pad SAME_UPPER.
"""

from __future__ import annotations

from typing import Any, Sequence

from deepsharp.tensors.ops.windows import ceil_pads, output_lengths, same_upper_pads
from deepsharp_export_onnx.values import Dims
from deepsharp_export_onnx.write.writers.base import Writing


def fresh(w: Writing, symbol: str) -> str:
    """A new symbol for a length made from `symbol` by this step."""
    return f"{symbol}_{w.step.place}".replace(".", "_")


def window_dims(w: Writing, places: Dims, attrs: dict[str, Any], kernel: Sequence[int],
                strides: Sequence[int], dilations: Sequence[int]) -> tuple:
    """The output places of a window over `places` with the border `attrs`."""
    nd = len(places)
    out: list[int | str] = []
    for i, n in enumerate(places):
        k, s, d = kernel[i], strides[i], dilations[i]
        if "pads" in attrs:
            begin, end = attrs["pads"][i], attrs["pads"][nd + i]
        elif isinstance(n, int):
            begin, end = same_upper_pads([n], [k], [s], [d])
        else:  # SAME_UPPER over a symbol: ceil(n / s) places, the length itself at stride 1
            out.append(n if s == 1 else fresh(w, n))
            continue
        if isinstance(n, int):
            if attrs.get("ceil_mode"):
                begin, end = ceil_pads([n], [k], [s], [d], [begin, end])
            out.append(output_lengths([n], [k], [s], [d], [begin, end])[0])
        elif s == 1 and begin + end == (k - 1) * d:  # (ceil_mode counts alike at stride 1)
            out.append(n)
        else:
            out.append(fresh(w, n))
    return tuple(out)
