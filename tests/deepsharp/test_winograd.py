"""conv_relu_max_pool's Winograd F(2x2, 3x3) path: held to the direct path, to a float64
convolution, to float64 finite differences, and to the direct path's ties and non-finite numbers."""

from __future__ import annotations

import numpy as np
import pytest

from deepsharp import MeanSquaredError, RandomStream, Sequential, Shape
from deepsharp.tensors import Tensor, apply
from deepsharp.tensors.ops import conv_pool, winograd
from deepsharp_export_onnx import OnnxExport
from tests.support.gradcheck import numeric_vs_autograd
from tests.support.onnx_check import ort_session

RTOL = 1e-5  # Winograd adds and subtracts inputs before the products: other float rounding


def _run(x, w, b, pads, grad):
    tensors = [Tensor(a, requires_grad=True) for a in (x, w, b)]
    y = apply("conv_relu_max_pool", *tensors, pads=pads, pool=(2, 2))
    (y * Tensor(grad)).sum().backward()
    return [y._data] + [t.grad for t in tensors]


@pytest.fixture
def counted(monkeypatch):
    """How many runs the Winograd path made: its output's transform, or inside compiled() the
    kernel making that transform and the pool in one pass."""
    calls = []
    transform = winograd.output_transform
    monkeypatch.setattr(winograd, "output_transform", lambda *a: calls.append(1) or transform(*a))
    fused = conv_pool._winograd_pool

    def counting(*args):
        first, pool = fused(*args)
        return first, (None if pool is None else lambda *a: calls.append(1) or pool(*a))

    monkeypatch.setattr(conv_pool, "_winograd_pool", counting)
    return calls


def _direct(monkeypatch):
    monkeypatch.setattr(winograd, "WINOGRAD_CHANNELS", 1 << 30)


def _case(shape, out_channels, seed, scale=1.0):
    generator = np.random.default_rng(seed)
    x = np.maximum(generator.standard_normal(shape), 0).astype(np.float32) * scale
    w = (generator.standard_normal((3, 3, shape[-1], out_channels))
         * np.sqrt(2 / (9 * shape[-1]))).astype(np.float32)
    b = (generator.standard_normal(out_channels) * 0.1).astype(np.float32)
    return x, w, b


@pytest.mark.parametrize("shape, out_channels, pads", [
    ((3, 13, 13, 32), 64, (0, 0, 0, 0)),   # the benchmark CNN's second block: floor mode
    ((2, 10, 9, 24), 5, (1, 1, 1, 1)),     # a border, odd width
    ((2, 8, 12, 30), 7, (0, 1, 1, 0)),     # uneven pads
])
@pytest.mark.parametrize("chunk", [winograd.CHUNK_TILES, 1])   # 1: an image at a time
def test_winograd_matches_the_direct_path(monkeypatch, counted, shape, out_channels, pads, chunk):
    monkeypatch.setattr(winograd, "CHUNK_TILES", chunk)
    x, w, b = _case(shape, out_channels, sum(shape))
    y = apply("conv_relu_max_pool", Tensor(x), Tensor(w), Tensor(b), pads=pads, pool=(2, 2))
    grad = np.random.default_rng(5).standard_normal(y.shape).astype(np.float32)
    got = _run(x, w, b, pads, grad)
    assert counted
    _direct(monkeypatch)
    expected = _run(x, w, b, pads, grad)
    for name, e, g in zip(("y", "x", "w", "b"), expected, got):
        np.testing.assert_allclose(g, e, rtol=RTOL, atol=RTOL * np.abs(e).max(), err_msg=name)


def _conv64(x, w):
    windows = np.lib.stride_tricks.sliding_window_view(x.astype(np.float64), (3, 3), (1, 2))
    return np.einsum("nhwckl,klco->nhwo", windows, w.astype(np.float64))


@pytest.mark.parametrize("scale", [1.0, 1e3])
def test_winograd_error_against_a_float64_convolution(counted, scale):
    """The largest error is a few 1e-7 of the largest convolution output (float32's epsilon is
    1.2e-7), at any scale of input."""
    x, w, b = _case((8, 13, 13, 32), 64, 0, scale)
    y = apply("conv_relu_max_pool", Tensor(x), Tensor(w), pads=(0,) * 4, pool=(2, 2))._data
    conv = _conv64(x, w)[:, :10, :10].reshape(8, 5, 2, 5, 2, 64)
    reference = np.maximum(conv.max(axis=(2, 4)), 0)
    assert counted
    assert np.abs(y - reference).max() <= 1e-6 * np.abs(conv).max()


