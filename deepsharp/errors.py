"""The errors deepsharp raises: a small hierarchy, one module.

Every message names the offender (the verb, the layer's place and kind, the argument), what was
received, and what would be accepted.
"""

from __future__ import annotations

from enum import Enum


class DeepsharpError(Exception):
    """Base of every error the library raises on purpose."""


class SpecError(DeepsharpError, ValueError):
    """A verb was given an argument it cannot take ("dense: units must be ..., received 0")."""


class ShapeError(DeepsharpError, ValueError):
    """A layer cannot take the shape reaching it, or a batch does not have the declared shape."""


class MaskRefused(ShapeError):
    """A layer cannot honour the mask of the series reaching it (the network's design, not the
    batch's shape, is what to change)."""


class TargetError(DeepsharpError, ValueError):
    """The answers given to `fit` do not suit the loss."""


class PreparationError(DeepsharpError, ValueError):
    """A preparation step cannot be made, fitted or applied as asked ("Standardizer: expects a
    block of shape (rows, 30), received shape (5, 29)")."""


class TrainingError(DeepsharpError, RuntimeError):
    """Training cannot go on (a non-finite loss names its epoch and batch)."""


class DataError(DeepsharpError, ValueError):
    """The inputs given to `fit` or `predict` are unusable (NaN where numbers must be finite)."""


class MissingExtra(DeepsharpError, ImportError):
    """A feature needs an optional extra that is not installed (`pip install "deepsharp[plot]"`)."""


class StateError(DeepsharpError, KeyError):
    """A state dict or saved file does not match the network slot by slot."""

    def __str__(self) -> str:  # KeyError quotes its message; we want it plain
        return str(self.args[0]) if self.args else ""


class SaveError(DeepsharpError, OSError):
    """A file could not be written; the message names the target (never a temporary file), and
    the old file, if any, is whole."""


class OpError(DeepsharpError, RuntimeError):
    """A primitive is missing, or has no backward rule."""


class TraceErrorKind(str, Enum):
    """Why a trace was refused (see docs/tracing.md)."""

    DATA_DEPENDENT = "data dependent"            # user code read a traced tensor's values
    IN_PLACE_MUTATION = "in-place mutation"      # a write into a traced tensor or a captured constant
    NO_GRAD_IN_TRACE = "no_grad in trace"        # results made inside would be frozen as constants
    SYMBOLIC_SHAPE = "symbolic shape"            # a symbolic axis reaches what cannot express it
    INVALID_USAGE = "invalid usage"              # the tracer itself was misused
    UNSUPPORTED_OPERATION = "unsupported operation"  # an operation with no inference-graph form


class TraceException(DeepsharpError, RuntimeError):
    """A trace was refused at the offending call (or at `finish`); `kind` says why and the message
    names the read, write or operation."""

    def __init__(self, kind: TraceErrorKind, message: str) -> None:
        self.kind = kind
        super().__init__(f"{kind.name}: {message}")
