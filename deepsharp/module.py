"""Module: a network written as code, and Parameter, a tensor a module trains.

Subclass `Module`, assign parameters and sub-modules as attributes in `__init__`, and write
`forward` over tensors. Parameters are named by their attribute path (`encoder.0.weight`), the
same PyTorch-style path `state_dict()` uses, the optimizer keys its state by, and the exporter
names initializers by.

    class TwoLayer(Module):
        def __init__(self, random):
            super().__init__()
            self.hidden = Sequential().dense(16).relu().lower(Shape(14), random)
            self.scale = Parameter(np.ones(16, np.float32))
            self.out = Sequential().dense(1).lower(Shape(16), random)

        def forward(self, x):
            return self.out(self.hidden(x) * self.scale)
"""

from __future__ import annotations

from typing import Any, Iterator

import numpy as np

from deepsharp.errors import SpecError, StateError
from deepsharp.tensors import Tensor, no_grad
from deepsharp.tensors.tensor import _as_array


def as_numpy(result: Any) -> Any:
    """A tensor as its array, a tuple, list or dict of them as the same of arrays (nested as they
    are); anything else as it is."""
    if isinstance(result, Tensor):
        return result._data
    if isinstance(result, dict):
        return {k: as_numpy(v) for k, v in result.items()}
    if isinstance(result, (tuple, list)):
        items = [as_numpy(v) for v in result]
        return type(result)(*items) if hasattr(result, "_fields") else type(result)(items)
    return result


class Parameter(Tensor):
    """A tensor a module trains. `frozen=True` keeps it out of training (its gradient is never
    taken), as a low-rank adapter freezes the kernel beside it."""

    _grad_home = None  # where backward may write the next gradient (Adam.zero_grad gives one)

    def __init__(self, data: Any, frozen: bool = False) -> None:
        super().__init__(data, requires_grad=not frozen)

    @property
    def frozen(self) -> bool:
        return not self.requires_grad

    def __repr__(self) -> str:
        return f"Parameter(shape={self.shape}, dtype={self.dtype}{', frozen' if self.frozen else ''})"


