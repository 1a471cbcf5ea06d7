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
        """A primitive ran with a traced input, or with no tensor input at all (arange: its size
        may be a symbolic one); `outputs` are its results."""

    def on_read(self, tensor: "Tensor", what: str) -> None:
        """User code reads `tensor`'s values (`what` names the read, e.g. "item()")."""

    def on_write(self, tensor: "Tensor", what: str) -> None:
        """A write into `tensor` that nothing records (`what` names it, e.g. "fill_()"), or one
        the tensors refuse (`what` says why). A recorded write arrives as records instead."""

    def on_alias(self, source: "Tensor", result: "Tensor", what: str) -> None:
        """`result` stands for `source`'s values without an operation (detach, clone; the value
        before an in-place write, and the written tensor taking the write's result)."""

    def shape_of(self, tensor: "Tensor") -> tuple[int, ...]:
        """`tensor.shape`: a SymInt for each symbolic axis of a traced tensor."""

    def on_sizes(self, op: str, attrs: dict) -> None:
        """`op` is about to run with sizes read from symbolic axes (SymInts) among its `attrs`."""

    def active(self) -> bool:
        """Whether the trace records now (a SymInt it made stands for a symbolic size)."""

    def on_no_grad(self) -> None:
        """`no_grad()` was entered while tracing."""
