"""Composite layers and low-rank adapters -> ONNX.

- residual -> the branch's nodes, then Add(x, branch(x)); gate -> Mul(x, branch(x)) (broadcast);
- concat -> each branch's nodes (an empty branch is x itself), then Concat on the last axis;
- columns -> Slice of the last axis;
- low-rank dense -> MatMul by the held kernel, Add of the bias, and beside it the products they
  are: MatMul by A, MatMul by B, Mul by alpha / rank, Add of the two.

Branches are written by the exporter's own walk, and each branch's value is turned back to
channels-last before it is joined.
"""

from __future__ import annotations

import numpy as np

from deepsharp.layers.composite import ColumnsStep, ConcatStep, GateStep, ResidualStep
from deepsharp.layers.low_rank import LowRankDenseStep
from deepsharp_export_onnx.values import Value
from deepsharp_export_onnx.write.writers.base import Writing, writes
from layout import Order, dense_kernel_to_matmul


def _branch(step, network, x: Value, w: Writing) -> Value:
    y = w.write_steps(network.steps, x)
    w.tape.owner = f"{step.place} ({step.kind})"
    return w.exporter.turn(w.tape, y, Order.CHANNELS_LAST)


@writes(ResidualStep)
def write_residual(step: ResidualStep, x: Value, w: Writing) -> Value:
    y = _branch(step, step.branch, x, w)
    return w.value(w.node("Add", [x.name, y.name]), x.dims, x)


@writes(GateStep)
def write_gate(step: GateStep, x: Value, w: Writing) -> Value:
    y = _branch(step, step.branch, x, w)
    return w.value(w.node("Mul", [x.name, y.name]), x.dims, x)


@writes(ConcatStep)
def write_concat(step: ConcatStep, x: Value, w: Writing) -> Value:
    outs = [_branch(step, network, x, w) for network in step.networks]
    y = w.node("Concat", [o.name for o in outs], {"axis": outs[0].rank - 1})
    width = sum(int(o.dims[-1]) for o in outs)
    return w.value(y, outs[0].dims[:-1] + (width,), x)


@writes(ColumnsStep)
def write_columns(step: ColumnsStep, x: Value, w: Writing) -> Value:
    y = w.node("Slice", [x.name, w.constant("start", [step.spec.start]),
                         w.constant("stop", [step.spec.stop]), w.constant("axis", [x.rank - 1])])
    return w.value(y, x.dims[:-1] + (step.spec.stop - step.spec.start,), x)


@writes(LowRankDenseStep)
def write_low_rank_dense(step: LowRankDenseStep, x: Value, w: Writing) -> Value:
    held = w.node("MatMul", [x.name, w.slot("weight", dense_kernel_to_matmul(step.weight._data))],
                  suffix="held")
    if step.spec.bias:
        held = w.node("Add", [held, w.slot("bias", step.bias._data)], suffix="held_biased")
    low = w.node("MatMul", [x.name, w.slot("lora_a", step.lora_a._data)], suffix="down")
    low = w.node("MatMul", [low, w.slot("lora_b", step.lora_b._data)], suffix="up")
    low = w.node("Mul", [low, w.constant("scale", np.asarray(step.spec.scale, np.float32),
                                         np.float32)], suffix="scaled")
    y = w.node("Add", [held, low])
    return w.value(y, x.dims[:-1] + (step.spec.units,), x)
