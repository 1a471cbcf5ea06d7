"""attention and multi-head attention -> the nodes of the oldest operator sets that hold them.

Three MatMuls (and Adds of the biases) project the series into queries, keys and values; for
several heads a Reshape (batch, steps, heads, width / heads) and a Transpose cut the heads out
(the keys turned once, straight to (batch, heads, width / heads, steps)). Then the pattern of
`sequence_nodes.attention_nodes` (scores, scale, mask, Softmax, values, zeros for a query with
no key left), the heads joined by a Transpose and a Reshape, and the output projection.
"""

from __future__ import annotations

from deepsharp.layers.attention import PROJECTIONS, SelfAttentionStep
from deepsharp_export_onnx.write.nodes import Emit
from deepsharp_export_onnx.write.sequence_nodes import attention_nodes
from deepsharp_export_onnx.values import Value
from deepsharp_export_onnx.write.writers.base import Writing, writes


def _projection(step: SelfAttentionStep, x: Value, w: Writing, name: str) -> str:
    y = w.node("MatMul", [x.name, w.slot(f"{name}_weight", getattr(step, f"{name}_weight")._data)],
               suffix=name)
    y = w.node("Add", [y, w.slot(f"{name}_bias", getattr(step, f"{name}_bias")._data)],
               suffix=f"{name}_biased")
    heads = step.heads
    if not step.spec.multi_head():  # one-head attention(): no heads to cut (multi-head attention
        if name == "key":           # cuts them even for one head, which is how it reads back)
            return w.node("Transpose", [y], {"perm": [0, 2, 1]}, suffix="key_t")
        return y
    shape = w.constant("heads", [0, 0, heads, step.width // heads])
    y = w.node("Reshape", [y, shape], suffix=f"{name}_heads")
    perm = [0, 2, 3, 1] if name == "key" else [0, 2, 1, 3]
    return w.node("Transpose", [y], {"perm": perm}, suffix=f"{name}_by_head")


@writes(SelfAttentionStep)
def write_attention(step: SelfAttentionStep, x: Value, w: Writing) -> Value:
    q, k_t, v = (_projection(step, x, w, name) for name in PROJECTIONS)
    rank = 4 if step.spec.multi_head() else 3
    out = attention_nodes(Emit(w.tape, w.base), q, k_t, v, x.mask, scale=step.scale,
                          causal=bool(step.spec.causal), rank=rank)
    if step.spec.multi_head():
        out = w.node("Transpose", [out], {"perm": [0, 2, 1, 3]}, suffix="by_step")
        out = w.node("Reshape", [out, w.constant("join_heads", [0, 0, step.width])],
                     suffix="joined")
    if step.spec.multi_head():
        out = w.node("MatMul", [out, w.slot("output_weight", step.output_weight._data)],
                     suffix="output")
        out = w.node("Add", [out, w.slot("output_bias", step.output_bias._data)])
    return w.value(out, x.dims[:2] + (step.width,), x)
