"""What the layers that reduce or normalise over the steps of a series do with its mask.

The rule: a masked series gives exactly what the unpadded series gives.

- `masked_mean` and `masked_max` reduce over the real steps only (a series with no real step
  gives zeros, as attention gives a query with no key left);
- `masked_moments` are the mean and the (biased) variance over the real steps, for the norms;
- `require_end_padding` refuses a mask whose padding is not at the end of every series, for the
  layers that can only leave out a tail (an LSTM's lengths, positions counted from the start);
- `refuse_mask` names a layer that cannot honour a mask at all.

Everything is written with primitives on the mask tensor, so a tracer records how the mask is
used instead of freezing one batch's padding.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from deepsharp.errors import ShapeError
from deepsharp.tensors import Tensor, apply


def real_steps(mask: Tensor, x: Tensor) -> Tensor:
    """The mask as 0/1 of x's dtype, shaped (batch, steps, 1, ..., 1) to broadcast over x."""
    real = apply("cast", mask, to=x.dtype.str)
    return apply("reshape", real, shape=tuple(mask.shape) + (1,) * (x.ndim - 2))


def _counts(real: Tensor, axes: tuple[int, ...], keepdims: int) -> Tensor:
    return apply("sum", real, axes=axes, keepdims=keepdims)


def masked_mean(x: Tensor, mask: Tensor, keepdims: int) -> Tensor:
    """sum over the real steps / their count (zeros for a series with none); x (batch, steps, C)."""
    real = real_steps(mask, x)
    total = apply("sum", apply("mul", x, real), axes=(1,), keepdims=keepdims)
    count = apply("maximum", _counts(real, (1,), keepdims), 1.0)
    return apply("div", total, count)


def masked_max(x: Tensor, mask: Tensor, keepdims: int) -> Tensor:
    """The largest value over the real steps (zeros for a series with none); x (batch, steps, C)."""
    real = real_steps(mask, x)
    cond = apply("cast", real, to=np.dtype(bool).str)
    filled = apply("where", cond, x, float("-inf"))
    largest = apply("max", filled, axes=(1,), keepdims=keepdims)
    has_real = apply("cast", _counts(real, (1,), keepdims), to=np.dtype(bool).str)
    return apply("where", has_real, largest, 0.0)


def masked_moments(x: Tensor, real: Tensor, axes: tuple[int, ...]) -> tuple[Tensor, Tensor]:
    """Mean and biased variance of x over `axes`, counting only where `real` (0/1, broadcasting
    to x) is 1; both kept with x's rank. A group with nothing real gives mean 0, variance 0."""
    spread = int(np.prod([x.shape[a] for a in axes if real.shape[a] == 1]))
    count = apply("maximum", apply("mul", _counts(real, axes, 1), float(spread)), 1.0)
    mean = apply("div", apply("sum", apply("mul", x, real), axes=axes, keepdims=1), count)
    centred = apply("mul", apply("sub", x, mean), real)
    var = apply("div", apply("sum", apply("mul", centred, centred), axes=axes, keepdims=1), count)
    return mean, var


def _where(step: Any) -> str:
    return f"{step.kind} at place {step.place}"


def require_end_padding(step: Any, mask: Tensor | None) -> None:
    """Refuse a mask with a real step after a padded one (padding at the start or in the middle):
    `step` can only leave out the tail of a series."""
    if mask is None:
        return
    real = mask._data
    late = real[:, 1:] & ~real[:, :-1]
    if late.any():
        row, after = (int(i) for i in np.argwhere(late)[0])
        raise ShapeError(f"{_where(step)}: series {row} of the batch has a real step ({after + 1}) "
                         f"after a padded one ({after}); this layer leaves out padding only at the "
                         f"end of a series (as PyTorch's packed series and ONNX's sequence_lens "
                         f"do): pad at the end")


def refuse_mask(step: Any, mask: Tensor | None, advice: str) -> None:
    """Refuse a mask `step` cannot honour: it would mix the padding into real answers."""
    if mask is not None:
        raise ShapeError(f"{_where(step)}: the series reaching it carries a mask (from an "
                         f"embedding's padding_index or masking), and this layer cannot leave the "
                         f"padded steps out; {advice}")
