"""The compiled kernels (deepsharp.compiled, numba) give the numpy path's numbers exactly."""

from __future__ import annotations

import numpy as np
import pytest

from deepsharp import (
    Adam,
    AdamW,
    MeanSquaredError,
    Parameter,
    RandomStream,
    Sequential,
    Shape,
)
from deepsharp.compiled import available, compiled, kernel
from deepsharp.errors import SpecError
from deepsharp.tensors import Tensor, apply
from tests.support.random_networks import pooled_conv

# `make test` installs the speed extra: without numba these tests fail here, loudly, not skip
assert available(), "numba is missing: install the test extra (pip install -e '.[test]')"


def _adam_run(make, on: bool, transposed: bool = False) -> list[np.ndarray]:
    """Five steps of `make()`'s Adam inside compiled(on) or not; with `transposed`, the first
    parameter's values a transposed (strided) array."""
    generator = np.random.default_rng(0)
    arrays = [generator.standard_normal(s).astype(np.float32) for s in ((40, 30), (30,), (7, 3, 2))]
    if transposed:
        arrays[0] = arrays[0].T
    params = [Parameter(a) for a in arrays]
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


def _counting_adam_apply(monkeypatch) -> list[int]:
    """Count the calls of the compiled kernel that writes Adam's update into the parameters."""
    from deepsharp import compiled as compiled_module

    calls = []
    with compiled():
        fused = compiled_module.kernel("adam_apply")

    def counted(*args):
        calls.append(args[3].size)
        return fused(*args)
    monkeypatch.setitem(compiled_module._KERNELS, "adam_apply", counted)
    return calls


def test_adam_writes_its_update_into_contiguous_parameters_in_one_pass(monkeypatch):
    calls = _counting_adam_apply(monkeypatch)
    for a, b in zip(_adam_run(lambda: Adam(1e-2), True), _adam_run(lambda: Adam(1e-2), False)):
        np.testing.assert_array_equal(a, b)
    assert calls == [1200, 30, 42] * 5  # (every step, each parameter once)


def test_adam_with_a_strided_parameter_keeps_the_flat_update(monkeypatch):
    calls = _counting_adam_apply(monkeypatch)
    strided = _adam_run(lambda: Adam(1e-2), True, transposed=True)
    assert not strided[0].flags.c_contiguous
    for a, b in zip(strided, _adam_run(lambda: Adam(1e-2), False, transposed=True)):
        np.testing.assert_array_equal(a, b)
    assert calls == []


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


@pytest.mark.parametrize("masked", [False, True])
def test_training_with_compiled_kernels_gives_the_same_parameters(masked):
    x = np.random.default_rng(2).standard_normal((16, 5, 3)).astype(np.float32)
    y = x[:, -1, :1].copy()
    if masked:  # series of 0-5 steps, padded at the end
        for row in range(16):
            x[row, row % 6:] = 0
    states = []
    for on in (True, False):
        spec = Sequential().masking(0.0) if masked else Sequential()
        network = spec.lstm(6).dense(1).lower(Shape(5, 3), RandomStream(0))
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


def _layer_norm_run(x, gamma, beta, grad, on: bool) -> list[np.ndarray]:
    tensors = [Tensor(a, requires_grad=True, dtype=a.dtype) for a in (x, gamma, beta)]
    with compiled(on):
        y = apply("layer_norm", *tensors, eps=1e-5)
        (y * Tensor(grad, dtype=grad.dtype)).sum().backward()
    return [y._data] + [t.grad for t in tensors]


@pytest.mark.parametrize("shape", [(32, 64, 128), (3, 1, 300), (4, 129), (2, 7), (1, 8),
                                   (5, 1000), (3, 2)])
