"""What `fit` minimises and reports when a module gives one output or several: a loss per output,
the weights of the losses in the total, the metrics per output, and the names in the history.

A module's `forward` gives a tensor (one output, named ""), a tuple of tensors (outputs
`output_0`, `output_1`, ..., as the tracer names them) or a dict of tensors (outputs named by
their keys). `loss` is one Loss (for every output, as Keras applies it), a sequence of losses (one
per output of a tuple) or a dict (by output name; an output left out has no loss and needs no
answers). The total is `sum(loss_weights[k] * loss_k)`; the history holds `loss`, and with several
outputs `{name}_loss` and `{name}_{metric}` too.
"""

from __future__ import annotations

from collections.abc import Mapping  # (typing's alias: an isinstance costs microseconds)
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from deepsharp.errors import SpecError, TargetError
from deepsharp.losses import Loss
from deepsharp.metrics import Metric, Task, metrics_of, rows_of
from deepsharp.tensors import Tensor, apply


@dataclass
class Output:
    name: str
    loss: Loss | None
    weight: float = 1.0
    metrics: list[Metric] = field(default_factory=list)
    task: Task | None = None

    def key(self, what: str) -> str:
        return f"{self.name}_{what}" if self.name else what


def _names(result: Any, verb: str) -> tuple[str, list[str]]:
    if isinstance(result, Tensor):
        return "single", [""]
    if isinstance(result, (tuple, list)) and result and all(isinstance(t, Tensor) for t in result):
        return "tuple", [f"output_{i}" for i in range(len(result))]
    if isinstance(result, Mapping) and result and all(isinstance(t, Tensor) for t in result.values()):
        return "dict", [str(k) for k in result]
    raise SpecError(f"{verb}: the module's forward must give a tensor, a tuple of tensors or a dict "
                    f"of tensors; it gave {type(result).__name__}")


def _per_output(what: str, value: Any, structure: str, names: list[str], default: Any,
                single_ok: type | tuple[type, ...], verb: str = "fit") -> dict[str, Any]:
    """`value` spread over the outputs: one value for all, a sequence by position, a dict by name."""
    if value is None:
        return {n: default for n in names}
    if isinstance(value, Mapping):
        if structure != "dict":
            raise SpecError(f"{verb}: {what} is a dict, but the module's outputs are not named (it "
                            f"gives {'one tensor' if structure == 'single' else 'a tuple'})")
        unknown = sorted(set(map(str, value)) - set(names))
        if unknown:
            raise SpecError(f"{verb}: {what} names outputs {unknown} the module does not give; its "
                            f"outputs are {names}")
        return {n: value.get(n) for n in names}
    if isinstance(value, (list, tuple)) and not isinstance(value, single_ok):
        if structure == "dict":
            raise SpecError(f"{verb}: {what} is a sequence, but the module's outputs are named "
                            f"{names}: give a dict")
        if len(value) != len(names):
            raise SpecError(f"{verb}: {what} has {len(value)} entries for the module's "
                            f"{len(names)} output(s)")
        return dict(zip(names, value))
    return {n: value for n in names}


