"""Each fused kernel held to the primitives it replaces: values, gradients, and the ties."""

from __future__ import annotations

import numpy as np
import pytest

from deepsharp import RandomStream, Sequential, Shape
from deepsharp.layers.base import Flow
from deepsharp.tensors import Tensor, apply
from tests.support.grad_places import check_gradients_in_adams_buffer
from tests.support.gradcheck import numeric_vs_autograd

RTOL = 1e-6  # float rounding: the fused product adds the bias after, not as a column of ones


def _unfused(x, w, b, pads, pool):
    nd = len(pool)
    y = apply("conv", *((x, w) if b is None else (x, w, b)), strides=(1,) * nd,
              dilations=(1,) * nd, pads=pads, groups=1)
    return apply("max_pool", apply("relu", y), kernel=pool, strides=pool, pads=(0,) * 2 * nd)


def _fused(x, w, b, pads, pool):
    return apply("conv_relu_max_pool", *((x, w) if b is None else (x, w, b)), pads=pads, pool=pool)


def _both(x, w, b, pads, pool, grad):
    results = []
    for run in (_unfused, _fused):
        tensors = [Tensor(a, requires_grad=True) if a is not None else None for a in (x, w, b)]
        y = run(*tensors, pads, pool)
        (y * Tensor(grad)).sum().backward()
        results.append((y._data, *(t.grad for t in tensors if t is not None)))
    return results


CASES = [  # (x shape, kernel, pads, pool, bias)
    ((3, 11, 11, 1), (3, 3), (0, 0, 0, 0), (2, 2), True),     # one channel, floor mode
    ((2, 9, 10, 12), (3, 3), (1, 1, 1, 1), (2, 2), True),     # many channels, a border
    ((2, 8, 9, 3), (2, 3), (0, 1, 1, 0), (3, 2), False),      # other windows, no bias
    ((4, 13, 5), (3,), (1, 1), (2,), True),                   # a series
    ((1, 6, 6, 5, 9), (3, 3, 3), (0,) * 6, (2, 2, 1), True),  # a volume
]


@pytest.mark.parametrize("shape, kernel, pads, pool, bias", CASES)
def test_conv_relu_max_pool_matches_the_three_primitives(shape, kernel, pads, pool, bias):
    generator = np.random.default_rng(len(shape) + shape[-1])
    x = generator.standard_normal(shape).astype(np.float32)
    w = generator.standard_normal((*kernel, shape[-1], 7)).astype(np.float32) * 0.3
    b = generator.standard_normal(7).astype(np.float32) * 0.3 if bias else None
    shape_out = _unfused(Tensor(x), Tensor(w), None if b is None else Tensor(b), pads, pool).shape
    grad = generator.standard_normal(shape_out).astype(np.float32)
    expected, got = _both(x, w, b, pads, pool, grad)
    for name, e, g in zip(("y", "x", "w", "b"), expected, got):
        np.testing.assert_allclose(g, e, rtol=RTOL, atol=RTOL * np.abs(e).max(), err_msg=name)


def test_ties_go_where_the_three_primitives_send_them():
    """Equal candidates (a constant image: every window alike) route to the first in row-major
    order; a window whose largest value is below zero after the bias passes no gradient."""
    x = np.ones((2, 8, 8, 3), np.float32)
    w = np.random.default_rng(0).standard_normal((3, 3, 3, 4)).astype(np.float32)
    total = x[0, :3, :3].reshape(-1) @ w.reshape(27, 4)
    b = np.array([1.0, -1.0, 0.0, 0.5], np.float32) - total * np.array([0, 1, 1, 0], np.float32)
    grad = np.random.default_rng(1).standard_normal((2, 3, 3, 4)).astype(np.float32)
    expected, got = _both(x, w, b, (0, 0, 0, 0), (2, 2), grad)
    np.testing.assert_array_equal(got[1] != 0, expected[1] != 0)  # the same places get gradients
    for e, g in zip(expected, got):
        np.testing.assert_allclose(g, e, rtol=RTOL, atol=RTOL * max(np.abs(e).max(), 1))
    assert not got[3][1] and not got[3][2]  # channels at or below zero after the bias: no gradient


