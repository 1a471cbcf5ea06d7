"""A network's training pass recorded once and replayed: fit's forward, loss and backward of a
batch without the tape's per-operation bookkeeping (`lean_pass`, which fit calls for each batch).

The first batch of an input shape runs through the tape as usual; the records it leaves, from the
input and the parameters to the loss, become a plan: each primitive with its attributes, where each
of its inputs comes from (the batch, a parameter, the target, an earlier result), in the order the
tape sorted them. A later batch of that shape (and of that target's shape and type) runs the same
forward rules on its own arrays, then the same backward rules in the same order, with the same
gradient places (`grad_out`) and the same sums (`call_rule`, `send`, `_accumulate_leaf`: the
tape's own): every number is the tape's (tests/deepsharp/test_fit_lean.py holds weights and
history bit for bit).

A pass is planned only when nothing but its input, its parameters and its target can change what
it computes:
- the module is a plain Network (a stack of steps) holding no buffers (batch norm's running
  statistics change outside the tape), its input one array of numbers (floats, or ids: what a
  layer checks of its values, a primitive checks, and a replay runs it), its loss one of the
  library's own (`Plans.__init__`, `Plans.key`);
- every record's input is the batch's input, a parameter, the prepared target or an earlier
  record's result (`_sources`): a constant made during the pass (a dropout mask, noise, a number)
  refuses the plan, and so does a value computed from the input alone (a constant to the tape);
- at each replay: no tracer, gradients on, fusion as when the epoch began, the module training,
  its parameters the very objects (not replaced) and each requiring its gradient as when the
  epoch began (`Plans.key`).
Anything else runs the tape, batch after batch. Plans live for one epoch (a callback may change
the module between epochs). A replay skips what only the tape's users need: version checks (no
tensor of the pass can be written between its forward and its backward) and results' tensors.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from deepsharp.errors import OpError
from deepsharp.feeding import call, prepare, tensors
from deepsharp.parallel import one_thread
from deepsharp.tensors import Tensor, modes
from deepsharp.tensors.autograd import _accumulate_leaf, _sorted_records, call_rule, send
from deepsharp.tensors.modes import _grad_enabled, _trace_hook
from deepsharp.tensors.ops.two_threads import splitting_kernels
from deepsharp.tensors.primitives import lookup

INPUT, PARAMETER, TARGET, RESULT = range(4)
_INNER = object()  # stands for a record's parent: only "not a leaf" matters to call_rule


class _Rule:
    """One record of a plan: what `call_rule` reads of a Record, without its arrays."""

    __slots__ = ("op", "prim", "attrs", "sources", "inputs", "edges", "needs", "shapes",
                 "dtypes")

    def __init__(self, record: Any, sources: list[tuple[int, Any]]) -> None:
        self.op, self.prim, self.attrs = record.op, lookup(record.op), record.attrs
        self.sources = sources
        self.inputs = tuple([s if kind == PARAMETER else None for kind, s in sources])
        self.edges = tuple([(None if parent is None else _INNER, index, needs)
                            for parent, index, needs in record.edges])
        self.needs = tuple([edge[2] for edge in self.edges])
        self.shapes, self.dtypes = record.shapes, record.dtypes


# Loss primitives whose saved state holds their loss's output activation in parts made exactly as
# the loss's `output` makes them (cross_entropy_ids_loss saves e = exp(z - max z) and its row sums,
# `_softmax`'s arithmetic on the same logits): a metric's answers from them, without a second
# softmax over the logits (tests/deepsharp/test_fit_lean.py holds them to `output` bit for bit).
_ANSWERS = {"cross_entropy_ids_loss": lambda saved: saved[0] / saved[1]}


class Plan:
    """A recorded pass: its rules (parents first), where the logits are, the target it takes,
    and the rule before whose backward every parameter but its own has its final gradient
    (`final_at`, and those parameters, `final`)."""

    __slots__ = ("rules", "logits", "logits_shape", "target", "final_at", "final", "answers")

    def __init__(self, rules: list[_Rule], logits: tuple[int, int], logits_shape: tuple,
                 target: tuple) -> None:
        self.rules, self.logits, self.logits_shape, self.target = rules, logits, logits_shape, target
        first: dict[int, tuple[int, Any]] = {}  # id(parameter): (the first rule reading it, it)
        for k in range(len(rules) - 1, -1, -1):
            for kind, source in rules[k].sources:
                if kind == PARAMETER:
                    first[id(source)] = (k, source)
        self.final_at = min([k for k, _ in first.values()], default=-1)
        self.final = [p for k, p in first.values() if k > self.final_at]
        loss = rules[-1]  # (the loss of the logits themselves, not of a result made from them)
        self.answers = _ANSWERS.get(loss.op) if loss.sources[0] == (RESULT, logits) else None

    def takes(self, target: np.ndarray) -> bool:
        return (target.shape, target.dtype) == self.target

    def replay(self, x: np.ndarray, target: np.ndarray, ahead: Any = None
               ) -> tuple[float, np.ndarray, np.ndarray | None]:
        """The pass on a new batch: forward, then backward into the parameters' gradients (as
        `backward` leaves them); (the loss, the logits, the loss's output activation of the
        logits when its rule saved it, else None). `ahead`, an optimizer, if given: its
        `step_ahead(parameters)` is called once the gradients of those parameters are final and
        the backward pass has the first parameter's rule (and the rules before it) left to run,
        when the loss is finite (it may begin its step there), and its `drop_ahead()` if the
        backward pass then fails."""
        outs, saved, args = _forward(self.rules, x, target)
        loss = outs[-1][0]
        seed = np.ones(loss.shape, loss.dtype)  # (ones_like's)
        if ahead is not None and (not self.final or not np.isfinite(loss).all()):
            ahead = None  # (fit refuses a loss that is not finite before any step)
        if ahead is None:
            _backward(self.rules, saved, args, seed)
        else:
            try:
                _backward(self.rules, saved, args, seed,
                          (self.final_at, lambda: ahead.step_ahead(self.final)))
            except BaseException:
                ahead.drop_ahead()  # (no step follows a failed backward pass)
                raise
        answers = self.answers(saved[-1]) if self.answers is not None else None
        return float(loss), outs[self.logits[0]][self.logits[1]], answers


class Plans:
    """One epoch's recorded passes of `module` trained with `loss`, by input shape and type."""

    def __init__(self, module: Any, loss: Any) -> None:
        from deepsharp.losses import Loss
        from deepsharp.network import Network

        self.module = module
        self.params = [p for _, p in module.named_parameters()]
        self.needs = [p.requires_grad for p in self.params]  # (a frozen one is a constant)
        self.tree = _tables(module)
        self.possible = (type(module) is Network and not list(module.named_buffers())
                         and isinstance(loss, Loss) and type(loss).__module__ == Loss.__module__)
        self.fusing = modes.may_fuse()
        self.found: dict[tuple, Plan | None] = {}

    def key(self, inputs: Any) -> tuple | None:
        """The key of a batch whose pass a plan may run (recorded or not yet), else None."""
        if not self.possible or not isinstance(inputs, tuple) or len(inputs) != 1:
            return None
        x = inputs[0]
        if (not isinstance(x, np.ndarray) or x.dtype.kind not in "fiu"
                or _trace_hook.get() is not None
                or not _grad_enabled.get() or not self.module.training
                or modes.may_fuse() != self.fusing or not self._same_parameters()):
            return None
        return (x.shape, x.dtype)

    def _same_parameters(self) -> bool:
        """The module's parameters are still the very objects the plans read (a batch source may
        replace one between batches, not only write it in place), each needing its gradient as
        when the epoch began. `named_parameters` walks only the modules' own tables of children
        and parameters: while every table holds the very objects it held, in the same order, the
        walk gives the same parameters (and the same steps), so the tables are what is checked
        (a third of the walk's cost)."""
        for module, parameters, held, children, kids in self.tree:
            if (module._parameters is not parameters or module._modules is not children
                    or len(parameters) != len(held) or len(children) != len(kids)):
                return False
            for a, b in zip(parameters.values(), held):
                if a is not b:
                    return False
            for a, b in zip(children.values(), kids):
                if a is not b:
                    return False
        return [p.requires_grad for p in self.params] == self.needs

    def get(self, key: tuple | None) -> Plan | None:
        return None if key is None else self.found.get(key)

    def record(self, key: tuple, x: Tensor, z: Tensor, target: np.ndarray, value: Tensor) -> None:
        """Keep the pass the tape just ran (input x, logits z, the loss `value`, before its
        backward) as the plan for batches of `key` when it is one; else remember it is not."""
        if key not in self.found:
            self.found[key] = _plan(x, z, target, value, {id(p) for p in self.params})


