"""The errors deepsharp raises: a small hierarchy, one module.

Every message names the offender (the verb, the layer's place and kind, the argument), what was
received, and what would be accepted.
"""

from __future__ import annotations


class DeepsharpError(Exception):
    """Base of every error the library raises on purpose."""


class SpecError(DeepsharpError, ValueError):
    """A verb was given an argument it cannot take ("dense: units must be ..., received 0")."""


class ShapeError(DeepsharpError, ValueError):
    """A layer cannot take the shape reaching it, or a batch does not have the declared shape."""


class TargetError(DeepsharpError, ValueError):
    """The answers given to `fit` do not suit the loss."""


class TrainingError(DeepsharpError, RuntimeError):
    """Training cannot go on (a non-finite loss names its epoch and batch)."""


class StateError(DeepsharpError, KeyError):
    """A state dict or saved file does not match the network slot by slot."""

    def __str__(self) -> str:  # KeyError quotes its message; we want it plain
        return str(self.args[0]) if self.args else ""


class OpError(DeepsharpError, RuntimeError):
    """A primitive is missing, or has no backward rule."""
