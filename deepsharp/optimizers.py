"""Optimizers with PyTorch's arithmetic and defaults, gradient-norm clipping, and a schedule.

| optimizer | update (g the gradient, p the parameter)                                            |
|-----------|--------------------------------------------------------------------------------------|
| SGD       | g += wd p; b = m b + (1 - dampening) g (b = g at first); g = g + m b if nesterov else b; p -= lr g |
| Adam      | g += wd p; m1 = b1 m1 + (1-b1) g; m2 = b2 m2 + (1-b2) g^2; p -= lr/(1-b1^t) m1 / (sqrt(m2)/sqrt(1-b2^t) + eps) |
| AdamW     | p *= 1 - lr wd, then Adam without the g += wd p                                      |
| RMSprop   | g += wd p; s = a s + (1-a) g^2; d = sqrt(s [- mean(g)^2 if centered]) + eps; p -= lr (b = m b + g/d if momentum else g/d) |

`clip_norm` scales every gradient by min(1, clip_norm / (total 2-norm + 1e-6)) first, as
`torch.nn.utils.clip_grad_norm_`. State is kept per parameter path, so a checkpoint holds it by name.
"""

from __future__ import annotations

import math
from typing import Any, Iterable

import numpy as np

from deepsharp.arguments import flag, instance, number
from deepsharp.compiled import kernel
from deepsharp.errors import SpecError, StateError, TrainingError
from deepsharp.module import Parameter
from deepsharp import step_ahead
from deepsharp.tensors.ops.two_threads import in_halves, splits_in_halves
from deepsharp.schedules import Schedule


def _check(owner: str, name: str, value: float, low: float = 0.0, inclusive: bool = True,
           high: float | None = None) -> None:
    value = number(owner, name, value)
    ok = value >= low if inclusive else value > low
    if high is not None:
        ok = ok and value < high
    if not ok or not math.isfinite(value):
        bound = f">= {low}" if inclusive else f"> {low}"
        bound += f" and < {high}" if high is not None else ""
        raise SpecError(f"{owner}: {name} must be {bound}, received {value!r}")


