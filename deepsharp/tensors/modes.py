"""Thread-local modes: gradient recording, the default float type, and the active trace hook.

They are context variables, so each thread (and each asyncio task) has its own: a tracer on one
thread never sees another thread's operations.
"""

from __future__ import annotations

import contextlib
from contextvars import ContextVar
from typing import TYPE_CHECKING, Iterator

import numpy as np

if TYPE_CHECKING:
    from deepsharp.tensors.hooks import TraceHook

_grad_enabled: ContextVar[bool] = ContextVar("deepsharp_grad_enabled", default=True)
_default_float: ContextVar[type] = ContextVar("deepsharp_default_float", default=np.float32)
_trace_hook: ContextVar["TraceHook | None"] = ContextVar("deepsharp_trace_hook", default=None)
_fusing: ContextVar[bool] = ContextVar("deepsharp_fusing", default=True)


def grad_enabled() -> bool:
    return _grad_enabled.get()


def default_float() -> type:
    """The float type new tensors take: float32, or float64 inside `float64()`."""
    return _default_float.get()


def trace_hook() -> "TraceHook | None":
    return _trace_hook.get()


def may_fuse() -> bool:
    """Whether a layer may run a fused primitive (conv-relu-pool, matmul_add, self-attention)
    in place of the primitives it stands for: not while a trace records (the graph is written
    from the unfused primitives), nor inside `unfused()`."""
    return _trace_hook.get() is None and _fusing.get()


@contextlib.contextmanager
def unfused() -> Iterator[None]:
    """Run layers through their unfused primitives (the fused kernels' tests compare the two)."""
    token = _fusing.set(False)
    try:
        yield
    finally:
        _fusing.reset(token)


@contextlib.contextmanager
def no_grad() -> Iterator[None]:
    """Run without recording gradients (evaluation passes). Refused while a trace records."""
    hook = _trace_hook.get()
    if hook is not None:
        hook.on_no_grad()
    token = _grad_enabled.set(False)
    try:
        yield
    finally:
        _grad_enabled.reset(token)


@contextlib.contextmanager
def enable_grad() -> Iterator[None]:
    token = _grad_enabled.set(True)
    try:
        yield
    finally:
        _grad_enabled.reset(token)


@contextlib.contextmanager
def float64() -> Iterator[None]:
    """New tensors (and scalars mixed into operations) are float64: used by gradient checks."""
    token = _default_float.set(np.float64)
    try:
        yield
    finally:
        _default_float.reset(token)


@contextlib.contextmanager
def installed_trace_hook(hook: "TraceHook") -> Iterator[None]:
    token = _trace_hook.set(hook)
    try:
        yield
    finally:
        _trace_hook.reset(token)