def test_winograd_gradients_agree_with_float64_finite_differences(monkeypatch, counted):
    monkeypatch.setattr(winograd, "DTYPES", (np.dtype(np.float64),))
    generator = np.random.default_rng(3)
    arrays = [generator.standard_normal((2, 7, 8, 24)), generator.standard_normal((3, 3, 24, 3)),
              generator.standard_normal(3)]

    def block(x, w, b):
        return (apply("conv_relu_max_pool", x, w, b, pads=(1, 0, 1, 1), pool=(2, 2)) ** 2).sum()

    for autograd, numeric in numeric_vs_autograd(block, arrays):
        np.testing.assert_allclose(autograd, numeric, rtol=1e-5, atol=1e-7)
    assert counted


def test_winograd_ties_go_to_the_first_candidate(monkeypatch, counted):
    """A constant image makes the four candidates of a tile bit-equal (B^T d B keeps one term),
    so ties route to the first in row-major order, as the direct path routes them."""
    x = np.ones((2, 8, 8, 24), np.float32)
    w = np.random.default_rng(0).standard_normal((3, 3, 24, 4)).astype(np.float32)
    b = np.array([1.0, -1.0, 0.5, 2.0], np.float32)
    grad = np.random.default_rng(1).standard_normal((2, 3, 3, 4)).astype(np.float32)
    got = _run(x, w, b, (0,) * 4, grad)
    assert counted
    _direct(monkeypatch)
    expected = _run(x, w, b, (0,) * 4, grad)
    np.testing.assert_array_equal(got[1] != 0, expected[1] != 0)
    for e, g in zip(expected, got):
        np.testing.assert_allclose(g, e, rtol=RTOL, atol=RTOL * max(np.abs(e).max(), 1))


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # the direct path's own inf * 0
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_inputs_keep_the_direct_paths_numbers(monkeypatch, counted, bad):
    x, w, b = _case((2, 9, 9, 24), 4, 1)
    x[0, 3, 4, 5] = bad
    grad = np.ones((2, 3, 3, 4), np.float32)
    got = _run(x, w, b, (0,) * 4, grad)
    assert not counted
    _direct(monkeypatch)
    for e, g in zip(_run(x, w, b, (0,) * 4, grad), got):
        np.testing.assert_array_equal(g, e)


def test_the_benchmark_cnn_exports_with_its_winograd_block_within_1e_5(counted):
    """The exported graph (ONNX Conv, Relu, MaxPool) answers network.predict, whose second block
    takes the Winograd path, within 1e-5 absolute in ONNX Runtime at batches 1 and 32 (outputs
    up to 0.3: the largest difference measured 1.1e-7, as on the direct path)."""
    network = (Sequential().conv2d(32, 3).relu().max_pool2d(2).conv2d(64, 3).relu()
               .max_pool2d(2).flatten().dense(128).relu().dense(10)).lower(Shape(28, 28, 1),
                                                                          RandomStream(0))
    loss = MeanSquaredError()  # the raw outputs, not probabilities
    x = np.random.default_rng(2).standard_normal((32, 28, 28, 1)).astype(np.float32)
    session = ort_session(OnnxExport(Shape(28, 28, 1)).to_bytes(network, loss))
    for batch in (x[:1], x):
        np.testing.assert_allclose(session.run(None, {"input": batch})[0],
                                   network.predict(batch, loss), rtol=0, atol=1e-5)
    assert counted


def _awkward(shape, seed):
    """Values with signed zeros, subnormals and near-overflow ones among them (their sums may
    overflow to infinities, and those make NaNs further on: the bits are compared all the same)."""
    generator = np.random.default_rng(seed)
    a = generator.standard_normal(shape).astype(np.float32)
    special = np.array([0.0, -0.0, 1e-40, -1e-40, 1e-45, 3e38, -3e38, 1.0, -1.0], np.float32)
    places = generator.random(shape) < 0.1
    a[places] = special[generator.integers(0, len(special), int(places.sum()))]
    return a