def test_gradients_agree_with_finite_differences():
    generator = np.random.default_rng(3)
    arrays = [generator.standard_normal((2, 7, 6, 2)), generator.standard_normal((3, 3, 2, 3)),
              generator.standard_normal(3)]
    pairs = numeric_vs_autograd(lambda x, w, b: (_fused(x, w, b, (1, 0, 1, 0), (2, 2))
                                                 ** 2).sum(), arrays)
    for autograd, numeric in pairs:
        np.testing.assert_allclose(autograd, numeric, rtol=1e-5, atol=1e-7)


def test_a_network_runs_conv_relu_pool_fused_with_the_numbers_of_its_steps():
    network = (Sequential().conv2d(6, 3, padding="same").relu().max_pool2d(2).conv2d(5, 3)
               .relu().max_pool2d(2).flatten().dense(3)).lower(Shape(12, 12, 2), RandomStream(0))
    x = np.random.default_rng(4).standard_normal((3, 12, 12, 2)).astype(np.float32)
    results = []
    for fused in (False, True):
        for _, p in network.named_parameters():
            p.grad = None
        flow = Flow(Tensor(x))
        y = network.call(flow).value if fused else _step_by_step(network, flow)
        (y * y).sum().backward()
        records = _ops(y)
        results.append((y._data, {n: p.grad.copy() for n, p in network.named_parameters()}))
        assert ("conv_relu_max_pool" in records) == fused
    (y0, g0), (y1, g1) = results
    np.testing.assert_allclose(y1, y0, rtol=RTOL, atol=RTOL * np.abs(y0).max())
    for name in g0:
        np.testing.assert_allclose(g1[name], g0[name], rtol=1e-5,
                                   atol=1e-6 * np.abs(g0[name]).max(), err_msg=name)


def _step_by_step(network, flow):
    for step in network.steps:
        flow = step.call(flow)
    return flow.value


def _ops(y) -> set[str]:
    ops, seen, stack = set(), set(), [y.record]
    while stack:
        record = stack.pop()
        if record is None or id(record) in seen:
            continue
        seen.add(id(record))
        ops.add(record.op)
        stack.extend(t.record for t in record.inputs)
    return ops


# -- Adam over one flat buffer ------------------------------------------------------------------
def _adam_runs(make, steps: int = 4, skip_at: int | None = None):
    """Parameters after `steps` updates by `make()`'s flat step and by its per-parameter
    `update`, from the same gradients."""
    from deepsharp import Parameter

    generator = np.random.default_rng(7)
    shapes = ((5, 3), (3,), (4, 2, 2), (130, 130), (300, 300))  # (107k values: two blocks)
    start = [generator.standard_normal(s).astype(np.float32) for s in shapes]
    grads = [[generator.standard_normal(a.shape).astype(np.float32) for a in start]
             for _ in range(steps)]
    results = []
    for flat in (True, False):
        params = [Parameter(a.copy()) for a in start]
        optimizer = make().bind([(f"p{i}", p) for i, p in enumerate(params)])
        for k in range(steps):
            for i, (p, g) in enumerate(zip(params, grads[k])):
                p.grad = None if (k == skip_at and i == 1) else g.copy()
            if flat:
                optimizer.step()
            else:
                for name, p in optimizer.params:
                    if p.grad is not None:
                        optimizer.update(p._data, p.grad, optimizer.state.setdefault(name, {}))
        results.append(([p._data for p in params], optimizer.state_arrays()))
    return results


@pytest.mark.parametrize("make", [
    lambda: __import__("deepsharp").Adam(1e-2),
    lambda: __import__("deepsharp").Adam(1e-2, weight_decay=0.1, betas=(0.8, 0.99)),
    lambda: __import__("deepsharp").AdamW(1e-2),
])
def test_flat_adam_is_bit_identical_to_the_per_parameter_update(make):
    for skip_at in (None, 2):  # a step without one gradient: per parameter from there on
        (flat, flat_state), (each, each_state) = _adam_runs(make, skip_at=skip_at)
        for a, b in zip(flat, each):
            np.testing.assert_array_equal(a, b)
        assert flat_state.keys() == each_state.keys()
        for key in flat_state:
            np.testing.assert_array_equal(flat_state[key], each_state[key], err_msg=key)


