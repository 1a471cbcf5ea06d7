"""Tensors with reverse-mode autograd over a single table of primitives."""

from deepsharp.tensors import ops  # noqa: F401  (registers the primitives)
from deepsharp.tensors.modes import enable_grad, float64, grad_enabled, no_grad
from deepsharp.tensors.primitives import PRIMITIVES, needs_input_grad, primitive, unbroadcast
from deepsharp.tensors.tensor import Record, Tensor, apply, as_tensor
# Tensor's methods call these as api.<module>.<function>
from deepsharp.tensors.api import (  # noqa: F401
    arithmetic, build, einsum, elementwise, join, reduce, scatter, select, shape,
)
from deepsharp.tensors import inplace  # noqa: F401,E402  (gives Tensor its in-place twins)

__all__ = [
    "Tensor", "Record", "apply", "as_tensor", "no_grad", "enable_grad", "float64",
    "grad_enabled", "primitive", "PRIMITIVES", "unbroadcast", "needs_input_grad",
]