class Optimizer:
    """Base: bind to named parameters (`parameters=` when made, `bind(...)` later, or `fit` does
    it), then `step()` after each backward pass. An optimizer with nothing to train refuses to be
    made or stepped."""

    def __init__(self, lr: float, weight_decay: float = 0.0, clip_norm: float | None = None,
                 schedule: Schedule | None = None, parameters: Any = None) -> None:
        owner = type(self).__name__
        _check(owner, "lr", lr)
        _check(owner, "weight_decay", weight_decay)
        if clip_norm is not None:
            _check(owner, "clip_norm", clip_norm, inclusive=False)
            clip_norm = float(clip_norm)
        instance(owner, "schedule", schedule, Schedule)
        self.base_lr = float(lr)
        self.lr = float(lr)
        self.weight_decay = float(weight_decay)
        self.clip_norm = clip_norm
        self.schedule = schedule
        self.params: list[tuple[str, Parameter]] = []
        self.state: dict[str, dict[str, np.ndarray]] = {}
        self.bound = False
        if parameters is not None:
            self.bind(parameters)

    def bind(self, named_parameters: Iterable[Any]) -> "Optimizer":
        """Train these parameters: (path, Parameter) pairs (`module.trainable_parameters()`) or
        bare Parameters (`module.parameters()`, named by position); frozen ones are left out."""
        owner = type(self).__name__
        if isinstance(named_parameters, (str, bytes)) or not hasattr(named_parameters, "__iter__"):
            raise SpecError(f"{owner}: parameters must be module.trainable_parameters() or "
                            f"module.parameters(), received {named_parameters!r}")
        pairs = []
        for index, item in enumerate(named_parameters):
            if isinstance(item, Parameter):
                item = (f"param{index}", item)
            if not (isinstance(item, tuple) and len(item) == 2 and isinstance(item[1], Parameter)):
                raise SpecError(f"{owner}: parameters[{index}] is {item!r}, not a Parameter or a "
                                f"(path, Parameter) pair")
            pairs.append(item)
        params = [(n, p) for n, p in pairs if p.requires_grad]
        if not params:
            raise SpecError(f"{owner}: no parameters to train (received {len(pairs)}, all frozen "
                            f"or none): give module.trainable_parameters() of a module with "
                            f"something to train")
        # state kept by path for other parameters (another network's): not these ones' moments
        wrong = [f"{name}/{key} is {value.dtype} {value.shape}, the parameter {p._data.dtype} "
                 f"{p._data.shape}" for name, p in params
                 for key, value in self.state.get(name, {}).items()
                 if value.ndim and (value.shape != p._data.shape or value.dtype != p._data.dtype)]
        if wrong:
            raise StateError(f"{owner}: its state is for other parameters of the same paths ("
                             + "; ".join(wrong) + "): give this module an optimizer of its own")
        self.params = params
        self.bound = True
        return self

    def zero_grad(self) -> None:
        for _, p in self.params:
            p.grad = None

    def scheduled(self, epoch: int, step: int) -> float:
        """Set and return the rate the schedule gives at this epoch and step."""
        if self.schedule is not None:
            t = epoch if self.schedule.unit == "epoch" else step
            self.lr = float(self.schedule.rate(self.base_lr, t))
        return self.lr

    def clip(self) -> float:
        """Scale gradients to a total 2-norm of at most `clip_norm`; return the norm before."""
        grads = [p.grad for _, p in self.params if p.grad is not None]
        total = math.sqrt(sum(float(np.vdot(g, g)) for g in grads))
        if self.clip_norm is not None:
            coef = self.clip_norm / (total + 1e-6)
            if coef < 1.0:
                for g in grads:
                    g *= np.asarray(coef, dtype=g.dtype)
        return total

    def step(self) -> None:
        if not self.bound:
            raise TrainingError(f"{type(self).__name__}.step: no parameters are bound, so there "
                                f"is nothing to update: make it with parameters="
                                f"module.trainable_parameters(), or call "
                                f"bind(module.trainable_parameters()) first (fit does)")
        if self.clip_norm is not None:
            self.clip()
        for name, p in self.params:
            if p.grad is not None:
                self.update(p._data, p.grad, self.state.setdefault(name, {}))
                p._version += 1

    def update(self, p: np.ndarray, g: np.ndarray, state: dict[str, np.ndarray]) -> None:
        raise TypeError(f"{type(self).__name__} does not define update()")

    def step_ahead(self, final: list[Parameter]) -> None:
        """Called by fit's replayed pass once the gradients of `final` are final, before the
        backward pass ends: an optimizer may begin its step there (Adam does, on the worker of
        `data_parallel(2, split="kernels")`); this one waits for `step()`."""

    def drop_ahead(self) -> None:
        """Called when the backward pass fails after `step_ahead`: undo what it began."""

    def _decayed(self, p: np.ndarray, g: np.ndarray) -> np.ndarray:
        return g + np.asarray(self.weight_decay, p.dtype) * p if self.weight_decay else g

    # -- checkpoints --------------------------------------------------------------------------------
    def state_arrays(self) -> dict[str, np.ndarray]:
        """Every state array by `{parameter path}/{name}` (what a checkpoint stores)."""
        return {f"{path}/{key}": value for path, slots in self.state.items()
                for key, value in slots.items()}

    def load_state_arrays(self, arrays: dict[str, np.ndarray]) -> None:
        known = {name for name, _ in self.params}
        state: dict[str, dict[str, np.ndarray]] = {}
        for key, value in arrays.items():
            path, _, name = key.rpartition("/")
            if path not in known:
                raise StateError(f"{type(self).__name__}: checkpoint holds state for {path!r}, "
                                 f"which is not a trainable parameter of this network")
            state.setdefault(path, {})[name] = np.array(value)
        self.state = state

    def config(self) -> dict[str, Any]:
        return {"lr": self.base_lr, "weight_decay": self.weight_decay, "clip_norm": self.clip_norm}

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.config().items())
        return f"{type(self).__name__}({args})"


