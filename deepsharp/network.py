"""Network: the stack of steps a `Sequential` lowers to.

Steps are child modules named by their place, so slots have PyTorch-style paths (`0.weight`,
`3.branch.1.bias`). Series flow with their mask (see `Flow`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Sequence

import numpy as np

from deepsharp.errors import ShapeError
from deepsharp.layers.base import Flow, Step
from deepsharp.module import Module
from deepsharp.shape import Shape
from deepsharp.tensors import Tensor

if TYPE_CHECKING:
    from deepsharp.sequential import Sequential


class Network(Module):
    """A lowered Sequential: `network(x)` is the evaluation pass on a numpy batch,
    `network.predict(x, loss)` adds the loss's output activation, `network.fit(...)` trains."""

    def __init__(self, spec: "Sequential", input_shape: Shape, steps: Sequence[Step],
                 features: Sequence[str] | None = None) -> None:
        super().__init__()
        object.__setattr__(self, "spec", spec)
        object.__setattr__(self, "input_shape", input_shape)
        object.__setattr__(self, "features", tuple(features) if features else None)
        object.__setattr__(self, "input_checks", ())
        object.__setattr__(self, "preparation", None)  # what raw rows go through first
        object.__setattr__(self, "io_names", (None, None))  # a graph's input and output names
        for step in steps:
            self.add_module(step.place.rsplit(".", 1)[-1], step)

    @property
    def steps(self) -> list[Step]:
        return list(self._modules.values())

    @property
    def output_shape(self) -> Shape:
        steps = self.steps
        return steps[-1].output_shape if steps else self.input_shape

    @property
    def data_format(self) -> str:
        """`channels_first` when the network takes its series and images channels-first (it
        starts with `from_channels_first()`, as a network read from such a graph does), else
        `channels_last`."""
        held = self.__dict__.get("_format")  # (the spec is read whole; a batch's check asks)
        if held is None or held[0] is not self.spec:
            # (imported here, not per call: the import statement was most of a batch's check)
            from deepsharp.layers.data_format import data_format

            held = (self.spec, data_format(self.spec))
            object.__setattr__(self, "_format", held)
        return held[1]

    def with_low_rank(self, rank: int, on: Sequence[str], **options: Any) -> "Network":
        """A new network whose dense layers at places `on` are frozen with a trained low-rank
        pair beside each (LoRA); see `deepsharp.layers.low_rank.with_low_rank`."""
        from deepsharp.layers.low_rank import with_low_rank

        return with_low_rank(self, rank, on, **options)

    def with_features(self, features: Sequence[str] | None) -> "Network":
        object.__setattr__(self, "features", tuple(features) if features else None)
        return self

    def with_preparation(self, preparation: Any) -> "Network":
        """Carry the fitted preparation (`deepsharp.preparation`) the network was trained behind:
        a graph read back gives it here, and exporting writes it in front again. The network
        itself still takes prepared rows."""
        object.__setattr__(self, "preparation", preparation)
        return self

    def with_io_names(self, input_name: str | None, output_name: str | None) -> "Network":
        """The names of the graph input and output this network was read from: exporting it
        again gives them back unless told otherwise (None: the exporter's default)."""
        object.__setattr__(self, "io_names", (input_name, output_name))
        return self

    def carried_to(self, other: "Network") -> "Network":
        """`other` (a network made from this one) with what this one carries besides its stack:
        the features' names, the preparation, the graph's names and the input checks."""
        other.with_features(self.features).with_preparation(self.preparation)
        other.with_io_names(*self.io_names)
        object.__setattr__(other, "input_checks", self.input_checks)
        return other

    def with_input_check(self, check: Callable[[np.ndarray], None]) -> "Network":
        """Also hold every batch to `check` (a network read from a graph keeps the graph's input
        annotation as a precondition this way)."""
        object.__setattr__(self, "input_checks", self.input_checks + (check,))
        return self

    # -- running --------------------------------------------------------------------------------
    def check_input(self, x: Tensor) -> None:
        """The batch must have the example's rank and channels; a series' length (and an image's
        places) may differ from the example's. A network read from a graph first holds the batch
        to the graph's input annotation (`with_input_check`)."""
        self.check_batch(x._data)

    def check_batch(self, batch: Any) -> None:
        """`check_input` for anything with a shape (a memmap is held to it without being read)."""
        for check in self.input_checks:
            check(batch)
        expected = self.input_shape
        received = tuple(batch.shape[1:])
        first = next(iter(self._modules.values()), None)
        ids = first is not None and first.spec.input_dtype == "int64"  # ids: the last axis is steps
        channel = 0 if self.data_format == "channels_first" else -1
        if len(received) != expected.rank or (expected.rank and not ids
                                              and received[channel] != expected[channel]):
            raise ShapeError(f"network input: expected a batch of examples of shape {expected} "
                             f"(batch x {expected}), received an array of shape "
                             f"{tuple(batch.shape)}")

    def call(self, flow: Flow, steps: Sequence[Step] | None = None) -> Flow:
        from deepsharp.layers.fused import run_steps  # conv -> relu -> pool as one primitive

        return run_steps(self.steps if steps is None else steps, flow)

    def forward(self, x: Tensor) -> Tensor:
        self.check_input(x)
        return self.call(Flow(x)).value

    def lifted(self, loss: Any) -> bool:
        """Whether the last step is the loss's own output activation (then lifted into it)."""
        steps = self.steps
        return bool(steps) and loss is not None and loss.lifts(steps[-1].spec)

    def logits_steps(self, loss: Any) -> list[Step]:
        steps = self.steps
        return steps[:-1] if self.lifted(loss) else steps

    def logits(self, x: Tensor, loss: Any = None) -> Tensor:
        self.check_input(x)
        return self.call(Flow(x), self.logits_steps(loss)).value

    # -- describing and saving ----------------------------------------------------------------------
    def summary(self) -> str:
        """A table of steps, output shapes and parameter counts."""
        rows = [("place", "layer", "output", "parameters")]
        rows.append(("", "input", str(self.input_shape), ""))
        for step in self.steps:
            count = sum(p.size for _, p in step.named_parameters())
            rows.append((step.place, step.spec.describe(), str(step.output_shape), f"{count:,}"))
        widths = [max(len(r[i]) for r in rows) for i in range(4)]
        lines = ["  ".join(c.ljust(w) if i < 3 else c.rjust(w)
                           for i, (c, w) in enumerate(zip(row, widths))) for row in rows]
        lines.insert(1, "-" * len(lines[0]))
        trainable = sum(p.size for _, p in self.trainable_parameters())
        lines.append("-" * len(lines[0]))
        lines.append(f"parameters: {self.parameter_count():,} ({trainable:,} trainable)")
        if self.data_format != "channels_last":
            sizes = ", ".join(str(d) for d in self.input_shape)
            lines.append(f"data format: {self.data_format}: takes (batch, {sizes}) and turns it "
                         f"channels-last for its layers")
        return "\n".join(lines)

    def save(self, path: Any) -> None:
        """Write the spec (JSON) and every slot (safetensors) to one file, atomically."""
        from deepsharp.io import save

        save(self, path)

    def __repr__(self) -> str:
        return f"Network({self.spec!r}, input {self.input_shape})"
