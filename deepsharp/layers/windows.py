"""What the windowed layers (convolutions, pools) share: per-axis arguments and the border rule.

A window argument (kernel, stride, dilation) is one positive integer for every place axis or a
tuple of one per axis. A padding is
- "valid": no border;
- "same": TensorFlow's (and ONNX's SAME_UPPER) rule, out = ceil(length / stride), the extra place
  of an odd border at the end; worked out from the length at hand, so a series of any length
  gets its own;
- "causal" (series only): (kernel - 1) * dilation places before, none after, so a step sees no
  later step;
- an integer or one integer per axis: that many places on both sides (PyTorch's `padding`);
- one (before, after) pair per axis.
"""

from __future__ import annotations

from typing import Any, Literal, Sequence, Union

from pydantic import NonNegativeInt, PositiveInt

from deepsharp.errors import ShapeError
from deepsharp.shape import Shape
from deepsharp.tensors.ops.windows import (
    NOTSET, SAME_UPPER, ceil_pads, output_lengths, resolve_pads,
)

Window = Union[PositiveInt, tuple[PositiveInt, ...]]
Padding = Union[Literal["valid", "same", "causal"], NonNegativeInt, tuple[NonNegativeInt, ...],
                tuple[tuple[NonNegativeInt, NonNegativeInt], ...]]

_NAMES = {1: "a series", 2: "an image", 3: "a volume"}
_SHAPES = {1: "steps x channels", 2: "height x width x channels",
           3: "depth x height x width x channels"}


def per_axis(value: Any, places: int) -> tuple[int, ...]:
    """An integer for every place axis, or the tuple as given."""
    return tuple(value) if isinstance(value, tuple) else (int(value),) * places


def check_per_axis(value: Any, places: int) -> Any:
    """For a pydantic validator: a tuple must hold one value per place axis."""
    if isinstance(value, tuple) and len(value) != places:
        raise ValueError(f"must be one integer or {places} (one per place axis)")
    return value


def check_padding(value: Any, places: int, causal: bool = True) -> Any:
    if value == "causal" and (places != 1 or not causal):
        raise ValueError("'causal' is a padding of series only (1 place axis, a convolution)")
    if isinstance(value, tuple):
        check_per_axis(value, places)
    return value


def require_places(shape: Shape, places: int) -> None:
    """A windowed layer over `places` axes takes (places..., channels)."""
    if shape.rank != places + 1:
        raise ShapeError(f"needs {_NAMES[places]} ({_SHAPES[places]}), received an input of "
                         f"shape {shape}")


def pads_of(padding: Padding, kernel: Sequence[int], dilations: Sequence[int]
            ) -> tuple[tuple[int, ...], str]:
    """The primitive's (pads, auto_pad) for a padding argument."""
    nd = len(kernel)
    if padding == "valid":
        return (0,) * (2 * nd), NOTSET
    if padding == "same":
        return (), SAME_UPPER
    if padding == "causal":
        return ((kernel[0] - 1) * dilations[0], 0), NOTSET
    if isinstance(padding, tuple) and padding and isinstance(padding[0], tuple):
        return tuple(p[0] for p in padding) + tuple(p[1] for p in padding), NOTSET
    both = per_axis(padding, nd)
    return both + both, NOTSET


def explicit_pads(padding: Padding, lengths: Sequence[int], kernel: Sequence[int],
                  strides: Sequence[int], dilations: Sequence[int]) -> tuple[int, ...]:
    """The pads (begins, ends) the padding gives places of `lengths`."""
    pads, auto_pad = pads_of(padding, kernel, dilations)
    return resolve_pads(lengths, kernel, strides, dilations, pads, auto_pad)


def window_output(shape: Shape, padding: Padding, kernel: Sequence[int], strides: Sequence[int],
                  dilations: Sequence[int], ceil_mode: bool = False) -> tuple[int, ...]:
    """The output places for an example of `shape` (ShapeError when a window does not fit); with
    ceil_mode, PyTorch's count of windows reaching past the end."""
    lengths = tuple(shape)[:-1]
    pads = explicit_pads(padding, lengths, kernel, strides, dilations)
    effective = [(k - 1) * d + 1 for k, d in zip(kernel, dilations)]
    nd = len(kernel)
    for i, n in enumerate(lengths):
        if n + pads[i] + pads[nd + i] < effective[i]:
            raise ShapeError(f"a window of {effective[i]} places does not fit in the {n} places "
                             f"of axis {i} padded by {pads[i]} and {pads[nd + i]}")
    if ceil_mode:
        pads = ceil_pads(lengths, kernel, strides, dilations, pads)
    return output_lengths(lengths, kernel, strides, dilations, pads)