class SGD(Optimizer):
    def __init__(self, lr: float = 1e-3, momentum: float = 0.0, dampening: float = 0.0,
                 nesterov: bool = False, weight_decay: float = 0.0,
                 clip_norm: float | None = None, schedule: Schedule | None = None,
                 parameters: Any = None) -> None:
        super().__init__(lr, weight_decay, clip_norm, schedule, parameters)
        _check("SGD", "momentum", momentum)
        _check("SGD", "dampening", dampening)
        nesterov = flag("SGD", "nesterov", nesterov)
        if nesterov and (momentum <= 0 or dampening != 0):
            raise SpecError(f"SGD: nesterov needs a positive momentum and zero dampening, "
                            f"received momentum={momentum}, dampening={dampening}")
        self.momentum, self.dampening, self.nesterov = float(momentum), float(dampening), nesterov

    def update(self, p, g, state):
        g = self._decayed(p, g)
        if self.momentum:
            buf = state.get("momentum_buffer")
            if buf is None:
                buf = state["momentum_buffer"] = g.copy()
            else:
                buf *= np.asarray(self.momentum, p.dtype)
                buf += np.asarray(1 - self.dampening, p.dtype) * g
            g = g + np.asarray(self.momentum, p.dtype) * buf if self.nesterov else buf
        p -= np.asarray(self.lr, p.dtype) * g

    def config(self):
        return {**super().config(), "momentum": self.momentum, "dampening": self.dampening,
                "nesterov": self.nesterov}


