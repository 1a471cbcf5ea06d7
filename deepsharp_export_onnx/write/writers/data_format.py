"""from_channels_first, to_channels_first -> no node of their own: each says in which order the
graph holds the value, so the nodes around it are written for that order.

from_channels_first takes the graph's input as it is, (batch, C, *places): to the layers after it
the value is channels-first, so a Conv reads it directly and a dense layer gets one Transpose.
to_channels_first gives the value channels-first (one Transpose, unless it already is), which is
then the order the network's output is held in.
"""

from __future__ import annotations

from deepsharp.layers.data_format import FromChannelsFirst, TurnStep
from deepsharp_export_onnx.values import Value
from deepsharp_export_onnx.write.writers.base import Writing, writes
from layout import Order


@writes(TurnStep, order=None)
def write_turn(step: TurnStep, x: Value, w: Writing) -> Value:
    if isinstance(step.spec, FromChannelsFirst):  # held as given: channels-first to the layers
        x = w.turn(x, Order.CHANNELS_LAST)
        return x.renamed(x.name, order=Order.CHANNELS_FIRST)
    x = w.turn(x, Order.CHANNELS_FIRST)  # turned for the output: as the network now holds it
    return x.renamed(x.name, order=Order.CHANNELS_LAST)
