"""What the layers that reduce or normalise over the steps of a series do with its mask.

The rule: a masked series gives exactly what the unpadded series gives.

- `masked_mean` and `masked_max` reduce over the real steps only (a series with no real step
  gives zeros, as attention gives a query with no key left);
- `masked_moments` are the mean and the (biased) variance over the real steps, for the norms;
- `real_first` orders each series' real steps first (in their order, padding after them), for
  the layers that count from a series' first step (an LSTM's lengths, sine positions): they run
  on that order and put their answers back, so padding may be anywhere;
- `over_real_steps` runs a layer that mixes neighbouring steps (a stride-1 convolution keeping
  the length) on each series' real steps alone: padding zeroed, real steps first, the layer,
  answers put back, padding zeroed again;
- `refuse_mask` names a layer that cannot honour a mask at all (`Step.mask_refusal` says why).

Everything is written with primitives on the mask tensor, so a tracer records how the mask is
used instead of freezing one batch's padding.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from deepsharp.errors import MaskRefused
from deepsharp.tensors import Tensor, apply, modes


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
    # (a size read from a symbolic axis while tracing is a SymInt: the graph computes it)
    spread = math.prod(x.shape[a] for a in axes if real._data.shape[a] == 1)
    count = apply("maximum", apply("mul", _counts(real, axes, 1), spread), 1.0)
    mean = apply("div", apply("sum", apply("mul", x, real), axes=axes, keepdims=1), count)
    centred = apply("mul", apply("sub", x, mean), real)
    var = apply("div", apply("sum", apply("mul", centred, centred), axes=axes, keepdims=1), count)
    return mean, var


def _where(step: Any) -> str:
    return f"{step.kind} at place {step.place}"


def end_padded(mask: Tensor) -> bool:
    """Whether every series' real steps come before its padding (the mask is a prefix of each
    row), read from the values; False while a tracer records the mask, whose graph must hold for
    every mask, not only the example's."""
    hook = modes.trace_hook()
    if hook is not None and hook.involves([mask]):
        return False
    real = mask._data
    return not (real[:, 1:] & ~real[:, :-1]).any()


@dataclass(frozen=True)
class RealFirst:
    """A per-series permutation of the steps putting the real steps first, in their order, and
    the padding after them, in its order (both int64 (batch, steps)):

    - `places[b, j]`: where step j goes: its rank among the real steps, cumsum(mask) - 1, or,
      for a padded step, the count of real steps + its rank among the padding;
    - `order[b, k]`: the step that goes to place k (the inverse permutation: argsort(places)).

    `gather(x)` reorders a series (batch, steps, ...) so, `back(y)` puts per-step answers back
    at the steps' own places: both are gathers along the steps, so gradients flow back through
    them. When the padding is at the end both are the identity.
    """

    order: Tensor
    places: Tensor

    def gather(self, x: Tensor) -> Tensor:
        return _along_steps(x, self.order)

    def back(self, y: Tensor) -> Tensor:
        return _along_steps(y, self.places)


def _along_steps(x: Tensor, index: Tensor) -> Tensor:
    """x[b, index[b, k], ...] at (b, k, ...): the index broadcast over x's other axes."""
    return x.take_along_dim(apply("reshape", index, shape=tuple(index.shape) + (1,) * (x.ndim - 2)),
                            1)


def real_first(mask: Tensor) -> RealFirst:
    """The permutation putting each series' real steps first (see `RealFirst`), made by
    primitives from the mask so a tracer records it."""
    real = apply("cast", mask, to="<i8")
    padded = apply("cast", apply("logical_not", mask), to="<i8")
    real_before = apply("sub", apply("cumsum", real, axis=1), real)      # exclusive running counts
    padded_before = apply("sub", apply("cumsum", padded, axis=1), padded)
    count = apply("sum", real, axes=(1,), keepdims=1)
    places = apply("where", mask, real_before, apply("add", padded_before, count))
    order = apply("sort", places, axis=1, descending=0)[1]
    return RealFirst(order, places)


def over_real_steps(layer: Callable[[Tensor], Tensor], x: Tensor, mask: Tensor) -> Tensor:
    """`layer` (a map of series that keeps their length and reads zeros past their ends: a
    stride-1 convolution) applied to each series' real steps alone:

        y = back(layer(gather(x * real))) * real,   real = the mask as 0/1

    the padding zeroed, the real steps gathered to the front (`real_first`; skipped when every
    series is padded at the end, where it is the identity), the layer, each answer put back at
    its step, and the padding's answers zeroed. Each real step's answer is then the layer's on
    the unpadded series (zero-padded at its ends as the layer pads it); the padding holds zeros.
    (A product by 0/1 rather than a choice: ONNX Runtime's `Mul` is the faster, and padding
    holds finite values.) x (batch, steps, ...) -> (batch, steps, ...) of the same rank."""
    moved = None if end_padded(mask) else real_first(mask)
    real = real_steps(mask, x)
    y = apply("mul", x, real)
    y = layer(y if moved is None else moved.gather(y))
    if moved is not None:
        y = moved.back(y)
    return apply("mul", y, real)


MASK_CARRIED = ("the series reaching it carries a mask (from an embedding's padding_index or "
                "masking), and this layer cannot leave the padded steps out")


def refuse_mask(step: Any, mask: Tensor | None) -> None:
    """Refuse a mask `step` cannot honour (it would mix the padding into real answers), saying
    why and the way out (the step's `mask_refusal`)."""
    advice = None if mask is None else step.mask_refusal()
    if advice is not None:
        raise MaskRefused(f"{_where(step)}: {MASK_CARRIED}; {advice}")
