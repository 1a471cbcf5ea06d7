"""Channels-last (ours) and channels-first (ONNX's operators) orders of series, images, volumes.

A series is held (batch, steps, channels) by the network and (batch, channels, steps) by ONNX's
Conv, pools and norms; an image (batch, H, W, C) against (batch, C, H, W); a volume likewise.
"""

from __future__ import annotations

from enum import Enum


class Order(str, Enum):
    """How a graph value's axes are ordered relative to the network's own order."""

    CHANNELS_LAST = "channels_last"    # as the network holds it
    CHANNELS_FIRST = "channels_first"  # as ONNX's spatial operators take it
    # a row ONNX's Flatten made of a channels-first image: its values channel by channel, where
    # the network's flatten holds them place by place (see layout.conv)
    FLAT_CHANNELS_FIRST = "flat_channels_first"


def to_channels_first(rank: int) -> tuple[int, ...]:
    """The Transpose perm taking (N, *places, C) to (N, C, *places) for a value of `rank` axes."""
    return (0, rank - 1, *range(1, rank - 1))


def to_channels_last(rank: int) -> tuple[int, ...]:
    """The Transpose perm taking (N, C, *places) to (N, *places, C)."""
    return (0, *range(2, rank), 1)


def permute_dims(dims: tuple, perm: tuple[int, ...]) -> tuple:
    return tuple(dims[p] for p in perm)