class Objective:
    """The outputs of a module, each with its loss, weight and metrics (see the module docstring)."""

    def __init__(self, structure: str, outputs: list[Output]) -> None:
        self.structure = structure
        self.outputs = outputs

    @classmethod
    def make(cls, result: Any, loss: Any, loss_weights: Any = None, metrics: Any = None,
             verb: str = "fit") -> "Objective":
        structure, names = _names(result, verb)
        losses = _per_output("loss", loss, structure, names, None, (), verb)
        if all(v is None for v in losses.values()):
            raise SpecError(f"{verb}: loss must be a deepsharp Loss, received {loss!r}")
        for name, value in losses.items():
            if value is not None and not isinstance(value, Loss):
                raise SpecError(f"{verb}: loss{_at(name)} must be a deepsharp Loss, received "
                                f"{value!r}")
        weights = _per_output("loss_weights", loss_weights, structure, names, 1.0, ())
        per_metrics = _metric_lists(metrics, structure, names)
        shapes = _shapes(result, structure, names)
        outputs = []
        for name in names:
            weight = weights[name] if weights[name] is not None else 1.0
            if isinstance(weight, bool) or not isinstance(weight, (int, float, np.number)) \
                    or not np.isfinite(weight) or weight < 0:
                raise SpecError(f"fit: loss_weights{_at(name)} must be a non-negative number, "
                                f"received {weight!r}")
            out_loss = losses[name]
            chosen = per_metrics[name] if per_metrics[name] is not None else (
                out_loss.default_metrics() if out_loss is not None else [])
            task = Task.of(out_loss, shapes[name]) if out_loss is not None else None
            found = metrics_of(chosen)
            if found and out_loss is None:
                raise SpecError(f"fit: output {name!r} has metrics but no loss")
            outputs.append(Output(name, out_loss, float(weight),
                                  [m.fresh(task) for m in found] if task else [], task))
        return cls(structure, outputs)

    @property
    def single(self) -> Loss | None:
        """The loss of a module with one output (the one a stack lifts its activation into)."""
        return self.outputs[0].loss if self.structure == "single" else None

    @property
    def trained(self) -> list[Output]:
        return [o for o in self.outputs if o.loss is not None]

    # -- matching results, answers and weights to the outputs ------------------------------------
    def results(self, result: Any) -> dict[str, Any]:
        """The module's result by output name (tensors or arrays)."""
        if self.structure == "single":
            return {"": result}
        if self.structure == "tuple":
            return {f"output_{i}": r for i, r in enumerate(result)}
        return {str(k): v for k, v in result.items()}

    def rebuild(self, parts: dict[str, Any]) -> Any:
        """`parts` by output name back in the module's structure."""
        if self.structure == "single":
            return parts[""]
        if self.structure == "tuple":
            return tuple(parts[o.name] for o in self.outputs)
        return {o.name: parts[o.name] for o in self.outputs}

    def answers(self, y: Any, what: str) -> dict[str, Any]:
        """The answers given for every output that has a loss."""
        if self.structure == "single":
            if not isinstance(y, np.ndarray) and isinstance(y, (Mapping, tuple)):  # (the ABC last)
                raise TargetError(f"fit: {what}: the module gives one output; y must be one array, "
                                  f"received a {type(y).__name__}")
            return {"": y}
        trained = [o.name for o in self.trained]
        if self.structure == "dict":
            if not isinstance(y, Mapping):
                raise TargetError(f"fit: {what}: the module's outputs are named {trained}; y must "
                                  f"be a dict of arrays by those names, received "
                                  f"{type(y).__name__}")
            missing = sorted(set(trained) - set(map(str, y)))
            unknown = sorted(set(map(str, y)) - {o.name for o in self.outputs})
            if missing or unknown:
                raise TargetError(f"fit: {what}: y has no answers for outputs {missing} and "
                                  f"answers for unknown outputs {unknown}; outputs with a loss: "
                                  f"{trained}")
            return {str(k): v for k, v in y.items() if str(k) in trained}
        if not isinstance(y, (list, tuple)) or len(y) != len(self.outputs):
            raise TargetError(f"fit: {what}: the module gives a tuple of {len(self.outputs)} "
                              f"outputs; y must be a tuple of as many arrays, received "
                              f"{type(y).__name__}{'' if not hasattr(y, '__len__') else f' of {len(y)}'}")
        return {o.name: v for o, v in zip(self.outputs, y) if o.loss is not None}

    def weights(self, w: Any) -> dict[str, Any]:
        """Sample weights by output: one array for every output, or a structure like y's."""
        if w is None:
            return {o.name: None for o in self.trained}
        if isinstance(w, np.ndarray) or not isinstance(w, (Mapping, list, tuple)):
            return {o.name: w for o in self.trained}
        spread = _per_output("sample_weight", w, self.structure, [o.name for o in self.outputs],
                             None, ())
        return {o.name: spread[o.name] for o in self.trained}

    # -- the loss ------------------------------------------------------------------------------------
    def loss(self, results: dict[str, Tensor], targets: dict[str, np.ndarray],
             weights: dict[str, np.ndarray | None]) -> tuple[Tensor, dict[str, float]]:
        """The weighted total (a scalar tensor) and each output's loss as a number."""
        total, parts = None, {}
        for o in self.trained:
            z, y, w = results[o.name], targets[o.name], weights.get(o.name)
            value = o.loss(z, y) if w is None else o.loss.weighted(z, y, w)
            parts[o.name] = float(value._data)
            term = value if o.weight == 1.0 else apply("mul", value, o.weight)
            total = term if total is None else apply("add", total, term)
        return total, parts

    def logs(self, parts: dict[str, float]) -> dict[str, float]:
        total = sum(o.weight * parts[o.name] for o in self.trained)
        logs = {"loss": total}
        if self.structure != "single":
            logs.update({o.key("loss"): parts[o.name] for o in self.trained})
        return logs

    def update_metrics(self, metrics: dict[str, list[Metric]], answers: dict[str, np.ndarray],
                       targets: dict[str, np.ndarray]) -> None:
        for o in self.trained:
            if metrics[o.name]:
                rows = rows_of(o.task, answers[o.name], targets[o.name])
                for metric in metrics[o.name]:
                    metric.update(rows)

    def fresh_metrics(self) -> dict[str, list[Metric]]:
        return {o.name: [m.fresh(o.task) for m in o.metrics] for o in self.trained}

    def metric_logs(self, metrics: dict[str, list[Metric]]) -> dict[str, float]:
        by_name = {o.name: o for o in self.outputs}
        return {by_name[name].key(m.name): m.result() for name, found in metrics.items()
                for m in found}


def _at(name: str) -> str:
    return f"[{name!r}]" if name else ""


def _metric_lists(metrics: Any, structure: str, names: list[str]) -> dict[str, Any]:
    if metrics is None:
        return {n: None for n in names}
    if structure == "single" or isinstance(metrics, Mapping):
        if structure == "single":
            return {"": metrics}
        return _per_output("metrics", metrics, structure, names, None, (str,))
    if isinstance(metrics, (list, tuple)) and all(isinstance(m, (list, tuple)) for m in metrics):
        return _per_output("metrics", list(metrics), structure, names, None, ())
    raise SpecError(f"fit: the module gives outputs {names}: give metrics per output, as a dict "
                    f"by name{' or a list of lists' if structure == 'tuple' else ''}")


def _shapes(result: Any, structure: str, names: list[str]) -> dict[str, tuple[int, ...]]:
    parts = (result,) if structure == "single" else (
        tuple(result) if structure == "tuple" else tuple(result.values()))
    return {n: tuple(t.shape) for n, t in zip(names, parts)}

