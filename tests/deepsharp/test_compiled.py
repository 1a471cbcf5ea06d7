"""The compiled kernels (deepsharp.compiled, numba) give the numpy path's numbers exactly."""

from __future__ import annotations

import numpy as np
import pytest

from deepsharp import Adam, AdamW, MeanSquaredError, Parameter, RandomStream, Sequential, Shape
from deepsharp.compiled import available, compiled
from deepsharp.errors import SpecError
from deepsharp.tensors import Tensor, apply

# `make test` installs the speed extra: without numba these tests fail here, loudly, not skip
assert available(), "numba is missing: install the test extra (pip install -e '.[test]')"


def _adam_run(make, on: bool) -> list[np.ndarray]:
    generator = np.random.default_rng(0)
    params = [Parameter(generator.standard_normal(s).astype(np.float32))
              for s in ((40, 30), (30,), (7, 3, 2))]
    optimizer = make().bind([(f"p{i}", p) for i, p in enumerate(params)])
    with compiled(on):
        for _ in range(5):
            for p in params:
                p.grad = generator.standard_normal(p.shape).astype(np.float32)
            optimizer.step()
    return [p._data for p in params] + list(optimizer.state_arrays().values())


@pytest.mark.parametrize("make", [lambda: Adam(1e-2), lambda: Adam(1e-2, weight_decay=0.1),
                                  lambda: AdamW(3e-3, betas=(0.8, 0.95), eps=1e-6)])
def test_adam_kernel_is_bit_identical_to_numpy(make):
    for a, b in zip(_adam_run(make, True), _adam_run(make, False)):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("kind, gates", [("lstm", 4), ("gru", 3)])
@pytest.mark.parametrize("reverse", [0, 1])
def test_recurrent_step_kernels_are_bit_identical_to_numpy(kind, gates, reverse):
    generator = np.random.default_rng(1)
    arrays = [generator.standard_normal(s).astype(np.float32) * 0.5
              for s in ((3, 6, 4), (4, 5 * gates), (5, 5 * gates), (5 * gates,), (5 * gates,))]
    weights = [generator.standard_normal(s).astype(np.float32) for s in ((3, 6, 5), (3, 5))]
    results = []
    for on in (True, False):
        tensors = [Tensor(a, requires_grad=True) for a in arrays]
        with compiled(on):
            y, h, *c = apply(kind, *tensors, reverse=reverse)
            ((y * Tensor(weights[0])).sum() + (h * Tensor(weights[1])).sum()).backward()
        results.append([y._data, h._data] + [s._data for s in c] + [t.grad for t in tensors])
    for a, b in zip(*results):
        np.testing.assert_array_equal(a, b)


def test_training_with_compiled_kernels_gives_the_same_parameters():
    x = np.random.default_rng(2).standard_normal((16, 5, 3)).astype(np.float32)
    y = x[:, -1, :1].copy()
    states = []
    for on in (True, False):
        network = Sequential().lstm(6).dense(1).lower(Shape(5, 3), RandomStream(0))
        with compiled(on):
            network.fit(x, y, loss=MeanSquaredError(), optimizer=Adam(1e-2), batch_size=8,
                        epochs=2, progress=False)
        states.append(network.state_dict())
    for name, value in states[1].items():
        np.testing.assert_array_equal(states[0][name], value, err_msg=name)


def test_gelu_kernel_is_bit_identical_to_numpy():
    x = np.concatenate([np.random.default_rng(3).standard_normal(200_000) * 3,
                        [0.0, -0.0, 5.0, -7.0, 1e-30, 40.0, -40.0]]).astype(np.float32)
    results = []
    for on in (True, False):
        t = Tensor(x, requires_grad=True)
        with compiled(on):
            y = apply("gelu", t, approximate=0)
            y.sum().backward()
        results.append((y._data, t.grad))
    for a, b in zip(*results):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("channels", [2, 24])  # 24: the Winograd path's candidates
def test_max_pool_routing_kernel_is_bit_identical_to_numpy(channels):
    """Random values, a constant image (every candidate tied) and an image with a NaN (windows
    whose largest value is NaN) under an infinite gradient: the same routes, the same signed
    zeros, the same NaNs."""
    generator = np.random.default_rng(4)
    w = generator.standard_normal((3, 3, channels, 5)).astype(np.float32)
    b = generator.standard_normal(5).astype(np.float32)
    with_nan = generator.standard_normal((2, 9, 8, channels)).astype(np.float32)
    with_nan[1, 4, 3, 0] = np.nan
    for x in (generator.standard_normal((2, 9, 8, channels)).astype(np.float32),
              np.ones((2, 9, 8, channels), np.float32), with_nan):
        grad = generator.standard_normal((2, 3, 3, 5)).astype(np.float32)
        grad[1, 1, 1, :2] = np.inf
        results = []
        for on in (True, False):
            tensors = [Tensor(a, requires_grad=True) for a in (x, w, b)]
            with compiled(on):
                y = apply("conv_relu_max_pool", *tensors, pads=(0, 0, 0, 0), pool=(2, 2))
                (y * Tensor(grad)).sum().backward()
            results.append([t.grad for t in tensors])
        for a, b_ in zip(*results):
            np.testing.assert_array_equal(a, b_)
            np.testing.assert_array_equal(np.signbit(a), np.signbit(b_))


def test_compiled_without_numba_names_the_extra(monkeypatch):
    import deepsharp.compiled as module

    monkeypatch.setattr(module, "available", lambda: False)
    with pytest.raises(SpecError, match=r"pip install 'deepsharp\[speed\]'"):
        with compiled():
            pass