def test_layer_norm_kernels_are_bit_identical_to_numpy(shape, monkeypatch):
    from deepsharp import compiled as compiled_module

    generator = np.random.default_rng(5)
    x = generator.standard_normal(shape) * np.exp(generator.standard_normal(shape) * 2)
    x.reshape(-1, shape[-1])[0] = -0.0  # a row of negative zeros; rows of huge and tiny values
    if x.size // shape[-1] > 2:
        x.reshape(-1, shape[-1])[1] *= 1e30
        x.reshape(-1, shape[-1])[2] *= 1e-30
    gamma, beta = generator.standard_normal((2, shape[-1]))
    grad = generator.standard_normal(shape)
    grad.reshape(-1, shape[-1])[-1] = -0.0
    arrays = [a.astype(np.float32) for a in (x, gamma, beta, grad)]
    calls = []
    with compiled():
        for name in ("layer_norm_forward", "layer_norm_backward"):
            found = compiled_module.kernel(name)
            assert found is not None, "numpy's sums are not the kernels' on this numpy"
            monkeypatch.setitem(compiled_module._KERNELS, name,
                                lambda *a, f=found, n=name: calls.append(n) or f(*a))
    for a, b in zip(_layer_norm_run(*arrays, True), _layer_norm_run(*arrays, False)):
        np.testing.assert_array_equal(a, b)
    assert calls == ["layer_norm_forward", "layer_norm_backward"]


def test_layer_norm_of_strided_or_float64_rows_keeps_numpys_passes(monkeypatch):
    from deepsharp import compiled as compiled_module

    calls = []
    monkeypatch.setitem(compiled_module._KERNELS, "layer_norm_forward",
                        lambda *a: calls.append(a))
    generator = np.random.default_rng(6)
    x = generator.standard_normal((6, 9)).astype(np.float32).T  # (9, 6), not C-ordered
    gamma, beta, grad = (generator.standard_normal(s).astype(np.float32) for s in (6, 6, (9, 6)))
    for a, b in zip(_layer_norm_run(x, gamma, beta, grad, True),
                    _layer_norm_run(x, gamma, beta, grad, False)):
        np.testing.assert_array_equal(a, b)
    wide = [a.astype(np.float64) for a in (np.ascontiguousarray(x), gamma, beta, grad)]
    assert _layer_norm_run(*wide, True)[0].dtype == np.float64
    assert calls == []


def test_a_numpy_whose_sums_differ_turns_the_row_sum_kernels_off(monkeypatch):
    from deepsharp import _kernels_rows, compiled as compiled_module

    monkeypatch.setattr(_kernels_rows, "matches_numpy", lambda: False)
    monkeypatch.setattr(compiled_module, "_KERNELS", {})  # (none loaded; the table put back)
    summing = ("layer_norm_forward", "layer_norm_backward", "softmax_divide", "softmax_grad")
    with compiled():
        assert [compiled_module.kernel(name) for name in summing] == [None] * 4
        assert compiled_module.kernel("softmax_shift") is not None  # (it sums nothing)


@pytest.mark.parametrize("n", [1, 7, 8, 128, 129, 300, 1031, 4096])
def test_the_pairwise_walk_is_numpys_sum(n):
    from deepsharp import _kernels_rows

    generator = np.random.default_rng(n)
    x = (generator.standard_normal((5, n)) * 10.0 ** generator.integers(-6, 6, (5, n)))
    x = x.astype(np.float32)
    out = np.empty(5, np.float32)
    _kernels_rows.row_sums(x, out)
    np.testing.assert_array_equal(out, x.sum(axis=-1))


def _attention_run(on: bool, shape, mask: bool, causal: int, special: bool, dtype=np.float32):
    from deepsharp.tensors.ops.attention import attend, attend_grad

    generator = np.random.default_rng(sum(shape))
    q, k, v, g = (generator.standard_normal(shape).astype(dtype) for _ in range(4))
    if special:  # a NaN, an infinity, signed zeros among the scores
        q[0, 0, 0], q[0, 0, 1], q[0, 0, 2], k[0, 0, 3] = np.nan, np.inf, -0.0, -0.0
    key_mask = None
    if mask:
        key_mask = generator.random((shape[0], shape[2])) > 0.3
        key_mask[0] = False  # a series with no key to look at
    with compiled(on):
        out, weights = attend(q, k, v, key_mask, 0.17, causal)
        return [out, weights, *attend_grad(g, weights, q, k, v, 0.17)]