def _bits(a):
    return a.view(np.uint32)


@pytest.mark.parametrize("images, tiles, channels", [(3, (5, 5), 32), (2, (1, 1), 24),
                                                     (4, (2, 3), 5), (1, (3, 1), 1)])
def test_the_compiled_input_transform_is_numpys_bit_for_bit(images, tiles, channels):
    """winograd_input (deepsharp.compiled) against input_transform on the same images (a range
    of them, the rest of v untouched): every bit, signed zeros and infinities included."""
    from deepsharp import _kernels as kernels  # (numba: the test extra installs it)

    th, tw = tiles
    xp = _awkward((images, 2 * th + 3, 2 * tw + 3, channels), sum(tiles) + channels)
    per = th * tw
    expected = np.full((16, images * per, channels), 7, np.float32)
    got = expected.copy()
    with np.errstate(all="ignore"):
        winograd.input_transform(xp[1:], tiles, expected.reshape(4, 4, images, *tiles,
                                                                   channels)[:, :, 1:])
        kernels.winograd_input(xp, got, 1, images, th, tw)
    np.testing.assert_array_equal(_bits(got), _bits(expected))


@pytest.mark.parametrize("rows, start, channels", [(75, 25, 64), (1, 0, 7), (12, 5, 3)])
def test_the_compiled_gradients_transform_is_numpys_bit_for_bit(rows, start, channels):
    """winograd_output_grad against output_grad on rows start.. of the candidates' gradients."""
    from deepsharp import _kernels as kernels

    dy = _awkward((4, start + rows + 3, channels), rows + channels)
    with np.errstate(all="ignore"):
        expected = winograd.output_grad(dy[:, start:start + rows])
        got = kernels.winograd_output_grad(dy, start, start + rows)
    np.testing.assert_array_equal(_bits(got), _bits(expected))


@pytest.mark.parametrize("images, tiles, channels", [(3, (5, 5), 32), (2, (1, 1), 3),
                                                     (2, (2, 3), 5), (1, (3, 1), 1)])
def test_the_compiled_input_gradient_scatter_is_numpys_bit_for_bit(images, tiles, channels):
    """winograd_input_scatter against input_grad's two _b_scatter passes (through input_grad,
    with and without compiled()): every place the tiles reach, in numpy's order of additions,
    the places past them untouched."""
    from deepsharp.compiled import compiled

    th, tw = tiles
    dm = _awkward((16, images * th * tw, 4), images + channels)
    u = _awkward((16, channels, 4), th + tw)
    expected = np.full((images, 2 * th + 3, 2 * tw + 3, channels), 9, np.float32)
    got = expected.copy()
    with np.errstate(all="ignore"):
        winograd.input_grad(dm, u, expected, tiles)
        with compiled():
            winograd.input_grad(dm, u, got, tiles)
    np.testing.assert_array_equal(_bits(got), _bits(expected))


@pytest.mark.parametrize("chunk", [winograd.CHUNK_TILES, 1])   # 1: an image a run
def test_the_winograd_block_gives_numpys_numbers_with_the_compiled_transforms(monkeypatch,
                                                                             counted, chunk):
    """The benchmark CNN's second block, forward and back (every gradient), with and without
    compiled(): the same bits, in one run and run by run."""
    from deepsharp.compiled import compiled, kernel

    monkeypatch.setattr(winograd, "CHUNK_TILES", chunk)
    x, w, b = _case((3, 13, 13, 32), 64, 11)
    grad = np.random.default_rng(12).standard_normal((3, 5, 5, 64)).astype(np.float32)
    expected = _run(x, w, b, (0, 0, 0, 0), grad)
    with compiled():
        assert kernel("winograd_input") is not None  # (the kernels run, not numpy's passes)
        assert kernel("winograd_output_grad") is not None
        assert kernel("winograd_input_scatter") is not None
        assert kernel("winograd_output_pool") is not None
        assert kernel("winograd_routed_grad") is not None
        got = _run(x, w, b, (0, 0, 0, 0), grad)
    assert len(counted) == (2 if chunk > 75 else 6)
    for a, e in zip(got, expected):
        np.testing.assert_array_equal(_bits(a), _bits(e))
