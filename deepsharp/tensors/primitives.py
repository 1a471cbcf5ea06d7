"""The table of primitive operations: one forward and one backward rule each.

A primitive is registered by decorating a namespace class holding two functions:

    @primitive("mul")
    class Mul:
        def forward(a, b):                 # numpy arrays in, (result, saved) out
            return a * b, None
        def backward(grad, saved, a, b):   # gradient of the result in, one per input out
            return unbroadcast(grad * b, a.shape), unbroadcast(grad * a, b.shape)

Attributes (integers, floats and tuples of them) are keyword arguments of both functions and are
kept on the operation's `Record`, where autograd and the tracer read them. A primitive with several
results sets `outputs=n`; its forward returns a tuple and its backward receives a tuple of
gradients (zeros for results nothing used). A primitive whose results are constant in its inputs
(comparisons, argmax, zeros_like) sets `differentiable=False` and needs no backward rule: its
results never require gradients, as in PyTorch. A primitive whose backward rule returns gradients
that are new arrays nothing else holds (not its incoming gradient, an input, or what it saved)
sets `fresh=True`: a leaf then keeps such a gradient as its `.grad` without a copy.
"""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from deepsharp.errors import OpError


@dataclass(frozen=True)
class Primitive:
    name: str
    forward: Callable[..., tuple[Any, Any]]
    backward: Callable[..., tuple[Any, ...]] | None
    outputs: int = 1
    differentiable: bool = True
    fresh: bool = False  # its backward's gradients are new arrays nothing else holds


PRIMITIVES: dict[str, Primitive] = {}


def primitive(name: str, *, outputs: int = 1, differentiable: bool = True,
              fresh: bool = False) -> Callable[[type], type]:
    """Register the namespace class's `forward` and `backward` under `name`."""

    def register(namespace: type) -> type:
        if name in PRIMITIVES:
            raise OpError(f"primitive {name!r} is registered twice")
        PRIMITIVES[name] = Primitive(
            name, namespace.forward, getattr(namespace, "backward", None), outputs, differentiable,
            fresh)
        return namespace

    return register


def lookup(name: str) -> Primitive:
    try:
        return PRIMITIVES[name]
    except KeyError:
        known = ", ".join(sorted(PRIMITIVES))
        raise OpError(f"no primitive named {name!r}; registered: {known}") from None


_needs_input_grad: ContextVar[tuple[bool, ...] | None] = ContextVar(
    "deepsharp_needs_input_grad", default=None)


def needs_input_grad(index: int) -> bool:
    """Inside a backward rule: whether input `index` needs its gradient (PyTorch's
    `ctx.needs_input_grad`). A rule may skip an expensive gradient nobody needs (a network's first
    convolution has no use for its input's); it then returns None in that place. Outside autograd
    (a direct call), every gradient is needed."""
    needs = _needs_input_grad.get()
    return needs is None or needs[index]



_grad_out: ContextVar[tuple[np.ndarray | None, ...] | None] = ContextVar(
    "deepsharp_grad_out", default=None)


def grad_out(index: int) -> np.ndarray | None:
    """Inside a backward rule: an array to write input `index`'s gradient into (`out=`), or None
    (make a new one). Autograd offers a parameter's place in its optimizer's flat gradient buffer
    (`Adam.zero_grad`), so the optimizer reads the gradient there without gathering it; only a
    `fresh` rule may use it, and only for a gradient it makes whole."""
    outs = _grad_out.get()
    return None if outs is None else outs[index]

def unbroadcast(grad: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """Sum `grad` down to `shape`, undoing numpy broadcasting."""
    if grad.shape == tuple(shape):
        return grad
    extra = grad.ndim - len(shape)
    if extra:
        grad = grad.sum(axis=tuple(range(extra)))
    axes = tuple(i for i, size in enumerate(shape) if size == 1 and grad.shape[i] != 1)
    if axes:
        grad = grad.sum(axis=axes, keepdims=True)
    return grad.reshape(shape)
