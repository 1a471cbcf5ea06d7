"""Self-attention as PyTorch's exporters write `nn.MultiheadAttention` (a TransformerEncoderLayer's
self-attention) -> multi_head_attention, read by what the nodes compute rather than by their
form, which differs by exporter and operator set (one in-projection MatMul cut into queries,
keys and values by Reshape, Unsqueeze, Transpose, Squeeze and Gather; heads cut by Reshape and
Transpose around shape computations; the scale's square root applied to queries and keys;
Softmax; the out-projection by Gemm between Reshapes):

1. the region: the nodes computed from the value read (and constants) up to a value after a
   Softmax through which every way from the value passes;
2. the layer: the region's constant kernels are its projections, one (in, 3W) in-projection or
   three (in, W) kernels before the Softmax and one (W, W) out-projection after it, each with
   its bias (a Gemm's, or the Add of a constant after it);
3. the proof: the region, run by onnx's reference evaluator on a probe series, gives what
   multi_head_attention(heads, W) with those weights gives, for the head count (and causal
   flag) that makes them agree at every probe length the region runs at.

A region whose numbers no such layer gives is refused (unless the value read is also added
back after the Softmax: that is a residual block, read by the composite reader, whose branch
then comes back here).
"""

from __future__ import annotations

import itertools

import numpy as np
import onnx
from onnx import TensorProto, helper

from deepsharp.layers.attention import MultiHeadAttention
from deepsharp.random import RandomStream
from deepsharp.sequential import Sequential
from deepsharp.shape import Shape
from deepsharp_export_onnx.read.readers.base import Read, Reading, reads_fork, reads_pattern
from deepsharp_export_onnx.read.readers.patterns import attrs, consumers, other_input
from layout import (
    Order, gemm_to_dense_kernel, in_projection_biases, in_projection_to_kernels,
    matmul_to_dense_kernel,
)

LIMIT = 400          # nodes walked from the value before giving up
CUTS = 8             # values after the Softmax tried as the attention's output
PROBE_BATCH = 2
PROBE_VALUES = 1 << 22  # the largest probe input: a batch and length the graph declares may be any
DEFAULT_LENGTHS = (3, 4)


def _region(r: Reading) -> tuple[list[onnx.NodeProto], list[int]] | None:
    """The open nodes computed from r.value (and constants), in order, and the positions in
    that list of the cuts after a Softmax; None when another value feeds them first."""
    view, made, nodes, cuts, softmax = r.view, {r.value}, [], [], False
    for node in view.nodes:
        if id(node) in view.consumed or not any(i in made for i in node.input if i):
            continue
        if any(i and i not in made and view.constant(i) is None for i in node.input):
            return (nodes, cuts) if cuts else None
        nodes.append(node)
        made.update(o for o in node.output if o)
        softmax = softmax or node.op_type == "Softmax"
        if softmax and _is_cut(r, made, nodes, node):
            cuts.append(len(nodes))
            if len(cuts) >= CUTS:
                break
        if len(nodes) >= LIMIT:
            break
    return (nodes, cuts) if cuts else None


def _is_cut(r: Reading, made: set, nodes: list, last: onnx.NodeProto) -> bool:
    ids = {id(n) for n in nodes}
    outs = [o for o in last.output if o]
    if len(outs) != 1:
        return False
    return all(all(id(c) in ids for c in r.view.open_consumers(v)) for v in made if v != outs[0])


def _kernels(r: Reading, nodes: list[onnx.NodeProto]) -> list[tuple[onnx.NodeProto, np.ndarray,
                                                                     np.ndarray | None, list]]:
    """(node, kernel (in, out), bias or None, the nodes) of every projection by a constant."""
    found = []
    for node in nodes:
        if node.op_type not in ("MatMul", "Gemm") or len(node.input) < 2:
            continue
        b = r.view.constant(node.input[1])
        if b is None or b.ndim != 2:
            continue
        a = attrs(node)
        if node.op_type == "Gemm":
            if a.get("transA", 0) or a.get("alpha", 1.0) != 1.0 or a.get("beta", 1.0) != 1.0:
                continue
            kernel = gemm_to_dense_kernel(b, a.get("transB", 0))
        else:
            kernel = matmul_to_dense_kernel(b)
        bias = r.view.constant(node.input[2]) if len(node.input) > 2 and node.input[2] else None
        taken = [node]
        readers = consumers(r, node.output[0])
        if bias is None and len(readers) == 1 and readers[0].op_type == "Add":
            other = r.view.constant(other_input(readers[0], node.output[0]))
            if other is not None and other.shape == (kernel.shape[1],):
                bias, taken = other, [node, readers[0]]
        found.append((node, kernel, bias, taken))
    return found