class Adam(Optimizer):
    decoupled = False

    def __init__(self, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0.0, clip_norm: float | None = None,
                 schedule: Schedule | None = None, parameters: Any = None) -> None:
        super().__init__(lr, weight_decay, clip_norm, schedule, parameters)
        owner = type(self).__name__
        if not isinstance(betas, (tuple, list)) or len(betas) != 2:
            raise SpecError(f"{owner}: betas must be a pair of numbers, received {betas!r}")
        _check(owner, "betas[0]", betas[0], high=1.0)
        _check(owner, "betas[1]", betas[1], high=1.0)
        _check(owner, "eps", eps)
        self.betas, self.eps = (float(betas[0]), float(betas[1])), float(eps)

    def step_ahead(self, final: list[Parameter]) -> None:
        """Begin the step's update of the `final` parameters (their gradients final) on the
        worker of `data_parallel(2, split="kernels")` while the backward pass ends; `step()`
        finishes it, with the numbers it gives alone (deepsharp.step_ahead)."""
        self.drop_ahead()
        self._ahead = step_ahead.begin(self, final)

    def drop_ahead(self) -> None:
        """Undo a step begun and not taken (the backward pass failed): the state as it was."""
        ahead, self._ahead = getattr(self, "_ahead", None), None
        if ahead is not None:
            ahead.drop()

    def zero_grad(self) -> None:
        """Empty every gradient; once the step runs over flat buffers, also give each parameter a
        place in a new gradient buffer, where a backward rule able to (`grad_out`) writes its next
        gradient, so the step reads it there instead of gathering it. A new buffer each time: a
        gradient kept from an earlier step is never written over. A step begun and not taken
        (`step_ahead`) is undone."""
        self.drop_ahead()
        super().zero_grad()
        flat = getattr(self, "_flat_moments", None)
        if flat is not None:
            for owner, home in zip(flat.owners(self.params), flat.new_grad()):
                if owner is not None:
                    owner._grad_home = home

    def step(self) -> None:
        """Every parameter's update in one pass over flat buffers (`_flat_step`) when they share
        one float type and one step count, else parameter by parameter: the same numbers."""
        if not self.bound:
            return super().step()  # which refuses, naming what to bind
        ahead, self._ahead = getattr(self, "_ahead", None), None
        if ahead is not None:  # (the worker done with the buffers before anything changes)
            ahead = ahead if ahead.settle() else None
        if self.clip_norm is not None:
            self.clip()
        live = [(name, p) for name, p in self.params if p.grad is not None]
        if ahead is not None and step_ahead.commit(self, ahead, live):
            pass  # (begun by step_ahead, finished there)
        elif not self._flat_step(live):
            for name, p in live:
                self.update(p._data, p.grad, self.state.setdefault(name, {}))
        for _, p in live:
            p._version_counter().version += 1  # (p._version += 1 without the property)

    def _flat_step(self, live: list[tuple[str, Parameter]]) -> bool:
        """`update`'s arithmetic, operation for operation (so bit-identical), over the moments of
        every parameter held in one flat buffer each (the state's arrays are views of them): one
        numpy call per operation instead of one per operation and parameter."""
        if len(live) < 2 or len({p._data.dtype for _, p in live}) != 1:  # (not the property)
            return False
        if type(self).update is not Adam.update:  # (a subclass's own update: run it)
            return False
        dt = live[0][1]._data.dtype
        names = tuple([name for name, _ in live])
        flat = _FlatMoments.of(self, names, [p._data for _, p in live])
        if flat is None:
            return False
        g = flat.gradients([p.grad for _, p in live])
        if self.decoupled:
            for _, p in live:
                p._data *= np.asarray(1 - self.lr * self.weight_decay, dt)
        elif self.weight_decay:
            g = g + np.asarray(self.weight_decay, dt) * flat.gather([p._data for _, p in live])
        for name in names:  # (the count's value in place: `+= 1` on a 0-d array costs 10x more)
            self.state[name]["step"][()] += 1
        t = float(self.state[names[0]]["step"])
        m, v, work = flat.exp_avg, flat.exp_avg_sq, flat.work
        if self._apply_compiled(g, m, v, t, live, flat.sizes):
            return True
        # elementwise: inside data_parallel(2), two halves on two threads at once
        in_halves(lambda s: self.update_places(g[s], m[s], v[s], work[s], t), len(g))
        for (_, p), part in zip(live, flat.work_views):
            p._data -= part
        return True

    def _apply_compiled(self, g: np.ndarray, m: np.ndarray, v: np.ndarray, t: float,
                        live: list[tuple[str, Parameter]], sizes: list[int]) -> bool:
        """Inside `compiled()`, the update of each parameter in one pass that also subtracts it
        from the parameter's values (`update_places` and `p -= work`, the same operations, one
        pass over the buffers fewer); False, with nothing done, where that cannot run: outside
        `compiled()`, where `in_halves` would split the update on two threads, or where a
        parameter's values are not one contiguous, writeable block (the flat update then runs)."""
        fused = kernel("adam_apply")
        if fused is None or splits_in_halves() or not all(
                [p._data.flags.c_contiguous and p._data.flags.writeable for _, p in live]):
            return False
        constants = self._constants(g.dtype, t)
        start = 0
        for (_, p), size in zip(live, sizes):
            fused(g[start:start + size], m[start:start + size], v[start:start + size],
                  p._data.reshape(-1), *constants)
            start += size
        return True

    def _constants(self, dt: np.dtype, t: float) -> tuple:
        """The compiled kernels' float constants at step t, of the parameters' float type."""
        b1, b2 = self.betas
        return tuple(dt.type(c) for c in (1 - b1, 1 - b2, b2, math.sqrt(1 - b2 ** t), self.eps,
                                          self.lr / (1 - b1 ** t)))

    def update_places(self, g: np.ndarray, m: np.ndarray, v: np.ndarray, work: np.ndarray,
                      t: float) -> None:
        """Adam's update of places of the flat buffers at step t (`update`'s operations on
        them): the moments m and v in place, the update into `work`; one compiled pass inside
        `compiled()` (deepsharp.compiled: the same numbers), else numpy's passes."""
        compiled = kernel("adam_flat")
        if compiled is None:
            for part in range(0, len(g), _ADAM_BLOCK):  # (each block's passes in the cache)
                s = slice(part, part + _ADAM_BLOCK)
                _adam_numpy(g[s], m[s], v[s], work[s], *self.betas, t, self.lr, self.eps)
            return
        compiled(g, m, v, work, *self._constants(g.dtype, t))

    def update(self, p, g, state):
        dt = p.dtype
        if self.decoupled:
            p *= np.asarray(1 - self.lr * self.weight_decay, dt)
        else:
            g = self._decayed(p, g)
        if "exp_avg" not in state:
            state["step"] = np.zeros((), np.float64)
            state["exp_avg"] = np.zeros_like(p)
            state["exp_avg_sq"] = np.zeros_like(p)
        state["step"] += 1
        t = float(state["step"])
        b1, b2 = self.betas
        m, v = state["exp_avg"], state["exp_avg_sq"]
        m += np.asarray(1 - b1, dt) * (g - m)
        v *= np.asarray(b2, dt)
        v += np.asarray(1 - b2, dt) * g * g
        step_size = self.lr / (1 - b1 ** t)
        denom = np.sqrt(v) / np.asarray(math.sqrt(1 - b2 ** t), dt) + np.asarray(self.eps, dt)
        p -= np.asarray(step_size, dt) * (m / denom)

    def config(self):
        return {**super().config(), "betas": list(self.betas), "eps": self.eps}