@pytest.mark.parametrize("shape", [(32, 4, 64, 32), (2, 1, 5, 3), (3, 2, 130, 4), (1, 1, 4, 2)])
@pytest.mark.parametrize("mask, causal, special", [(False, 0, False), (True, 0, False),
                                                   (False, 1, False), (False, 0, True)])
def test_the_softmax_kernels_are_bit_identical_to_numpy(shape, mask, causal, special,
                                                        monkeypatch):
    from deepsharp import compiled as compiled_module

    calls = []
    with compiled():
        for name in ("softmax_shift", "softmax_divide", "softmax_grad"):
            found = compiled_module.kernel(name)
            assert found is not None, "numpy's sums are not the kernels' on this numpy"
            monkeypatch.setitem(compiled_module._KERNELS, name,
                                lambda *a, f=found, n=name: calls.append(n) or f(*a))
    with np.errstate(invalid="ignore"):
        for a, b in zip(_attention_run(True, shape, mask, causal, special),
                        _attention_run(False, shape, mask, causal, special)):
            np.testing.assert_array_equal(a, b)
    assert {"softmax_shift", "softmax_divide", "softmax_grad"} <= set(calls)


def test_float64_attention_keeps_numpys_softmax(monkeypatch):
    from deepsharp import compiled as compiled_module

    calls = []
    for name in ("softmax_shift", "softmax_grad"):
        monkeypatch.setitem(compiled_module._KERNELS, name, lambda *a: calls.append(a))
    for a, b in zip(_attention_run(True, (2, 2, 6, 3), True, 0, False, np.float64),
                    _attention_run(False, (2, 2, 6, 3), True, 0, False, np.float64)):
        np.testing.assert_array_equal(a, b)
    assert calls == []


def _pooled_conv(x, w, b, grad, forward_on, backward_on, split):
    """conv_relu_max_pool's output and gradients (tests/support/random_networks.pooled_conv)."""
    return pooled_conv((x, w) + (() if b is None else (b,)), grad, forward_on, backward_on,
                       split)


@pytest.mark.parametrize("split", [False, True])
@pytest.mark.parametrize("channels", [2, 24])  # 24: the Winograd path's candidates
@pytest.mark.parametrize("with_bias", [True, False])
def test_max_pool_routing_kernel_is_bit_identical_to_numpy(channels, split, with_bias,
                                                           monkeypatch):
    """Random values, a constant image (every candidate tied) and an image with a NaN (windows
    whose largest value is NaN) under an infinite gradient: the same outputs, routes, signed
    zeros and NaNs; also routed in row ranges (split: one Winograd run an image, and inside
    data_parallel(2, split="kernels") the direct path's two halves at once); and with the
    forward pass compiled and the backward not, or the other way round (the direct path's
    compiled forward keeps each window's first largest candidate instead of the candidates)."""
    from deepsharp.tensors.ops import winograd

    if split:
        monkeypatch.setattr(winograd, "CHUNK_TILES", 4)
    generator = np.random.default_rng(4)
    w = generator.standard_normal((3, 3, channels, 5)).astype(np.float32)
    b = generator.standard_normal(5).astype(np.float32) if with_bias else None
    with_nan = generator.standard_normal((2, 9, 8, channels)).astype(np.float32)
    with_nan[1, 4, 3, 0] = np.nan
    zeros = np.zeros((2, 9, 8, channels), np.float32)  # -0 + 0: the bias's sum's signed zero
    zeros[0, :, :, 0] = -0.0
    for x in (generator.standard_normal((2, 9, 8, channels)).astype(np.float32),
              np.ones((2, 9, 8, channels), np.float32), with_nan, zeros):
        grad = generator.standard_normal((2, 3, 3, 5)).astype(np.float32)
        grad[1, 1, 1, :2] = np.inf
        numpy_path = _pooled_conv(x, w, b, grad, False, False, split)
        for forward_on, backward_on in ((True, True), (True, False), (False, True)):
            got = _pooled_conv(x, w, b, grad, forward_on, backward_on, split)
            for a, b_ in zip(got, numpy_path):
                np.testing.assert_array_equal(a, b_)
                np.testing.assert_array_equal(np.signbit(a), np.signbit(b_))