def _weights(r: Reading, nodes: list[onnx.NodeProto], width_in: int) -> list[dict] | None:
    """The candidate slot sets (one per assignment of three in-projections to q, k, v); [] when
    the projections do not read the value (the attention starts later), None when they are not
    an attention's."""
    softmax = next(i for i, n in enumerate(nodes) if n.op_type == "Softmax")
    kernels = _kernels(r, nodes)
    before = [k for k in kernels if nodes.index(k[0]) < softmax]
    after = [k for k in kernels if nodes.index(k[0]) > softmax]
    if not before or not all(_reads_the_value(r, k[0]) for k in before):
        return []  # the projections start later: not an attention at this value
    if len(after) != 1 or after[0][1].shape[0] != after[0][1].shape[1]:
        return None
    width = after[0][1].shape[0]
    out_bias = after[0][2] if after[0][2] is not None else np.zeros(width, np.float32)
    if len(before) == 1 and before[0][1].shape == (width_in, 3 * width):
        bias = before[0][2] if before[0][2] is not None else np.zeros(3 * width, np.float32)
        orders = [(in_projection_to_kernels(before[0][1]), in_projection_biases(bias))]
    elif len(before) == 3 and all(k[1].shape == (width_in, width) for k in before):
        biases = [k[2] if k[2] is not None else np.zeros(width, np.float32) for k in before]
        orders = [tuple(zip(*[(before[i][1], biases[i]) for i in p]))
                  for p in itertools.permutations(range(3))]
    else:
        return None
    slots = []
    for ws, bs in orders:
        found = {f"{n}_weight": w for n, w in zip(("query", "key", "value"), ws)}
        found.update({f"{n}_bias": b for n, b in zip(("query", "key", "value"), bs)})
        found.update(output_weight=after[0][1], output_bias=out_bias)
        slots.append(found)
    return slots


def _reads_the_value(r: Reading, node: onnx.NodeProto) -> bool:
    """Whether a projection reads the value itself, or the value turned time-major."""
    data = node.input[0]
    if data == r.value:
        return True
    turn = r.view.producer.get(data)
    return turn is not None and turn.op_type == "Transpose" and turn.input[0] == r.value


def _run_region(r: Reading, nodes: list[onnx.NodeProto], end: str, x: np.ndarray) -> np.ndarray | None:
    from onnx.reference import ReferenceEvaluator

    used = {i for n in nodes for i in n.input if i and r.view.constant(i) is not None}
    graph = helper.make_graph(
        list(nodes), "attention", [helper.make_tensor_value_info(r.value, TensorProto.FLOAT, None)],
        [helper.make_empty_tensor_value_info(end)],
        initializer=[onnx.numpy_helper.from_array(np.asarray(r.view.constant(n)), n) for n in used])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", r.view.opset)])
    try:
        return np.asarray(ReferenceEvaluator(model).run(None, {r.value: x})[0])
    except Exception:  # the region does not run at this length (a length baked into it)
        return None


def _lengths(r: Reading, nodes: list[onnx.NodeProto]) -> list[int]:
    """Probe lengths: the series' own, else the small integers the region holds (an exporter may
    have baked the example's length into it), then a few more."""
    steps = (r.view.dims(r.value) or (None, None))[1]
    if isinstance(steps, int):
        return [steps]
    found = []
    for node in nodes:
        for name in node.input:
            value = r.view.constant(name)
            if value is not None and value.dtype.kind in "iu" and value.size <= 8:
                found += [int(v) for v in value.reshape(-1) if 2 < v <= 512]
    return list(dict.fromkeys([*found, *DEFAULT_LENGTHS]))