def _tables(module: Any) -> list[tuple]:
    """Each module of the tree with its tables of parameters and children and what they hold."""
    return [(m, m._parameters, tuple(m._parameters.values()), m._modules,
             tuple(m._modules.values())) for _, m in module.named_modules()]


def _plan(x: Tensor, z: Tensor, target: np.ndarray, value: Tensor, params: set[int]
          ) -> Plan | None:
    root = value.record
    if root is None or value.index != 0 or z.record is None or not isinstance(target, np.ndarray):
        return None
    order = _sorted_records(root)  # parents first; backward runs it from the end
    places = {id(r): k for k, r in enumerate(order)}
    if order[-1] is not root or id(z.record) not in places:
        return None
    rules = []
    for record in order:
        sources = _sources(record, x, target, params, places)
        if sources is None or lookup(record.op).backward is None:
            return None
        rules.append(_Rule(record, sources))
    return Plan(rules, (places[id(z.record)], z.index), tuple(z._data.shape),
                (target.shape, target.dtype))


def _sources(record: Any, x: Tensor, target: np.ndarray, params: set[int], places: dict
             ) -> list[tuple[int, Any]] | None:
    """Where each input of `record` comes from, or None when one is a constant of this pass."""
    sources: list[tuple[int, Any]] = []
    for t, (parent, index, needs) in zip(record.inputs, record.edges):
        if t is x and parent is None and not needs:
            sources.append((INPUT, None))
        elif parent is None and id(t) in params:  # (one that needs no gradient: frozen)
            sources.append((PARAMETER, t))
        elif parent is None and not needs and t._data is target:
            sources.append((TARGET, None))
        elif parent is not None and needs and t.record is parent and id(parent) in places:
            sources.append((RESULT, (places[id(parent)], index)))
        else:
            return None
    return sources