@pytest.mark.parametrize("with_bias", [True, False])
def test_the_four_candidate_pool_kernels_are_numpys_passes_bit_for_bit(with_bias):
    """pool_of_four against numpy's max, bias and relu, and route_by_first against numpy's
    routing, on candidates with signed zeros (max(-0, +0) is numpy's second operand), NaNs of
    both signs, infinities, subnormals and ties between candidates, in two row ranges."""
    from deepsharp.tensors.ops import conv_pool

    generator = np.random.default_rng(7)
    m, o = 300, 19
    special = np.array([0.0, -0.0, np.nan, -np.nan, np.inf, -np.inf, 1e-45, -1e-45, 3e38],
                       np.float32)

    def awkward(shape):
        a = generator.standard_normal(shape).astype(np.float32)
        places = generator.random(shape) < 0.2
        a[places] = special[generator.integers(0, len(special), int(places.sum()))]
        return a

    products = awkward((4, m, o))
    tied = generator.random((m, o)) < 0.2
    products[1][tied] = products[0][tied]  # ties between candidates
    products[2, :50], products[3, 50:100] = -0.0, 0.0  # signed zeros against each other
    bias = awkward(o) if with_bias else None
    grad = awkward((m, o))
    with np.errstate(all="ignore"):
        best, pre, out, none = conv_pool._max_bias_relu(products, bias)
        with compiled():
            got = conv_pool._max_bias_relu(products, bias)
        assert none is None and got[3].dtype == np.uint8
        for a, b in zip((best, pre, out), got[:3]):
            np.testing.assert_array_equal(a.view(np.uint32), b.view(np.uint32))
        g = grad * (pre > 0)
        routed = np.empty_like(products)
        conv_pool._route_to_first_max(products, best, g, routed)
        kernel_g, kernel_routed = np.empty_like(g), np.empty_like(routed)
        with compiled():
            route = kernel("route_by_first")
        for start, stop in ((0, 131), (131, m)):
            route(got[3], got[1], grad, kernel_g, kernel_routed, start, stop)
    np.testing.assert_array_equal(kernel_g.view(np.uint32), g.view(np.uint32))
    np.testing.assert_array_equal(kernel_routed.view(np.uint32), routed.view(np.uint32))