def _agrees(r: Reading, nodes, end: str, slots: dict, heads: int, causal: bool,
            probes: list[tuple[np.ndarray, np.ndarray]]) -> bool:
    width = slots["output_weight"].shape[0]
    spec = MultiHeadAttention(heads=heads, width=width, causal=causal)
    for x, expected in probes:
        network = Sequential(layers=(spec,)).lower(Shape(*x.shape[1:]), RandomStream(0))
        network.load_state_dict({f"0.{k}": v for k, v in slots.items()}, strict=True)
        ours = network(x)
        if ours.shape != expected.shape or not np.allclose(
                ours, expected, rtol=0, atol=1e-4 * max(1.0, float(np.abs(expected).max()))):
            return False
    return True


def read_attention_region(r: Reading) -> Read | None:
    dims = r.view.dims(r.value)
    # a channels-first value's last axis is its steps: its turn is read first, then this
    if r.rank != 3 or dims is None or len(dims) != 3 or not isinstance(dims[2], int) \
            or "mask" in r.extra or r.order is Order.CHANNELS_FIRST:
        return None
    found = _region(r)
    if found is None:
        return None
    nodes, cuts = found
    if not _scores_and_weighting(r, nodes):
        return None
    residual = any(id(c) in {id(n) for n in nodes[nodes.index(_softmax(nodes)):]}
                   for c in r.view.open_consumers(r.value))
    rng = np.random.default_rng(0)
    projections = False
    for cut in cuts:
        candidates = _weights(r, nodes[:cut], dims[2])
        if candidates == []:
            return None
        if candidates is None:
            continue
        projections = True
        end = nodes[cut - 1].output[0]
        probes = []
        for length in _lengths(r, nodes[:cut]):
            batch = dims[0] if isinstance(dims[0], int) else PROBE_BATCH  # a batch baked in
            if batch * length * dims[2] > PROBE_VALUES:
                return _refuse(r, nodes, residual, f"its input is declared {batch} x {length} x "
                                                   f"{dims[2]}, too large to run it on an "
                                                   f"example (at most {PROBE_VALUES:,} values)")
            x = rng.standard_normal((batch, length, dims[2])).astype(np.float32)
            expected = _run_region(r, nodes[:cut], end, x)
            if expected is not None:
                probes.append((x, expected))
            if len(probes) == 2:
                break
        if not probes:
            continue
        width = candidates[0]["output_weight"].shape[0]
        for slots, heads, causal in itertools.product(
                candidates, [h for h in range(1, width + 1) if width % h == 0], (False, True)):
            if _agrees(r, nodes[:cut], end, slots, heads, causal, probes):
                spec = MultiHeadAttention(heads=heads, width=width, causal=causal)
                r.rank = 3
                return Read(end, nodes[:cut], [spec], [slots])
    if not projections:
        return _refuse(r, nodes, residual, "its constant kernels are not an attention's "
                                           "projections: one (in, 3W) or three (in, W) before "
                                           "the Softmax and one (W, W) after it")
    return _refuse(r, nodes, residual, "no multi_head_attention with its projections gives what "
                                       "these nodes compute (by onnx's reference evaluator, "
                                       "for every head count and with or without a causal mask)")


def _scores_and_weighting(r: Reading, nodes: list[onnx.NodeProto]) -> bool:
    """Whether the region multiplies two computed values before its Softmax (queries by keys)
    and two after it (the weights by the values): an attention, not another use of a Softmax."""
    at = nodes.index(_softmax(nodes))
    products = [i for i, n in enumerate(nodes) if n.op_type == "MatMul" and len(n.input) == 2
                and all(r.view.constant(v) is None for v in n.input)]
    return any(i < at for i in products) and any(i > at for i in products)


def _softmax(nodes: list[onnx.NodeProto]) -> onnx.NodeProto:
    return next(n for n in nodes if n.op_type == "Softmax")


def _refuse(r: Reading, nodes, residual: bool, reason: str) -> None:
    if residual:  # the value comes back after the Softmax: a residual block, read as one
        return None
    raise r.unreadable(_softmax(nodes), f"read as the Softmax of an attention from "
                                        f"{r.value!r}: {reason}")


@reads_fork
def read_attention_fork(nodes: list[onnx.NodeProto], r: Reading) -> Read | None:
    return read_attention_region(r)


@reads_pattern("Transpose", "MatMul", "Gemm", "Reshape", "Shape")
def read_attention_from(node: onnx.NodeProto, r: Reading) -> Read | None:
    return read_attention_region(r)