def _arrays(rule: _Rule, x: np.ndarray, target: np.ndarray, outs: list) -> list[np.ndarray]:
    arrays = []
    for kind, source in rule.sources:
        if kind == RESULT:
            arrays.append(outs[source[0]][source[1]])
        elif kind == PARAMETER:
            arrays.append(source._data)
        else:
            arrays.append(x if kind == INPUT else target)
    return arrays


def _forward(rules: list[_Rule], x: np.ndarray, target: np.ndarray) -> tuple[list, list, list]:
    """Each rule's results, what it saved and the arrays it ran on, in order (numpy's refusals
    as apply words them)."""
    outs, saved, args = [], [], []
    for rule in rules:
        arrays = _arrays(rule, x, target, outs)
        try:
            out, kept = rule.prim.forward(*arrays, **rule.attrs)
        except (TypeError, ValueError, IndexError, OverflowError, MemoryError,
                AttributeError) as error:
            text = str(error) or type(error).__name__
            raise OpError(f"{rule.op}: cannot compute: {text[:200]}") from None
        outs.append(out if rule.prim.outputs > 1 else (out,))
        saved.append(kept)
        args.append(arrays)
    return outs, saved, args


def _backward(rules: list[_Rule], saved: list, args: list, seed: np.ndarray,
              ahead: tuple[int, Any] | None = None) -> None:
    """`backward`'s walk over the plan: the rules from the last, on the arrays their forward ran
    on, each result's gradient summed in arrival order, leaves' gradients accumulated as the tape
    does; `ahead` (k, fn): fn() just before rule k's turn."""
    last = len(rules) - 1
    pending: dict[int, list] = {last: [seed] + [None] * (len(rules[last].shapes) - 1)}
    for k in range(last, -1, -1):
        if ahead is not None and k == ahead[0]:
            ahead[1]()
        grads = pending.pop(k, None)
        if grads is None:
            continue
        rule = rules[k]
        input_grads = call_rule(rule.prim, rule, grads, saved[k], args[k], rule.attrs, rule.needs)
        for (kind, source), needs, g in zip(rule.sources, rule.needs, input_grads):
            if g is None or not needs:
                continue
            if kind == PARAMETER:
                _accumulate_leaf(source, g, rule.prim.fresh)
            else:
                send(pending, source[0], len(rules[source[0]].shapes), source[1], g)