@pytest.mark.parametrize("with_bias", [True, False])
def test_the_winograd_pool_kernels_are_numpys_passes_bit_for_bit(with_bias):
    """winograd_output_pool against numpy's output transform and its max, bias and relu, and
    winograd_routed_grad against numpy's routing by the first largest candidate and the
    candidates' gradients' transform, on products with signed zeros, infinities, subnormals,
    NaNs and tied candidates (a tile of zeros: four equal candidates), in two row ranges:
    the same bits wherever the values are numbers, NaN where numpy has NaN (which NaN a sum of
    two keeps is the compiler's choice)."""
    from deepsharp.tensors.ops import conv_pool, winograd

    generator = np.random.default_rng(8)
    rows, o = 300, 19
    special = np.array([0.0, -0.0, np.nan, np.inf, -np.inf, 1e-45, -1e-45, 3e38], np.float32)

    def awkward(shape, share):
        a = generator.standard_normal(shape).astype(np.float32)
        places = generator.random(shape) < share
        a[places] = special[generator.integers(0, len(special), int(places.sum()))]
        return a

    m = awkward((16, rows, o), 0.02)
    m[:, :40] = 0.0  # four tied candidates
    m[:, 40:60] = -0.0
    bias = awkward(o, 0.3) if with_bias else None
    grad = awkward((rows, o), 0.1)
    with np.errstate(all="ignore"):
        candidates = np.empty((4, rows, o), np.float32)
        winograd.output_transform(m, candidates)
        best, pre, out, pool_rows = conv_pool._pooling((rows, o), np.float32, bias)
        pool_rows(candidates, slice(0, rows))
        expected_first = np.full((rows, o), 3, np.uint8)
        got = conv_pool._pooling((rows, o), np.float32, bias)[:3]
        with compiled():
            first, pool = conv_pool._winograd_pool(*got, bias)
            grads = kernel("winograd_routed_grad")
        for part in (slice(0, 131), slice(131, rows)):
            pool(m[:, part], part)
        for a, b in zip((best, pre, out), got):
            _same_numbers(b, a)
        for p in (2, 1, 0):  # the first candidate equal to the window's largest, 3 where none is
            expected_first[candidates[p] == best] = p
        np.testing.assert_array_equal(first, expected_first)
        g = grad * (pre > 0)
        routed = np.stack([g * (first == p) for p in range(4)])
        dm = winograd.output_grad(routed)
        kernel_g = np.empty_like(g)
        kernel_dm = np.concatenate([grads(first, pre, grad, kernel_g, part.start, part.stop)
                                    for part in (slice(0, 131), slice(131, rows))], axis=1)
    _same_numbers(kernel_g, g)
    _same_numbers(kernel_dm, dm)


def _same_numbers(got: np.ndarray, expected: np.ndarray) -> None:
    """The same bits wherever expected is a number (signed zeros included), NaN where it is."""
    numbers = ~np.isnan(expected)
    np.testing.assert_array_equal(np.isnan(got), ~numbers)
    np.testing.assert_array_equal(got[numbers].view(np.uint32), expected[numbers].view(np.uint32))


def test_compiled_without_numba_names_the_extra(monkeypatch):
    import deepsharp.compiled as module

    monkeypatch.setattr(module, "available", lambda: False)
    with pytest.raises(SpecError, match=r"pip install 'deepsharp\[speed\]'"):
        with compiled():
            pass


def test_tanh32_is_numpys_float32_tanh_bit_for_bit():
    """The LSTM's whole-step kernel computes tanh by numpy's own float32 algorithm (SVML's table,
    deepsharp/_tanh32.py): the same bits as np.tanh over a dense sample of every sub-interval and
    the edge values (scripts/check_tanh32.py compares all 2^32 float32 values, once), by the
    loop the kernels run here, and by every other loop this CPU can run (16 lanes of AVX-512 at a
    time, 8 of AVX2, or one value at a time, vectorised with gathers)."""
    from deepsharp._tanh32 import loops, matches_numpy, tanh32_array, tanh_into

    assert matches_numpy()  # on this machine the whole-step kernel runs (else it would not)
    assert tanh_into is next(iter(loops().values()))  # the widest this CPU has
    bits = np.random.default_rng(5).integers(0, 2**32, 2_000_000, dtype=np.uint64)
    grid = np.linspace(-12, 12, 1_000_001, dtype=np.float32)
    edges = np.array([0.0, -0.0, 1e-45, -1e-45, 1.2e-38, 0.0625, 9.0, 9.000001, 8.999999, 3e38,
                      -3e38, np.inf, -np.inf, np.nan, -np.nan], np.float32)
    x = np.concatenate([bits.astype(np.uint32).view(np.float32), grid, edges,
                        np.array([0x7FC00001, 0xFF800001], np.uint32).view(np.float32)])
    expected = np.tanh(x).view(np.uint32)
    out = np.empty_like(x)
    tanh32_array(x, out)
    np.testing.assert_array_equal(out.view(np.uint32), expected)
    for loop in loops().values():
        for count in (x.size, 1, 7, 8, 9, 15, 16, 17, 33):  # the lanes' loops' tails
            out = np.full_like(x, 7.0)
            loop(x, out, count)
            np.testing.assert_array_equal(out[:count].view(np.uint32), expected[:count])
            assert (out[count:] == 7.0).all()