class AdamW(Adam):
    decoupled = True

    def __init__(self, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 1e-2, clip_norm: float | None = None,
                 schedule: Schedule | None = None, parameters: Any = None) -> None:
        super().__init__(lr, betas, eps, weight_decay, clip_norm, schedule, parameters)


class RMSprop(Optimizer):
    def __init__(self, lr: float = 1e-2, alpha: float = 0.99, eps: float = 1e-8,
                 weight_decay: float = 0.0, momentum: float = 0.0, centered: bool = False,
                 clip_norm: float | None = None, schedule: Schedule | None = None,
                 parameters: Any = None) -> None:
        super().__init__(lr, weight_decay, clip_norm, schedule, parameters)
        _check("RMSprop", "alpha", alpha)
        _check("RMSprop", "eps", eps)
        _check("RMSprop", "momentum", momentum)
        centered = flag("RMSprop", "centered", centered)
        self.alpha, self.eps, self.momentum, self.centered = float(alpha), float(eps), float(momentum), centered

    def update(self, p, g, state):
        dt = p.dtype
        g = self._decayed(p, g)
        if "square_avg" not in state:
            state["square_avg"] = np.zeros_like(p)
            if self.centered:
                state["grad_avg"] = np.zeros_like(p)
            if self.momentum:
                state["momentum_buffer"] = np.zeros_like(p)
        sq = state["square_avg"]
        sq *= np.asarray(self.alpha, dt)
        sq += np.asarray(1 - self.alpha, dt) * g * g
        if self.centered:
            ga = state["grad_avg"]
            ga += np.asarray(1 - self.alpha, dt) * (g - ga)
            avg = np.sqrt(sq - ga * ga) + np.asarray(self.eps, dt)
        else:
            avg = np.sqrt(sq) + np.asarray(self.eps, dt)
        if self.momentum:
            buf = state["momentum_buffer"]
            buf *= np.asarray(self.momentum, dt)
            buf += g / avg
            p -= np.asarray(self.lr, dt) * buf
        else:
            p -= np.asarray(self.lr, dt) * (g / avg)

    def config(self):
        return {**super().config(), "alpha": self.alpha, "eps": self.eps,
                "momentum": self.momentum, "centered": self.centered}


_ADAM_BLOCK = 65536  # values of each flat buffer a block of Adam's numpy passes takes


def _adam_numpy(g, m, v, work, b1, b2, t, lr, eps) -> None:
    """Adam's moments and update over flat buffers, the update left in `work`."""
    dt = g.dtype
    np.subtract(g, m, out=work)                      # m += (1 - b1) (g - m)
    work *= np.asarray(1 - b1, dt)
    m += work
    v *= np.asarray(b2, dt)                          # v = b2 v + (1 - b2) g g
    np.multiply(np.asarray(1 - b2, dt), g, out=work)
    work *= g
    v += work
    step_size = lr / (1 - b1 ** t)
    np.sqrt(v, out=work)                             # sqrt(v) / sqrt(1 - b2^t) + eps
    work /= np.asarray(math.sqrt(1 - b2 ** t), dt)
    work += np.asarray(eps, dt)
    np.divide(m, work, out=work)                     # step_size (m / denom)
    work *= np.asarray(step_size, dt)