# -- fit's pass ------------------------------------------------------------------------------------
def lean_pass(run: Any, batch: Any, plans: Plans | None) -> tuple[float, tuple] | None:
    """fit's `forward_backward` over `_loss_of` (training.py) for the usual batch, with the same
    calls and numbers but none of their generality: one output whose loss weighs 1, no sample or
    class weights, one thread (forward_backward's own test); a pass `plans` holds runs as its
    replay, and the first of its shape is recorded. None when the batch is not the usual one
    (then the general path runs). Its payload is `_loss_of`'s, and the loss's output activation
    (`answers`, by output) when the replay has it, else None."""
    objective = run.objective
    if (plans is None or run.class_weight is not None or batch.w is not None
            or not one_thread()):
        return None
    loss = objective.outputs[0].loss
    where = f"fit: {run.source.what}{', ' + batch.where if batch.where else ''}"
    y = objective.answers(batch.y, run.source.what)[""]  # (which refuses y that is not one array)
    key = plans.key(batch.x)
    plan = plans.get(key)
    if plan is not None:
        x = Tensor(batch.x[0])
        # The shape check passed for this very shape when the plan was recorded this epoch, and
        # what else it reads (the input shape, the spec, the first step, whose object the key
        # holds) does not change; a graph's input annotation (`input_checks`) may read values,
        # so it runs every batch.
        if run.module.input_checks:
            run.module.check_input(x)
        target = prepare(loss, y, plan.logits_shape, where)
        if plan.takes(target):
            # (inside data_parallel(2, split="kernels") the optimizer may begin its step on the
            # worker while the first layer's backward runs on the caller)
            ahead = run.optimizer if splitting_kernels() else None
            number, z, answers = plan.replay(x._data, target, ahead)
            return number, ({"": z}, {"": target}, {"": number},
                            None if answers is None else {"": answers})
    inputs = tensors(batch.x)
    z = call(run.module, inputs, loss)
    target = prepare(loss, y, tuple(z.shape), where)
    value = loss(z, target)
    part = float(value._data)
    if key is not None:
        plans.record(key, inputs[0], z, target, value)
    value.backward()
    return float(value._data), ({"": z._data}, {"": target}, {"": part}, None)


def plans_for(run: Any) -> Plans | None:
    """An epoch's recorded passes when its batches may take the lean pass (one output with a
    loss weighing 1), else None."""
    objective = run.objective
    output = objective.outputs[0]
    if objective.structure != "single" or output.loss is None or output.weight != 1.0:
        return None
    return Plans(run.module, output.loss)