def test_a_tanh_loop_that_cannot_be_built_turns_the_tanh_kernels_off(monkeypatch):
    """Should a numba or LLVM fail to build the tanh loop (its AVX-512 permutes are a named LLVM
    intrinsic), the probe answers no, and the LSTM and GRU run numpy's steps, not an error."""
    import deepsharp._tanh32 as module

    def broken(x, out):
        raise RuntimeError("LLVM ERROR: cannot build")

    module.matches_numpy.cache_clear()
    monkeypatch.setattr(module, "tanh32_array", broken)
    try:
        assert module.matches_numpy() is False
    finally:
        module.matches_numpy.cache_clear()


@pytest.mark.parametrize("reverse", [0, 1])
def test_lstm_whole_step_kernel_with_lengths_is_bit_identical_to_numpy(reverse):
    generator = np.random.default_rng(6)
    arrays = [generator.standard_normal(s).astype(np.float32) * 0.7
              for s in ((4, 6, 3), (3, 20), (5, 20), (20,), (20,))]
    lengths = np.array([6, 2, 0, 4])
    results = []
    for on in (True, False):
        tensors = [Tensor(a, requires_grad=True) for a in arrays]
        with compiled(on):
            y, h, c = apply("lstm", *tensors, Tensor(lengths), reverse=reverse)
            ((y * y).sum() + (h * 3).sum() + c.sum()).backward()
        results.append([y._data, h._data, c._data] + [t.grad for t in tensors])
    for a, b in zip(*results):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("kind, gates, lengths, name, calls", [
    ("lstm", 4, [7, 3, 0, 5, 1], "lstm_backward_steps", 1),   # the whole sequence in one call
    ("lstm", 4, [7, 3, 0, 5, 1], "lstm_forward_steps", 1),
    ("lstm", 4, [3], "lstm_step_grad", 7),                    # one row: step by step
    ("gru", 3, [7, 3, 0, 5, 1], "gru_backward_steps", 1),
    ("gru", 3, [7, 3, 0, 5, 1], "gru_forward_steps", 1),
    ("gru", 3, [3], "gru_step_grad", 7)])
@pytest.mark.parametrize("reverse", [0, 1])
def test_masked_sequences_run_the_compiled_kernels_bit_identical_to_numpy(
        kind, gates, lengths, name, calls, reverse, monkeypatch):
    """With lengths (some steps skipped), the compiled kernels still run (counted): the
    whole-sequence kernels with their masking inside, or (one row) each step's kernel with
    numpy's masking after it; every output and gradient is numpy's, bit for bit."""
    import deepsharp.compiled

    with compiled():
        found = kernel(name)
    assert found is not None
    counted = []
    monkeypatch.setitem(deepsharp.compiled._KERNELS, name,
                        lambda *args: (counted.append(1), found(*args))[1])
    generator = np.random.default_rng(8)
    arrays = [generator.standard_normal(s).astype(np.float32) * 0.7
              for s in ((len(lengths), 7, 3), (3, 6 * gates), (6, 6 * gates), (6 * gates,),
                        (6 * gates,))]
    results = []
    for on in (True, False):
        tensors = [Tensor(a, requires_grad=True) for a in arrays]
        with compiled(on):
            y, h, *c = apply(kind, *tensors, Tensor(np.array(lengths)), reverse=reverse)
            ((y * y).sum() + (h * 3).sum() + sum(s.sum() for s in c)).backward()
        results.append([y._data, h._data] + [s._data for s in c] + [t.grad for t in tensors])
    assert len(counted) == calls  # compiled run only
    for a, b in zip(*results):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("kind, gates", [("lstm", 4), ("gru", 3)])