class Module:
    """The base of everything that runs forward over tensors and holds parameters."""

    def __init__(self) -> None:
        object.__setattr__(self, "_parameters", {})
        object.__setattr__(self, "_buffers", {})
        object.__setattr__(self, "_modules", {})
        object.__setattr__(self, "training", True)

    # -- registration -------------------------------------------------------------------------
    def __setattr__(self, name: str, value: Any) -> None:
        if "_parameters" not in self.__dict__:
            raise AttributeError(f"{type(self).__name__}: call super().__init__() before "
                                 f"assigning {name!r}")
        for table in (self._parameters, self._buffers, self._modules):
            table.pop(name, None)
        if isinstance(value, Parameter):
            self._parameters[name] = value
        elif isinstance(value, Module):
            self._modules[name] = value
        object.__setattr__(self, name, value)

    def __delattr__(self, name: str) -> None:
        for table in (self._parameters, self._buffers, self._modules):
            table.pop(name, None)
        object.__delattr__(self, name)

    def register_buffer(self, name: str, value: Any) -> Tensor:
        """Keep `value` as state that is saved but not trained (running statistics)."""
        tensor = value if isinstance(value, Tensor) else Tensor(value)
        object.__setattr__(self, name, tensor)
        self._buffers[name] = tensor
        return tensor

    def add_module(self, name: str, module: "Module") -> None:
        self._modules[name] = module
        object.__setattr__(self, name, module)

    # -- walking the tree ---------------------------------------------------------------------
    def named_modules(self, prefix: str = "") -> Iterator[tuple[str, "Module"]]:
        yield prefix, self
        for name, child in self._modules.items():
            yield from child.named_modules(f"{prefix}.{name}" if prefix else name)

    def named_parameters(self, prefix: str = "") -> Iterator[tuple[str, Parameter]]:
        """Every parameter once, by its first path (shared parameters are not repeated)."""
        seen: set[int] = set()
        for path, module in self.named_modules(prefix):
            for name, p in module._parameters.items():
                if id(p) not in seen:
                    seen.add(id(p))
                    yield (f"{path}.{name}" if path else name), p

    def parameters(self) -> list[Parameter]:
        return [p for _, p in self.named_parameters()]

    def trainable_parameters(self) -> list[tuple[str, Parameter]]:
        return [(n, p) for n, p in self.named_parameters() if p.requires_grad]

    def named_buffers(self, prefix: str = "") -> Iterator[tuple[str, Tensor]]:
        for path, module in self.named_modules(prefix):
            for name, b in module._buffers.items():
                yield (f"{path}.{name}" if path else name), b

    def parameter_count(self) -> int:
        return int(sum(p.size for p in self.parameters()))

    # -- state ----------------------------------------------------------------------------------
    def _slots(self) -> dict[str, Tensor]:
        slots: dict[str, Tensor] = dict(self.named_parameters())
        slots.update(self.named_buffers())
        return slots

    def state_dict(self) -> dict[str, np.ndarray]:
        """Copies of every parameter and buffer, by path."""
        return {path: t._data.copy() for path, t in self._slots().items()}

    def load_state_dict(self, state: dict[str, Any], strict: bool = True) -> None:
        """Copy `state` into the slots of the same path. With `strict`, every slot must be given
        and nothing else; shapes must always match. All faults are reported at once, and nothing
        is written unless everything fits."""
        slots = self._slots()
        faults = []
        if strict:
            missing = sorted(set(slots) - set(state))
            unexpected = sorted(set(state) - set(slots))
            if missing:
                faults.append(f"missing slots: {', '.join(missing)}")
            if unexpected:
                faults.append(f"unexpected slots: {', '.join(unexpected)}")
        arrays = {}
        for path, value in state.items():
            if path not in slots:
                continue
            array = _as_array(value, dtype=slots[path].dtype)
            if array.shape != slots[path].shape:
                faults.append(f"slot {path}: expected shape {slots[path].shape}, received "
                              f"{array.shape}")
            arrays[path] = array
        if faults:
            raise StateError(f"{type(self).__name__}.load_state_dict: " + "; ".join(faults))
        with no_grad():  # parameters are leaves that require gradients: written as optimizers do
            for path, array in arrays.items():
                slots[path].copy_(array)

    # -- modes and calls ------------------------------------------------------------------------
    def train(self, mode: bool = True) -> "Module":
        for _, module in self.named_modules():
            object.__setattr__(module, "training", mode)
        return self

    def eval(self) -> "Module":
        return self.train(False)

    def forward(self, *inputs: Tensor) -> Tensor:
        raise TypeError(f"{type(self).__name__} does not define forward()")

    def __call__(self, *inputs: Any, **named: Any) -> Any:
        """On tensors: `forward`. On numpy batches: an evaluation pass returning numpy, in
        forward's structure (see `evaluate`)."""
        if any(isinstance(i, Tensor) for i in (*inputs, *named.values())):
            return self.forward(*inputs, **named)
        return self.evaluate(*inputs, **named)

    def evaluate(self, *batches: Any, **named: Any) -> Any:
        """The evaluation pass (no dropout, running statistics) on numpy batches, one per input
        of `forward` (by position or by name). What forward returns comes back as numpy in the
        same structure: an array for a tensor, a tuple (list) or dict of arrays for a tuple
        (list) or dict of tensors, nested as forward nests them.

        >>> scores, total = model.evaluate(a, b)        # forward(a, b) -> (scores, total)
        """
        was_training = self.training
        self.eval()
        try:
            with no_grad():
                out = self.forward(*(Tensor(b) for b in batches),
                                   **{k: Tensor(v) for k, v in named.items()})
        finally:
            self.train(was_training)
        return as_numpy(out)

    # -- tracing (see deepsharp.tracing) ---------------------------------------------------------
    def trace(self, example_inputs: Any, axis_names: Any = None, *,
              input_names: Any = None, output_names: Any = None) -> Any:
        """Record the evaluation pass on `example_inputs` as a graph (a `TracedModel`), every
        parameter and buffer named by its state_dict path.

        `example_inputs`: one array, a sequence of them, or a mapping name -> array (inputs are
        named `input`, `input_0`, ... unless named). `axis_names`: `{0: "batch"}` for every input,
        or one mapping per input (a list, or keyed by input name). `forward`'s result may be a
        tensor (output `output`), a sequence (`output_0`, ...) or a mapping name -> tensor.

        >>> traced = model.trace(x, axis_names={0: "batch"})
        >>> traced.save_onnx("model.onnx")
        """
        from deepsharp.tracing import trace_module

        return trace_module(self, example_inputs, axis_names, input_names=input_names,
                            output_names=output_names)

    # -- training (see deepsharp.training) --------------------------------------------------------
    def logits(self, x: Tensor, loss: Any = None) -> Tensor:
        """What the loss is computed on. A stack lifts its last activation into the loss; a
        module written as code returns its forward."""
        return self.forward(x)

    def predict(self, x: Any, loss: Any = None, batch_size: int | None = None) -> Any:
        """The evaluation pass, then the loss's output activation: what an exported graph answers.
        `loss` may be one per output (a dict or a sequence); several outputs come back in
        forward's structure (see `deepsharp.training.predict`)."""
        from deepsharp.training import predict

        if loss is None:
            raise SpecError("predict: needs the loss the module was trained with (its output "
                            "activation makes the answers): predict(x, loss)")
        return predict(self, x, loss, batch_size=batch_size)

    def fit(self, x: Any = None, y: Any = None, **options: Any):
        """Train on (x, y); see `deepsharp.training.fit` for the options (an option fit does not
        know is refused by name)."""
        import inspect

        from deepsharp.training import fit

        parameters = inspect.signature(fit).parameters
        known = [n for n in parameters if n not in ("module", "x", "y")]
        unknown = sorted(set(options) - set(known))
        if unknown:
            raise SpecError(f"fit: no option {', '.join(map(repr, unknown))}; the options are "
                            f"{', '.join(known)}")
        missing = [n for n in known if parameters[n].default is inspect.Parameter.empty
                   and n not in options]
        if missing:
            raise SpecError(f"fit: needs {', '.join(missing)} (fit(x, y, loss=..., "
                            f"optimizer=...))")
        return fit(self, x, y, **options)

    def save_weights(self, path: Any) -> None:
        """Write every slot to a safetensors file, atomically."""
        from deepsharp.io import save_weights

        save_weights(self, path)

    def load_weights(self, path: Any, strict: bool = True) -> None:
        from deepsharp.io import load_weights

        load_weights(self, path, strict=strict)