def test_flat_adam_picks_up_a_loaded_state():
    from deepsharp import Adam, Parameter

    params = [Parameter(np.ones((2, 2), np.float32)), Parameter(np.ones(3, np.float32))]
    optimizer = Adam(0.1).bind([("a", params[0]), ("b", params[1])])
    for p in params:
        p.grad = np.full(p.shape, 0.5, np.float32)
    optimizer.step()
    saved = {k: v.copy() for k, v in optimizer.state_arrays().items()}
    after_one = [p._data.copy() for p in params]
    optimizer.step()
    after_two = [p._data.copy() for p in params]
    for p, values in zip(params, after_one):
        p._data[...] = values
    optimizer.load_state_arrays(saved)  # copies: the flat buffers are made again from them
    optimizer.step()
    for p, expected in zip(params, after_two):
        np.testing.assert_array_equal(p._data, expected)


def test_dense_gradients_are_written_into_adams_buffer_with_the_same_numbers():
    """matmul_add's rule writes the weight and bias gradients into Adam's gradient buffer (the
    step gathers nothing), with the numbers made without it (tests/support/grad_places.py)."""
    network = (Sequential().dense(4).relu().dense(3)).lower(Shape(5), RandomStream(0))
    x = np.random.default_rng(8).standard_normal((6, 5)).astype(np.float32)
    first = check_gradients_in_adams_buffer(network, x)
    assert all(g.base is None for g in first.values())  # before the first step: new arrays


def test_a_gradient_place_is_not_offered_to_an_input_given_twice():
    from deepsharp import Parameter

    w = Parameter(np.arange(9, dtype=np.float32).reshape(3, 3) / 9)
    b = Parameter(np.ones(3, np.float32))
    grads = []
    for home in (np.full((3, 3), np.nan, np.float32), None):
        w.grad = b.grad = None
        w._grad_home = home
        apply("matmul_add", w, w, b).sum().backward()
        grads.append(w.grad)
    np.testing.assert_array_equal(*grads)
    assert w._grad_home is None

# -- GELU without scipy's erf -------------------------------------------------------------------
def test_erf32_is_within_its_stated_error_of_float64_erf():
    from scipy.special import erf

    from deepsharp.tensors.ops.activations import ERF32_MAX_ERROR, erf32

    x = np.linspace(-6, 6, 400_001, dtype=np.float32)
    error = np.abs(erf32(x).astype(np.float64) - erf(x.astype(np.float64)))
    assert error.max() <= ERF32_MAX_ERROR
    assert erf32(x).dtype == np.float32 and erf32(np.float32([0.0]))[0] == 0.0


def test_gelu_float32_agrees_with_float64_gelu():
    """Values within |x| * erf32's error / 2 (and rounding); gradients as before (the same rule
    from the same Phi)."""
    from scipy.special import erf

    x = np.random.default_rng(2).standard_normal(10_000).astype(np.float32) * 3
    t = Tensor(x, requires_grad=True)
    y = apply("gelu", t, approximate=0)
    y.sum().backward()
    x64 = x.astype(np.float64)
    cdf = 0.5 * (1 + erf(x64 / np.sqrt(2)))
    exact = x64 * cdf
    bound = np.abs(x64) * 2.3e-7 + 1.2e-7 * np.abs(exact) + 1e-12
    assert np.all(np.abs(y._data - exact) <= bound)
    d = cdf + x64 * np.exp(-0.5 * x64 * x64) / np.sqrt(2 * np.pi)
    np.testing.assert_allclose(t.grad, d, rtol=1e-6, atol=5e-7)