@pytest.mark.parametrize("lengths", [None, [4, 1, 0, 3]])
def test_a_state_of_one_value_keeps_numpys_numbers(kind, gates, lengths):
    """numpy makes a product with one output column by a matrix-vector routine, which rounds
    otherwise than the matrix product the whole-sequence kernels call: with a hidden size of 1
    they stay off, and the compiled path still gives numpy's numbers (found by a fuzz of shapes:
    before, the LSTM's input and kernel gradients differed in the last bits)."""
    generator = np.random.default_rng(9)
    arrays = [generator.standard_normal(s).astype(np.float32)
              for s in ((4, 4, 3), (3, gates), (1, gates), (gates,), (gates,))]
    extra = () if lengths is None else (Tensor(np.array(lengths)),)
    results = []
    for on in (True, False):
        tensors = [Tensor(a, requires_grad=True) for a in arrays]
        with compiled(on):
            y, *states = apply(kind, *tensors, *extra, reverse=0)
            ((y * y).sum() + (states[-1] * 2).sum()).backward()
        results.append([y._data] + [s._data for s in states] + [t.grad for t in tensors])
    for a, b in zip(*results):
        np.testing.assert_array_equal(a, b)


def test_lstm_falls_back_to_its_cell_kernel_where_tanh32_differs(monkeypatch):
    """Where the port of numpy's tanh does not give np.tanh's numbers (numpy without FMA), the
    whole-step kernel stays off and the cell kernel runs between numpy's tanh calls: the same
    numbers as numpy's path."""
    import deepsharp._tanh32
    import deepsharp.compiled

    monkeypatch.setattr(deepsharp.compiled, "_KERNELS", {})
    monkeypatch.setattr(deepsharp._tanh32, "matches_numpy", lambda: False)
    with compiled():
        assert deepsharp.compiled.kernel("lstm_step_forward") is None
        assert deepsharp.compiled.kernel("lstm_step_cell") is not None
    test_recurrent_step_kernels_are_bit_identical_to_numpy("lstm", 4, 0)


@pytest.mark.parametrize("batch", [1, 2, 5])
@pytest.mark.parametrize("used", ["h", "y"])
def test_gru_whole_sequence_kernels_are_bit_identical_to_numpy(batch, used):
    """As the LSTM's below: two rows or more run forward and back as one call each, the tanh of
    its gates by numpy's own float32 algorithm (deepsharp/_tanh32.py)."""
    generator = np.random.default_rng(10)
    arrays = [generator.standard_normal(s).astype(np.float32) * 0.6
              for s in ((batch, 9, 4), (4, 18), (6, 18), (18,), (18,))]
    results = []
    for on in (True, False):
        tensors = [Tensor(a, requires_grad=True) for a in arrays]
        with compiled(on):
            y, h = apply("gru", *tensors, reverse=int(used == "h"))
            (h * h if used == "h" else y * y).sum().backward()
        results.append([y._data, h._data] + [t.grad for t in tensors])
    for a, b in zip(*results):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("batch", [1, 2, 5])
@pytest.mark.parametrize("used", ["h", "c", "y"])
def test_lstm_whole_sequence_kernels_are_bit_identical_to_numpy(batch, used):
    """Inside compiled() a sequence of two rows or more runs forward and back as one call each
    (its products by numpy's own BLAS, deepsharp/_blas.py); one row runs step by step (numpy
    makes a single row's product by another routine). The outputs used decide which gradients
    reach the loop: only the last state (no output gradient at all), the cell, every output."""
    from deepsharp._blas import address

    assert address()  # numpy's BLAS was found and checked here: the loop kernels run
    generator = np.random.default_rng(7)
    arrays = [generator.standard_normal(s).astype(np.float32) * 0.6
              for s in ((batch, 9, 4), (4, 24), (6, 24), (24,), (24,))]
    results = []
    for on in (True, False):
        tensors = [Tensor(a, requires_grad=True) for a in arrays]
        with compiled(on):
            y, h, c = apply("lstm", *tensors, reverse=int(used == "c"))
            chosen = {"h": h * h, "c": c * 3, "y": y * y}[used]
            chosen.sum().backward()
        results.append([y._data, h._data, c._data] + [t.grad for t in tensors])
    for a, b in zip(*results):
        np.testing.assert_array_equal(a, b)
