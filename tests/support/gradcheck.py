"""Finite differences in float64 against autograd."""

from __future__ import annotations

import contextlib
from typing import Callable, Iterator, Sequence

import numpy as np

from deepsharp.module import Module
from deepsharp.random import RandomStream
from deepsharp.run import running
from deepsharp.tensors import Tensor, float64


def _sample(size: int, limit: int, generator: np.random.Generator) -> np.ndarray:
    if size <= limit:
        return np.arange(size)
    return np.sort(generator.choice(size, limit, replace=False))


def numeric_vs_autograd(fn: Callable[..., Tensor], arrays: Sequence[np.ndarray], *,
                        eps: float = 1e-6, limit: int = 60, seed: int = 0,
                        wrt: Sequence[int] | None = None) -> list[tuple[np.ndarray, np.ndarray]]:
    """For each float input (or those in `wrt`), (autograd gradient, central differences) at up
    to `limit` sampled coordinates, of the scalar fn(*tensors), all in float64."""
    generator = np.random.default_rng(seed)
    with float64():
        tensors = [Tensor(np.array(a, dtype=np.float64) if np.asarray(a).dtype.kind == "f"
                          else np.asarray(a), requires_grad=np.asarray(a).dtype.kind == "f")
                   for a in arrays]
        out = fn(*tensors)
        assert out.size == 1, f"gradcheck needs a scalar, got shape {out.shape}"
        out.backward()
        pairs = []
        for index, t in enumerate(tensors):
            if not t.requires_grad or (wrt is not None and index not in wrt):
                continue
            coords = _sample(t.size, limit, generator)
            flat = t._data.reshape(-1)
            numeric = np.empty(len(coords))
            for k, c in enumerate(coords):
                keep = flat[c]
                flat[c] = keep + eps
                up = float(fn(*[Tensor(u._data) for u in tensors])._data)
                flat[c] = keep - eps
                down = float(fn(*[Tensor(u._data) for u in tensors])._data)
                flat[c] = keep
                numeric[k] = (up - down) / (2 * eps)
            grad = t.grad if t.grad is not None else np.zeros_like(t._data)
            pairs.append((grad.reshape(-1)[coords], numeric))
        return pairs


def assert_gradients(fn: Callable[..., Tensor], arrays: Sequence[np.ndarray], *,
                     atol: float = 1e-6, rtol: float = 1e-5, **options) -> None:
    for index, (analytic, numeric) in enumerate(numeric_vs_autograd(fn, arrays, **options)):
        np.testing.assert_allclose(analytic, numeric, atol=atol, rtol=rtol,
                                   err_msg=f"gradient of input {index}")


@contextlib.contextmanager
def float64_module(module: Module) -> Iterator[None]:
    """Every parameter and buffer of `module` as float64 for the duration."""
    slots = {**dict(module.named_parameters()), **dict(module.named_buffers())}
    saved = {path: t._data for path, t in slots.items()}
    for t in slots.values():
        if t._data.dtype.kind == "f":
            t._data = t._data.astype(np.float64)
    try:
        yield
    finally:
        for path, t in slots.items():
            t._data = saved[path]
            t.grad = None


def assert_module_gradients(module: Module, x: np.ndarray, *, training: bool = True,
                            limit: int = 40, atol: float = 1e-6, rtol: float = 1e-5,
                            eps: float = 1e-6, seed: int = 0) -> None:
    """Gradients of a random projection of the module's output with respect to every trainable
    parameter and the (float) input, against central differences, all in float64. In training
    mode the run is fixed (same step, so the same dropout masks): the function is deterministic."""
    generator = np.random.default_rng(seed)
    module.train(training)
    x = np.asarray(x)
    is_float = x.dtype.kind == "f"
    with float64_module(module), float64():
        xt = Tensor(x.astype(np.float64) if is_float else x, requires_grad=is_float)
        out = _run(module, xt)
        weights = generator.standard_normal(out.shape)
        (out * weights).sum().backward()
        targets = ([("input", xt)] if is_float else []) + list(module.trainable_parameters())
        assert targets, "nothing to check: no float input and no trainable parameter"
        for label, t in targets:
            grad = t.grad if t.grad is not None else np.zeros_like(t._data)
            coords = _sample(t.size, limit, generator)
            flat = t._data.reshape(-1)
            assert np.shares_memory(flat, t._data)
            numeric = np.empty(len(coords))
            for k, c in enumerate(coords):
                keep = flat[c]
                flat[c] = keep + eps
                up = float((_run(module, Tensor(xt._data)) * weights).sum()._data)
                flat[c] = keep - eps
                down = float((_run(module, Tensor(xt._data)) * weights).sum()._data)
                flat[c] = keep
                numeric[k] = (up - down) / (2 * eps)
            np.testing.assert_allclose(grad.reshape(-1)[coords], numeric, atol=atol, rtol=rtol,
                                       err_msg=f"gradient of {label}")


def _run(module: Module, x: Tensor) -> Tensor:
    with running(RandomStream(0), 0):
        return module.forward(x)