# -- a dense layer's matmul and add as one primitive --------------------------------------------
@pytest.mark.parametrize("shape", [(6, 5), (2, 3, 5)])
def test_matmul_add_matches_matmul_and_add(shape):
    generator = np.random.default_rng(5)
    arrays = [generator.standard_normal(s).astype(np.float32) for s in (shape, (5, 4), (4,))]
    grad = generator.standard_normal((*shape[:-1], 4)).astype(np.float32)
    results = []
    for fused in (True, False):
        x, w, b = (Tensor(a, requires_grad=True) for a in arrays)
        y = apply("matmul_add", x, w, b) if fused else apply("add", apply("matmul", x, w), b)
        (y * Tensor(grad)).sum().backward()
        results.append((y._data, x.grad, w.grad, b.grad))
    for got, expected in zip(*results):
        np.testing.assert_allclose(got, expected, rtol=RTOL, atol=RTOL * np.abs(expected).max())



@pytest.mark.parametrize("shape", [(6, 5), (2, 3, 5)])
def test_a_network_runs_dense_relu_fused_with_the_numbers_of_its_steps(shape):
    """matmul_add_relu against the dense layer's matmul_add and the relu: the same numbers, bit for
    bit (the same products and the same relu), values and every gradient."""
    network = (Sequential().dense(4).relu().dense(4, bias=False).relu().dense(3)
               .lower(Shape(*shape[1:]), RandomStream(0)))
    x = np.random.default_rng(7).standard_normal(shape).astype(np.float32)
    results = []
    for fused in (False, True):
        for _, p in network.named_parameters():
            p.grad = None
        t = Tensor(x, requires_grad=True)
        y = network.call(Flow(t)).value if fused else _step_by_step(network, Flow(t))
        (y * y).sum().backward()
        ops = _ops(y)
        assert ("matmul_add_relu" in ops) == fused and "relu" in ops  # (no bias: not fused)
        results.append([y._data, t.grad] + [p.grad for _, p in network.named_parameters()])
    for got, expected in zip(*results):
        np.testing.assert_array_equal(got, expected)


# -- layer norm in fewer passes -----------------------------------------------------------------
def test_layer_norm_matches_the_shared_normalisation_rules():
    from deepsharp.tensors.ops.norm import _normalise, _normalise_grad

    generator = np.random.default_rng(6)
    x, gamma, beta, grad = (generator.standard_normal(s).astype(np.float32) * 2 + 0.5
                            for s in ((4, 5, 16), (16,), (16,), (4, 5, 16)))
    tensors = [Tensor(a, requires_grad=True) for a in (x, gamma, beta)]
    y = apply("layer_norm", *tensors, eps=1e-5)
    (y * Tensor(grad)).sum().backward()
    xhat, _, _, rstd = _normalise(x, (-1,), 1e-5)
    expected = (xhat * gamma + beta, _normalise_grad(grad * gamma, xhat, rstd, (-1,)),
                (grad * xhat).sum(axis=(0, 1)), grad.sum(axis=(0, 1)))
    for got, e in zip((y._data, *(t.grad for t in tensors)), expected):
        np.testing.assert_allclose(got, e, rtol=RTOL, atol=RTOL * np.abs(e).max())


# -- self-attention's projections and attention as one primitive -------------------------------
@pytest.mark.parametrize("heads, causal, masked", [(4, 0, False), (1, 1, True), (2, 0, True)])
def test_self_attention_matches_its_layers_primitives(heads, causal, masked):
    """The layer's unfused path (what a tracer records) against the fused primitive it runs."""
    from deepsharp.tensors import modes

    spec = Sequential().multi_head_attention(heads, 8, causal=bool(causal)) if heads > 1 else \
        Sequential().attention(causal=bool(causal))
    network = spec.lower(Shape(5, 8), RandomStream(1))
    (step,) = network.steps
    generator = np.random.default_rng(heads)
    x = generator.standard_normal((3, 5, 8)).astype(np.float32)
    mask = Tensor(np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1], [0, 1, 1, 1, 1]], bool)) \
        if masked else None
    grad = generator.standard_normal((3, 5, 8)).astype(np.float32)
    results = []
    for fused in (True, False):
        for _, p in network.named_parameters():
            p.grad = None
        t = Tensor(x, requires_grad=True)

        if fused:
            y = step.call(Flow(t, mask)).value
        else:
            with modes.unfused():
                y = step.call(Flow(t, mask)).value
        assert (y.record.op in ("self_attention", "matmul_add")) == fused
        (y * Tensor(grad)).sum().backward()
        results.append([y._data, t.grad] + [p.grad for _, p in network.named_parameters()])
    scale = max(np.abs(e).max() for e in results[1])  # the key bias's gradient is zero, bar rounding
    for got, expected in zip(*results):
        np.testing.assert_allclose(got, expected, rtol=RTOL, atol=RTOL * scale)


