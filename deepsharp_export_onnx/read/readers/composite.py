"""Composite layers and low-rank adapters, read back.

- a value read by several nodes that meet again at an Add with the value itself -> residual (the
  branch read as a stack of its own), at a Mul with the value itself -> gate (x * branch(x), a
  squeeze-and-excitation block), or at a Concat -> concat (each input a branch; the value itself
  an empty branch);
- Slice of the last axis by constants -> columns;
- MatMul by a kernel beside MatMul, MatMul, Mul by a scalar, joined by an Add -> low-rank dense.

The join of a fork is the first Add, Mul or Concat (in graph order) that every node reading the
value leads to; each branch is read from the value to the join's input, with the other branches' nodes
hidden while it is read. The composite fork reader is registered after every other fork reader,
so a pattern such as attention's three MatMuls is read as that layer first.
"""

from __future__ import annotations

import onnx

from deepsharp.layers.composite import Columns, Concat, Gate, Residual
from deepsharp.layers.low_rank import LowRankDense
from deepsharp.sequential import Sequential
from deepsharp_export_onnx.read.readers.base import Read, Reading, reads_fork, reads_pattern
from deepsharp_export_onnx.read.readers.patterns import (
    constant_list, consumer, consumers, other_input, scalar,
)
from layout import matmul_to_dense_kernel


@reads_pattern("Slice")
def read_columns(node: onnx.NodeProto, r: Reading) -> Read | None:
    if node.input[0] != r.value:
        return None
    start, stop, axes = (constant_list(r, node.input[i]) if len(node.input) > i else None
                         for i in (1, 2, 3))
    steps = constant_list(r, node.input[4]) if len(node.input) > 4 and node.input[4] else [1]
    if None in (start, stop, axes) or len(axes) != 1 or axes[0] % r.rank != r.rank - 1 \
            or steps != [1] or not 0 <= start[0] < stop[0]:
        return None
    return Read(node.output[0], [node], [Columns(start=int(start[0]), stop=int(stop[0]))], [{}])


@reads_fork
def read_low_rank(nodes: list[onnx.NodeProto], r: Reading) -> Read | None:
    if len(nodes) != 2 or any(n.op_type != "MatMul" or n.input[0] != r.value for n in nodes):
        return None
    for down, held in (nodes, nodes[::-1]):
        read = _low_rank(r, down, held)
        if read is not None:
            return read
    return None


def _low_rank(r: Reading, down: onnx.NodeProto, held: onnx.NodeProto) -> Read | None:
    a, kernel = r.view.constant(down.input[1]), r.view.constant(held.input[1])
    up = consumer(r, down.output[0], "MatMul")
    scaled = consumer(r, up.output[0], "Mul") if up is not None else None
    join = consumer(r, scaled.output[0], "Add") if scaled is not None else None
    b = r.view.constant(up.input[1]) if up is not None else None
    scale = scalar(r, other_input(scaled, up.output[0])) if scaled is not None else None
    if any(v is None for v in (a, kernel, b, join, scale)) or a.ndim != 2 or b.ndim != 2 or kernel.ndim != 2:
        return None
    nodes, out, slots = [held], held.output[0], {"weight": matmul_to_dense_kernel(kernel)}
    biased = consumer(r, out, "Add")
    if biased is not None and biased is not join:
        bias = r.view.constant(other_input(biased, out))
        if bias is None:
            return None
        nodes.append(biased)
        out, slots["bias"] = biased.output[0], bias.reshape(-1)
    if other_input(join, scaled.output[0]) != out:
        return None
    slots.update(lora_a=a, lora_b=b)
    rank = a.shape[1]
    alpha = None if scale == 1.0 else float(scale) * rank  # float32(alpha / rank) == scale
    spec = LowRankDense(units=kernel.shape[1], rank=rank, alpha=alpha, bias="bias" in slots)
    return Read(join.output[0], nodes + [down, up, scaled, join], [spec], [slots])


# -- residual and concat ------------------------------------------------------------------------------
def _reachable(r: Reading, value: str) -> list[onnx.NodeProto]:
    """The open nodes reachable from `value`, in graph order."""
    found: set[int] = set()
    pending = [value]
    while pending:
        for node in consumers(r, pending.pop()):
            if id(node) not in found:
                found.add(id(node))
                pending += list(node.output)
    return [n for n in r.view.nodes if id(n) in found]


def _ancestors(r: Reading, node: onnx.NodeProto, stop: str) -> set[int]:
    """The nodes `node` is made from, back to the value `stop`."""
    found: set[int] = set()
    pending = [i for i in node.input if i and i != stop]
    while pending:
        parent = r.view.producer.get(pending.pop())
        if parent is not None and id(parent) not in found:
            found.add(id(parent))
            pending += [i for i in parent.input if i and i != stop]
    return found


def _join(r: Reading, readers: list[onnx.NodeProto]) -> onnx.NodeProto | None:
    for node in _reachable(r, r.value):
        if node.op_type not in ("Add", "Mul", "Concat") or not all(
                i == r.value or i in r.view.producer for i in node.input):
            continue  # a join's inputs are all branches computed from the value
        made_from = _ancestors(r, node, r.value)
        if all(n is node or id(n) in made_from for n in readers):
            return node
    return None


def _branch(r: Reading, end: str, hidden: list[onnx.NodeProto]) -> tuple[list, dict]:
    """Read the branch from r.value to `end` as a Sequential, hiding `hidden` meanwhile."""
    from deepsharp_export_onnx.read.file import read_chain

    if end == r.value:
        return [], {}
    hide = {id(n) for n in hidden} - r.view.consumed
    r.view.consumed |= hide
    sub = Reading(r.view, r.value, r.order, r.rank, dict(r.extra))
    faults: list[str] = []
    try:
        specs, slots = read_chain(sub, end, faults)
    finally:
        r.view.consumed -= hide
    if faults:
        raise r.unreadable(r.view.producer[end], "its branch cannot be read: " + "; ".join(faults))
    return specs, {f"{i}.{name}": value for i, s in enumerate(slots) for name, value in s.items()}


@reads_fork
def read_composite(nodes: list[onnx.NodeProto], r: Reading) -> Read | None:
    join = _join(r, nodes)
    if join is None or (join.op_type in ("Add", "Mul") and r.value not in join.input):
        return None
    if join.op_type in ("Add", "Mul"):
        end = other_input(join, r.value) if list(join.input) != [r.value, r.value] else r.value
        r.view.consume(join)
        specs, slots = _branch(r, end, [])
        branch, kind = Sequential(layers=tuple(specs)), Residual if join.op_type == "Add" else Gate
        spec = kind(branch=branch) if specs else kind.model_construct(branch=branch)
        return Read(join.output[0], [join], [spec], [{f"branch.{k}": v for k, v in slots.items()}])
    r.view.consume(join)
    branches, slots = [], {}
    for k, end in enumerate(join.input):
        others = []
        if end != r.value:  # the nodes reading the value that this branch is not made of
            last = r.view.producer[end]
            mine = _ancestors(r, last, r.value) | {id(last)}
            others = [n for n in nodes if id(n) not in mine]
        specs, branch_slots = _branch(r, end, others)
        branches.append(Sequential(layers=tuple(specs)))
        slots.update({f"branches.{k}.{name}": v for name, v in branch_slots.items()})
    return Read(join.output[0], [join], [Concat(branches=tuple(branches))], [slots])