class _FlatMoments:
    """Adam's two moments of a list of parameters in one flat buffer each, the optimizer's state
    holding views of them (a checkpoint still stores them per parameter), with work buffers."""

    def __init__(self, names: tuple[str, ...], shapes: list[tuple[int, ...]], dtype) -> None:
        self.names, self.shapes = names, shapes
        self.sizes = [int(np.prod(shape)) for shape in shapes]
        total = sum(self.sizes)
        self.exp_avg = np.zeros(total, dtype)
        self.exp_avg_sq = np.zeros(total, dtype)
        self.grad = np.empty(total, dtype)
        self.grad_views = self.views(self.grad)
        self.work = np.empty(total, dtype)
        self.exp_avg_views = self.views(self.exp_avg)
        self.exp_avg_sq_views = self.views(self.exp_avg_sq)
        self.work_views = self.views(self.work)

    @classmethod
    def of(cls, optimizer: Optimizer, names: tuple[str, ...], params: list[np.ndarray]
           ) -> "_FlatMoments | None":
        """The optimizer's flat moments for these parameters, made (from the state as it is) when
        missing or when the state was replaced (a checkpoint loaded); None when the parameters'
        step counts differ (each then needs its own bias correction)."""
        flat = getattr(optimizer, "_flat_moments", None)
        states = [optimizer.state.get(name, {}) for name in names]
        if flat is not None and flat.names == names and all(
                [s.get("exp_avg") is view for s, view in zip(states, flat.exp_avg_views)]):
            return flat
        steps = {float(s["step"]) if "exp_avg" in s else 0.0 for s in states}
        if len(steps) != 1:
            return None
        flat = cls(names, [p.shape for p in params], params[0].dtype)
        for name, state, m, v in zip(names, states, flat.exp_avg_views, flat.exp_avg_sq_views):
            if "exp_avg" in state:
                m[...] = state["exp_avg"]
                v[...] = state["exp_avg_sq"]
            else:
                state["step"] = np.zeros((), np.float64)
            state["exp_avg"], state["exp_avg_sq"] = m, v
            optimizer.state[name] = state
        optimizer._flat_moments = flat
        return flat

    def owners(self, params: list[tuple[str, Parameter]]) -> list[Parameter | None]:
        """The parameter of `params` (the optimizer's bound pairs) at each place, None where no
        parameter of that name is bound; worked out once per list (a step asks each time)."""
        pairs = tuple(params)
        held = getattr(self, "_owners", None)
        # (the same pairs, or pairs of the same names and the very parameters: `==` on two
        # parameters would compare their values, elementwise)
        if held is None or len(held[0]) != len(pairs) or not all(
                [a is b or (a[0] == b[0] and a[1] is b[1]) for a, b in zip(held[0], pairs)]):
            by_name = dict(pairs)
            held = self._owners = (pairs, [by_name.get(name) for name in self.names])
        return held[1]

    def views(self, buffer: np.ndarray) -> list[np.ndarray]:
        parts, start = [], 0
        for size, shape in zip(self.sizes, self.shapes):
            parts.append(buffer[start:start + size].reshape(shape))
            start += size
        return parts

    def gather(self, arrays: list[np.ndarray]) -> np.ndarray:
        return np.concatenate([a.reshape(-1) for a in arrays])

    def new_grad(self) -> list[np.ndarray]:
        """A new gradient buffer; its views, one per parameter."""
        self.grad = np.empty_like(self.grad)
        self.grad_views = self.views(self.grad)
        return self.grad_views

    def gradients(self, grads: list[np.ndarray]) -> np.ndarray:
        """The gradients in the flat gradient buffer: those written into their place there
        (`new_grad`) are in it already, the others are copied in."""
        placed = [grad is view for grad, view in zip(grads, self.grad_views)]
        if not any(placed):
            return np.concatenate([g.reshape(-1) for g in grads], out=self.grad)
        for grad, view, done in zip(grads, self.grad_views, placed):
            if not done:
                view[...] = grad
        return self.grad
