"""Errors raised by deepsharp_export_onnx: one small hierarchy, one module.

Every message names the offender, what was declared or expected, and what was received.
"""

from __future__ import annotations

from typing import NamedTuple, Sequence


class OnnxError(Exception):
    """Base of every error deepsharp_export_onnx raises on purpose."""


class _Faults(OnnxError):
    """An error carrying every fault found, one line each."""

    headline = ""

    def __init__(self, faults: Sequence[str], headline: str | None = None) -> None:
        self.faults = list(faults)
        head = headline or self.headline
        body = "\n".join(f"  - {fault}" for fault in self.faults)
        super().__init__(f"{head}:\n{body}" if self.faults else head)


class ExportRefused(_Faults):
    """The network cannot be written as ONNX; nothing was written."""

    headline = "export refused"


class ImportRefused(_Faults):
    """The ONNX graph cannot be read as a network."""

    headline = "import refused"


class ModelUnreadable(_Faults):
    """The file or bytes given to the checker or a command are not an ONNX model it may run."""

    headline = "cannot read the model"


class ModelRunError(OnnxError, RuntimeError):
    """The model could not be run: ONNX Runtime's error (and the reference evaluator's, when it
    was tried too), naming the node where one is known (`node`, e.g. "Reshape 'r1'")."""

    def __init__(self, message: str, node: str = "") -> None:
        self.node = node
        super().__init__(message)


class BoundBy(NamedTuple):
    """Where a symbolic dimension got its value: `value` (a `where`), axis `axis`, size `size`."""

    value: str
    where: str
    axis: int
    size: int


class AnnotationViolation(OnnxError):
    """A value produced by a run does not satisfy its declared shape annotation.

    The rule (ONNX shape-annotation semantics): a declared rank must equal the actual rank; a
    `dim_value` k requires the axis to be k; a `dim_param` N requires the value N was bound to
    by the first value that carried it in this run.

    Attributes:
        value: name of the offending value.
        where: which annotation it broke, e.g. "graph output" or "value_info in the body of Loop 'l'".
        axis: the offending axis, or None when the rank differs.
        declared: the declared dimension (int or symbol name), or the declared dims as a tuple
            (ints, symbol names, None for an anonymous axis) when the rank differs.
        actual: the produced size of that axis, or the produced shape when the rank differs.
        shape: the full shape the run produced for `value`.
        bound_by: for a symbol, the value and axis that bound it and to what size; else None.
        also: further violations found later in the same run (the first one is this error).
        engine: which engine produced the values ("onnxruntime", "onnxruntime+reference",
            "reference"), or "" when not recorded.

    Example:
        >>> AnnotationViolation(value="y", where="graph output", axis=0, declared="batch",
        ...     actual=4, shape=(4, 2), bound_by=BoundBy("x", "graph input", 0, 3)).args[0]
        "value 'y' (graph output), axis 0: declared 'batch', which value 'x' (graph input) bound to 3 at axis 0; the run produced 4 (shape (4, 2))"
    """

    def __init__(
        self,
        *,
        value: str,
        where: str,
        axis: int | None,
        declared: int | str | tuple,
        actual: int | tuple,
        shape: tuple[int, ...],
        bound_by: BoundBy | None = None,
        also: tuple[AnnotationViolation, ...] = (),
        engine: str = "",
    ) -> None:
        self.value, self.where, self.axis = value, where, axis
        self.declared, self.actual, self.shape = declared, actual, tuple(shape)
        self.bound_by, self.also, self.engine = bound_by, tuple(also), engine
        super().__init__(self._message())

    def describe(self) -> str:
        """One line for this violation alone (without the ones in `also`)."""
        head = f"value {self.value!r} ({self.where})"
        if self.axis is None:
            declared = "(" + ", ".join(_dim_text(d) for d in self.declared) + ")"
            return (
                f"{head}: declared rank {len(self.declared)} {declared}; "
                f"the run produced rank {len(self.shape)} (shape {self.shape})"
            )
        if self.bound_by is None:
            declared = _dim_text(self.declared)
        else:
            b = self.bound_by
            declared = (
                f"{self.declared!r}, which value {b.value!r} ({b.where}) bound to {b.size} at axis {b.axis}"
            )
        return f"{head}, axis {self.axis}: declared {declared}; the run produced {self.actual} (shape {self.shape})"

    def _message(self) -> str:
        if not self.also:
            return self.describe()
        more = "\n".join(f"  - {v.describe()}" for v in self.also)
        return f"{self.describe()}\nand {len(self.also)} more in the same run:\n{more}"


def _dim_text(dim: int | str | None) -> str:
    """5 -> '5', 'batch' -> "'batch'", None (anonymous axis) -> '?'."""
    if dim is None:
        return "?"
    return repr(dim) if isinstance(dim, str) else str(dim)
