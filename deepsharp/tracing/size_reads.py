"""The tracer's side of sizes read in Python (`x.shape[1]`): what `Tensor.shape` gives while a
trace records, and the refusals of what would fix a size at the traced one (see
deepsharp/tensors/symint.py and docs/tracing.md)."""

from __future__ import annotations

import os
import sysconfig
import traceback
from typing import Any

from deepsharp.errors import TraceErrorKind, TraceException
from deepsharp.tensors import modes
from deepsharp.tensors.symint import SymInt, live
from deepsharp.tensors.tensor import Tensor
from deepsharp.tracing.sizes import TAKES_SIZES, Poly
from deepsharp.tracing.symbols import Sym

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_LIBRARY = tuple(os.path.join(_ROOT, p) + os.sep for p in ("deepsharp", "deepsharp_export_onnx"))
_OTHERS = tuple({os.path.abspath(sysconfig.get_paths()[k]) + os.sep
                 for k in ("stdlib", "platstdlib", "purelib", "platlib")})


def user_line(before: str = " (at", after: str = ")") -> str:
    """` (at model.py:12)`: the innermost caller outside deepsharp, numpy and the standard
    library (else outside deepsharp), for messages."""
    frames = [f for f in reversed(traceback.extract_stack())
              if not os.path.abspath(f.filename).startswith(_LIBRARY)]
    for frame in [f for f in frames if not os.path.abspath(f.filename).startswith(_OTHERS)] \
            or frames:
        return f"{before} {os.path.basename(frame.filename)}:{frame.lineno}{after}"
    return ""


class SizeReads:
    """Mixed into `Tracer`: sizes of traced tensors as SymInts, and their refusals."""

    _state: str
    _values: Any
    _graph: Any
    _shapes: dict[int, tuple[int, ...]]
    _refuse: Any  # Tracer._refuse: end the trace, return the error

    def active(self) -> bool:
        """Whether this tracer records on the calling thread now (a SymInt it made is live)."""
        return self._state == "recording" and modes.trace_hook() is self

    def shape_of(self, tensor: Tensor) -> tuple[int, ...]:
        """`tensor.shape` while this trace records: a SymInt for each symbolic axis of a traced
        tensor (its value the example's size), plain numbers elsewhere."""
        vid = self._values.get(tensor)
        if vid is None:
            return tensor._data.shape
        shape = self._shapes.get(vid)
        if shape is None:
            dims = self._graph.values[vid].dims
            shape = tuple(SymInt(d.example, Poly.of(d), self) if isinstance(d, Sym) else int(d)
                          for d in dims)
            self._shapes[vid] = shape
        return shape

    def fixed_size(self, size: SymInt, what: str, why: str | None) -> TraceException:
        """The refusal of `what`, which would fix `size` at its traced value; ends the trace."""
        value = int.__int__(size)
        return self._refuse(TraceErrorKind.SYMBOLIC_SHAPE, (
            f"{what}{user_line()} fixes {size.describe()}, a size read from a symbolic axis, at "
            f"{value}: the graph would use {value} at every size; "
            + (why or "pass the size itself to the operation (x[:, :n - 1], x.reshape(b, t, -1), "
                      "arange(n), zeros(b, 5), x / n), which the graph computes at run time")))

    def on_sizes(self, op: str, attrs: dict[str, Any]) -> None:
        """Before `op` runs with sizes read from symbolic axes among its arguments."""
        self._sizes_taken(op, attrs, f"{op} (operation {self._next_call()})")

    def _sizes_taken(self, op: str, attrs: dict[str, Any], label: str) -> None:
        """Refuse a size (SymInt) in an argument the primitive keeps as a number."""
        taking = TAKES_SIZES.get(op, ())
        for key, value in attrs.items():
            values = value if isinstance(value, (tuple, list)) else (value,)
            found = next((v for v in values if live(v)), None)
            if found is not None and key not in taking:
                raise self._refuse(TraceErrorKind.SYMBOLIC_SHAPE, (
                    f"{label}: its argument {key}={tuple(values) if len(values) > 1 else found!r}"
                    f"{user_line()} holds {found.describe()}, a size read from a symbolic axis, "
                    f"which {op} keeps as the number {int.__int__(found)} at every size; "
                    f"sizes are taken by slices, narrow, select, reshape/view, expand, arange, "
                    f"zeros/ones/full and arithmetic with tensors"))

