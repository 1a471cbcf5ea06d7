"""Reverse-mode differentiation over operation records.

The records reachable from the root are sorted once (depth-first, iteratively), then walked in
reverse; each record's backward rule gets the gradients of its results and returns one per input.
Gradients of leaves accumulate into `.grad` (as PyTorch's do); intermediate gradients are dropped
as soon as they are used. A record sends each input's gradient where that input's history was when
the record was made (`Record.edges`), so a tensor written in place later does not reroute it; a
value the rule needs that was written in place since makes backward raise (versions.py).
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import Any

import numpy as np

from deepsharp.errors import OpError
from deepsharp.tensors.primitives import _grad_out, _needs_input_grad, lookup
from deepsharp.tensors.tensor import Record, Tensor
from deepsharp.tensors.versions import check_current, check_saved


def _sorted_records(root: Record) -> list[Record]:
    order: list[Record] = []
    seen: set[int] = {id(root)}
    stack: list[tuple[Record, int]] = [(root, 0)]
    while stack:
        record, next_input = stack.pop()
        if next_input < len(record.edges):
            stack.append((record, next_input + 1))
            parent, _, requires_grad = record.edges[next_input]
            if parent is not None and parent.inputs and id(parent) not in seen:
                if requires_grad:
                    seen.add(id(parent))
                    stack.append((parent, 0))
        else:
            order.append(record)
    return order


def backward(root: Tensor, grad: Any = None) -> None:
    if not root.requires_grad:
        raise OpError("backward: this tensor does not require gradients (no input it was made "
                      "from requires them, or it was made under no_grad)")
    seed = np.ones_like(root._data) if grad is None else np.asarray(grad, dtype=root.dtype)
    if seed.shape != root.shape:
        raise OpError(f"backward: gradient shape {seed.shape} differs from the tensor's {root.shape}")
    check_current((root,), "backward")
    if root.record is None:
        _accumulate_leaf(root, seed)
        return
    pending: dict[int, list[np.ndarray | None]] = {id(root.record): [None] * len(root.record.shapes)}
    pending[id(root.record)][root.index] = seed
    for record in reversed(_sorted_records(root.record)):
        grads = pending.pop(id(record), None)
        if grads is None:
            continue
        _run_backward(record, grads, pending)


def _run_backward(record: Record, grads: list[np.ndarray | None],
                  pending: dict[int, list[np.ndarray | None]]) -> None:
    prim = lookup(record.op)
    if prim.backward is None:
        raise OpError(f"primitive {record.op!r} has no backward rule; it cannot be trained through")
    check_saved(record)
    arrays = [t._data for t in record.inputs]
    input_grads = call_rule(prim, record, grads, record.saved, arrays, record.attrs)
    for tensor, (parent, index, requires_grad), g in zip(record.inputs, record.edges, input_grads):
        if g is None or not requires_grad:
            continue
        if parent is None:
            _accumulate_leaf(tensor, g, prim.fresh)
            continue
        send(pending, id(parent), len(parent.shapes), index, g)


def call_rule(prim: Any, record: Any, grads: list[np.ndarray | None], saved: Any,
              arrays: list[np.ndarray], attrs: dict[str, Any], needs: tuple | None = None) -> Any:
    """`prim`'s backward rule on `arrays`, the gradients of its results (zeros for those nothing
    used), which inputs need theirs (`needs`, by default the record's edges say) and where it may
    write them (`record`: its `inputs`, `edges` and `shapes`/`dtypes`); one gradient (or None) per
    input."""
    if len(grads) == 1 and grads[0] is not None:  # (one result, its gradient come: most rules)
        filled = grads
    else:
        filled = [g if g is not None else np.zeros(s, dtype=d)
                  for g, s, d in zip(grads, record.shapes, record.dtypes)]
    given = filled if prim.outputs > 1 else filled[0]
    if needs is None:
        needs = tuple([edge[2] for edge in record.edges])
    token = _needs_input_grad.set(needs)
    homes = _homes(record) if prim.fresh else None
    out_token = _grad_out.set(homes) if homes is not None else None
    try:
        return prim.backward(given, saved, *arrays, **attrs)
    finally:
        _needs_input_grad.reset(token)
        if out_token is not None:
            _grad_out.reset(out_token)
            for tensor, home in zip(record.inputs, homes):
                if home is not None:
                    tensor._grad_home = None  # used once: the next gradient accumulates


def send(pending: dict[Any, list[np.ndarray | None]], key: Any, outputs: int, index: int,
         g: np.ndarray) -> None:
    """Add `g` to the gradient waiting for result `index` of the record `key` names (the first
    one in, the sum after)."""
    slots = pending.setdefault(key, [None] * outputs)
    current = slots[index]
    slots[index] = g if current is None else current + g


def _homes(record: Record) -> tuple[np.ndarray | None, ...] | None:
    """Where the rule may write each input's gradient (`grad_out`): a parameter's place in its
    optimizer's next gradient buffer (`Parameter._grad_home`, given by `Adam.zero_grad`), offered
    while its `.grad` is empty, outside a thread's sink, and to an input the record holds once
    (else two gradients would share one place); None when there is nothing to offer."""
    homes, found, inputs = [], False, record.inputs
    for tensor, (parent, _, requires_grad) in zip(inputs, record.edges):
        home = getattr(tensor, "_grad_home", None) if parent is None and requires_grad else None
        if home is not None and (tensor.grad is not None or leaf_sink.get() is not None
                                 or home.shape != tensor._data.shape
                                 or home.dtype != tensor._data.dtype
                                 or [t is tensor for t in inputs].count(True) != 1):
            home = None
        homes.append(home)
        found = found or home is not None
    return tuple(homes) if found else None


# A thread's own place for leaf gradients (deepsharp.parallel): {id(leaf): (leaf, gradient)}.
# Two threads running backward over the same parameters then never write the same `.grad`.
leaf_sink: ContextVar[dict[int, tuple[Tensor, np.ndarray]] | None] = ContextVar(
    "deepsharp_leaf_sink", default=None)


def _accumulate_leaf(tensor: Tensor, g: np.ndarray, fresh: bool = False) -> None:
    """Add `g` into the leaf's `.grad` (or the thread's sink). A gradient is copied before it is
    kept, never aliased (clipping scales `.grad` in place), unless it is `fresh` (a new array
    its rule made for it alone: `Primitive.fresh`)."""
    data = tensor._data
    fresh = fresh or not (isinstance(g, np.ndarray) and g.dtype == data.dtype)  # (asarray
    # below makes a new array then)
    g = np.asarray(g, dtype=data.dtype)
    if g.shape != data.shape:
        raise OpError(f"gradient of shape {g.shape} for a tensor of shape {tensor.shape}")
    sink = leaf_sink.get()
    if sink is not None:
        held = sink.get(id(tensor))
        sink[id(tensor)] = (tensor, (g if fresh else g.copy()) if held is None else held[1] + g)
        return
    if tensor.grad is None:
        tensor.grad = g if fresh else g.copy()
    else:
        tensor.grad = tensor.grad + g
