"""The seam between tensors and the tracer.

A tracer installs itself as the thread's trace hook (`modes.installed_trace_hook`). Tensors then
tell it about every operation record made from a traced input, every read of a tensor's values,
every write into one, and `no_grad` blocks. Autograd and the tracer read the same `Record`; there is
no second recording path.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, Sequence

if TYPE_CHECKING:
    from deepsharp.tensors.tensor import Record, Tensor


class TraceHook(Protocol):
    def involves(self, tensors: Sequence["Tensor"]) -> bool:
        """Whether any of `tensors` depends on a traced input (then a record is made)."""

    def on_record(self, record: "Record", outputs: Sequence["Tensor"]) -> None:
        """A primitive ran with a traced input; `outputs` are its results."""

    def on_read(self, tensor: "Tensor", what: str) -> None:
        """User code reads `tensor`'s values (`what` names the read, e.g. "item()")."""

    def on_write(self, tensor: "Tensor", what: str) -> None:
        """User code writes into `tensor` in place (`what` names the write, e.g. "fill_()")."""

    def on_alias(self, source: "Tensor", result: "Tensor", what: str) -> None:
        """`result` shares `source`'s values without an operation (detach, clone)."""

    def on_no_grad(self) -> None:
        """`no_grad()` was entered while tracing."""