# -- GELU's erf32 in stacked passes ------------------------------------------------------------
def test_gelu_blocks_repeat_erf32_bit_for_bit():
    """GELU's stacked Horner passes (numerator and denominator in one array, constants as 0-d
    arrays, blocks of BLOCK) against erf32 taken as it stands: the same float32 numbers,
    infinities, NaN and signed zeros included, over more than one block."""
    from deepsharp.tensors.ops.activations import BLOCK, erf32

    x = np.random.default_rng(8).standard_normal(BLOCK * 2 + 77).astype(np.float32) * 4
    x[:7] = [np.inf, -np.inf, np.nan, 0.0, -0.0, 1e-30, -1e-42]
    with np.errstate(invalid="ignore"):
        y = apply("gelu", Tensor(x), approximate=0)._data
        c = erf32(x * np.float32(1 / np.sqrt(2)))
        c += 1
        c *= 0.5
        expected = x * c
    np.testing.assert_array_equal(y, expected)
    assert np.array_equal(np.signbit(y), np.signbit(expected))


def test_gelu_phi_as_half_erf_plus_a_half_is_bit_identical():
    """GELU's Phi taken as erf32 / 2 + 1/2 with a doubled denominator against (erf32 + 1) / 2, where
    a half of erf would fall among the subnormals and near every power of two."""
    from deepsharp.tensors.ops.activations import erf32

    tiny = np.float32([1.5e-38, -2e-38, 3e-39, 1e-45, 2.0 ** -125, -(2.0 ** -126)])
    x = np.concatenate([tiny, np.float32(2.0) ** np.arange(-40, 4, dtype=np.float32),
                        -np.float32(2.0) ** np.arange(-40, 4, dtype=np.float32)])
    c = erf32(x * np.float32(1 / np.sqrt(2)))
    c += 1
    c *= 0.5
    y = apply("gelu", Tensor(x), approximate=0)._data
    np.testing.assert_array_equal(y, x * c)
    assert np.array_equal(np.signbit(y), np.signbit(x * c))


# -- attention chunk by chunk along the batch ---------------------------------------------------
@pytest.mark.parametrize("shape, masked, causal", [((5, 2, 6, 3), True, 1), ((5, 2, 6, 3), False, 0),
                                                   ((7, 4, 3), True, 0), ((1, 3, 4, 2), True, 1)])
def test_attention_in_chunks_is_bit_identical_to_one_pass(monkeypatch, shape, masked, causal):
    """Scores, softmax and gradients chunk by chunk (here a chunk of one or two batch rows) against
    the whole batch at once: the same numbers bit for bit, masked rows and all."""
    from deepsharp.tensors.ops import attention

    generator = np.random.default_rng(12)
    q, k, v, grad = (generator.standard_normal(shape).astype(np.float32) for _ in range(4))
    mask = generator.random((shape[0], shape[-2])) > 0.3
    mask[0] = False  # a row with no key to look at
    results = []
    for chunk in (1 << 30, int(np.prod(shape[1:-1])) * shape[-2] * 2):
        monkeypatch.setattr(attention, "CHUNK", chunk)
        tensors = [Tensor(a, requires_grad=True) for a in (q, k, v)]
        extra = [Tensor(mask)] if masked else []
        y = apply("attention", *tensors, *extra, scale=0.4, causal=causal)
        (y * Tensor(grad)).sum().backward()
        results.append([y._data] + [t.grad for t in tensors])
    assert len(attention._chunks(q, shape[-2])) == (1 if shape[0] == 1 else -(-shape[0] // 2))
    for got, expected in zip(*results):
        np.testing.assert_array_equal(got, expected)
