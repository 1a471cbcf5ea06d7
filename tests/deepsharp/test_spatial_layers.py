"""The spatial layers on small cases worked by hand, their initialisation, and their refusals."""

from __future__ import annotations

import math

import numpy as np
import pytest

from deepsharp import (
    SGD, Adam, CrossEntropy, MeanSquaredError, RandomStream, Sequential, Shape, load,
)
from deepsharp.errors import OpError, ShapeError, SpecError
from deepsharp.run import running
from deepsharp.tensors import Tensor


def run(spec: Sequential, x, state: dict | None = None, shape: Shape | None = None) -> np.ndarray:
    """The evaluation pass of `spec` on the batch x (numbers as nested lists)."""
    x = np.asarray(x, np.float32)
    network = spec.lower(shape or Shape(*x.shape[1:]), RandomStream(0))
    if state:
        network.load_state_dict({k: np.asarray(v, np.float32) for k, v in state.items()})
    return network(x)


def series(*values) -> list:
    """A batch of one series of one channel."""
    return [[[v] for v in values]]


# -- convolutions ----------------------------------------------------------------------------------
def test_conv1d_valid_and_causal():
    kernel = {"0.weight": [[[1.0]], [[0.0]], [[-1.0]]], "0.bias": [0.5]}
    # valid: y[t] = x[t] - x[t + 2] + 0.5
    np.testing.assert_allclose(run(Sequential().conv1d(1, 3), series(1, 2, 3, 4, 5), kernel)[0, :, 0],
                               [-1.5, -1.5, -1.5])
    # causal: y[t] = x[t - 2] - x[t] + 0.5, zeros before the first step
    out = run(Sequential().conv1d(1, 3, padding="causal"), series(1, 2, 3, 4, 5), kernel)
    np.testing.assert_allclose(out[0, :, 0], [-0.5, -1.5, -1.5, -1.5, -1.5])


def test_conv1d_same_follows_tensorflows_rule():
    """Length 5, kernel 2, stride 2: ceil(5 / 2) = 3 outputs, a border of (3 - 1) 2 + 2 - 5 = 1
    place, put at the end: windows [1, 2], [3, 4], [5, 0]."""
    out = run(Sequential().conv1d(1, 2, stride=2, padding="same", bias=False), series(1, 2, 3, 4, 5),
              {"0.weight": [[[1.0]], [[1.0]]]})
    np.testing.assert_allclose(out[0, :, 0], [3, 7, 5])


def test_conv2d_padding_counts_neighbours():
    out = run(Sequential().conv2d(1, 3, padding=1, bias=False), np.ones((1, 3, 3, 1)),
              {"0.weight": np.ones((3, 3, 1, 1))})
    np.testing.assert_allclose(out[0, :, :, 0], [[4, 6, 4], [6, 9, 6], [4, 6, 4]])


def test_conv2d_groups_keep_channels_apart():
    """Two groups of one channel: each output channel reads its own input channel only."""
    x = np.stack([[[1, 2], [3, 4]], [[5, 6], [7, 8]]], axis=-1)[None]  # (1, 2, 2, 2)
    kernel = np.zeros((2, 2, 1, 2))
    kernel[:, :, 0, 0] = [[1, 0], [0, 1]]  # channel a: 1 + 4
    kernel[:, :, 0, 1] = [[0, 1], [1, 0]]  # channel b: 6 + 7
    out = run(Sequential().conv2d(2, 2, groups=2, bias=False), x, {"0.weight": kernel})
    np.testing.assert_allclose(out[0, 0, 0], [5, 13])


def test_conv2d_dilation_and_stride():
    x = np.arange(25, dtype=np.float32).reshape(1, 5, 5, 1)
    out = run(Sequential().conv2d(1, 2, dilation=2, stride=2, bias=False), x,
              {"0.weight": np.ones((2, 2, 1, 1))})
    # windows of places (0, 2) x (0, 2) from each corner: x[0,0]+x[0,2]+x[2,0]+x[2,2] = 24 ...
    np.testing.assert_allclose(out[0, :, :, 0], [[24, 32], [64, 72]])


def test_conv_transpose1d_spreads_each_step_over_the_kernel():
    kernel = {"0.weight": np.ones((3, 1, 1))}
    x = series(1, 2)
    # stride 2: 1 at places 0..2, 2 at places 2..4
    np.testing.assert_allclose(run(Sequential().conv_transpose1d(1, 3, stride=2, bias=False), x,
                                   kernel)[0, :, 0], [1, 1, 3, 2, 2])
    # padding 1 cuts a place from each end; output_padding 1 adds one at the end first
    out = run(Sequential().conv_transpose1d(1, 3, stride=2, padding=1, output_padding=1,
                                            bias=False), x, kernel)
    np.testing.assert_allclose(out[0, :, 0], [1, 3, 2, 2])
    # "same": out = n * stride, the cut (3 - 1) + 1 - 2 = 1 place at the end
    out = run(Sequential().conv_transpose1d(1, 3, stride=2, padding="same", bias=False), x, kernel)
    np.testing.assert_allclose(out[0, :, 0], [1, 1, 3, 2])


def test_convolutions_start_as_pytorchs():
    network = Sequential().conv2d(64, 3, groups=2).conv_transpose2d(32, 2).lower(
        Shape(8, 8, 16), RandomStream(1))
    state = network.state_dict()
    assert state["0.weight"].shape == (3, 3, 8, 64) and state["1.weight"].shape == (2, 2, 64, 32)
    for path, fan_in in (("0", 8 * 9), ("1", 32 * 4)):  # C_in / groups x window; C_out x window
        bound = 1 / math.sqrt(fan_in)
        weight, bias = state[f"{path}.weight"], state[f"{path}.bias"]
        assert 0.97 * bound < np.abs(weight).max() <= bound
        assert abs(weight.std() - bound / math.sqrt(3)) < 0.1 * bound
        assert np.abs(bias).max() <= bound


# -- pools -----------------------------------------------------------------------------------------
def test_max_pool_takes_the_largest_and_sends_the_gradient_to_the_first():
    x = np.arange(16, dtype=np.float32).reshape(1, 4, 4, 1)
    np.testing.assert_allclose(run(Sequential().max_pool2d(2), x)[0, :, :, 0], [[5, 7], [13, 15]])
    network = Sequential().max_pool2d(2).lower(Shape(4, 4, 1))
    tied = Tensor(np.ones((1, 4, 4, 1), np.float32), requires_grad=True)
    network.forward(tied).sum().backward()
    expected = np.zeros((4, 4))
    expected[::2, ::2] = 1  # each window's first place
    np.testing.assert_array_equal(tied.grad[0, :, :, 0], expected)


def test_avg_pool_counts_the_border_only_when_asked():
    x = series(1, 2, 3, 4)
    out = run(Sequential().avg_pool1d(3, stride=1, padding=1), x)
    np.testing.assert_allclose(out[0, :, 0], [1.5, 2, 3, 3.5])
    out = run(Sequential().avg_pool1d(3, stride=1, padding=1, count_include_pad=True), x)
    np.testing.assert_allclose(out[0, :, 0], [1, 2, 3, 7 / 3])


def test_ceil_mode_counts_a_last_partial_window_as_pytorch():
    """5 places, windows of 2 at stride 2: floor gives 2, ceil 3 (the last holds the fifth place
    alone, and a mean divides by the one place it holds)."""
    x = series(1, 2, 3, 4, 5)
    np.testing.assert_allclose(run(Sequential().max_pool1d(2, ceil_mode=True), x)[0, :, 0],
                               [2, 4, 5])
    np.testing.assert_allclose(run(Sequential().avg_pool1d(2, ceil_mode=True), x)[0, :, 0],
                               [1.5, 3.5, 5])


def test_ceil_mode_with_padding_same_is_refused_by_layer_and_function():
    from deepsharp import functional as F

    with pytest.raises(ShapeError, match="ceil_mode takes an explicit padding"):
        Sequential().max_pool1d(2, padding="same", ceil_mode=True).lower(Shape(5, 1))
    with pytest.raises(OpError, match="pool: ceil_mode takes an explicit padding"):
        F.max_pool(Tensor(np.ones((1, 5, 1), np.float32)), 2, padding="same", ceil_mode=True)
    with pytest.raises(OpError, match="pool: ceil_mode must be True or False"):
        F.avg_pool(Tensor(np.ones((1, 5, 1), np.float32)), 2, ceil_mode="yes")


def test_global_pools():
    x = np.arange(12, dtype=np.float32).reshape(1, 3, 2, 2)  # places (3, 2), channels 2
    np.testing.assert_allclose(run(Sequential().global_avg_pool(), x), [[5, 6]])
    np.testing.assert_allclose(run(Sequential().global_max_pool(), x), [[10, 11]])
    assert run(Sequential().global_avg_pool(keep_axes=True), x).shape == (1, 1, 1, 2)


def test_adaptive_pools_take_pytorchs_bins():
    """5 places in 2 bins: [0, 3) and [2, 5)."""
    x = series(1, 2, 3, 4, 5)
    np.testing.assert_allclose(run(Sequential().adaptive_avg_pool(2), x)[0, :, 0], [2, 4])
    np.testing.assert_allclose(run(Sequential().adaptive_max_pool(2), x)[0, :, 0], [3, 5])


# -- pad, upsample, flatten, reshape -------------------------------------------------------------
@pytest.mark.parametrize("mode, value, expected", [
    ("constant", 9.0, [9, 9, 1, 2, 3, 9]),
    ("reflect", 0.0, [3, 2, 1, 2, 3, 2]),
    ("edge", 0.0, [1, 1, 1, 2, 3, 3]),
])
def test_pad_modes(mode, value, expected):
    out = run(Sequential().pad(((2, 1),), mode=mode, value=value), series(1, 2, 3))
    np.testing.assert_allclose(out[0, :, 0], expected)


def test_upsample_nearest_and_bilinear():
    x = series(1, 2)
    np.testing.assert_allclose(run(Sequential().upsample(scale=2), x)[0, :, 0], [1, 1, 2, 2])
    # half-pixel centres (o + 0.5) / 2 - 0.5, clamped at 0: 0, 0.25, 0.75, 1.25 -> the last place
    np.testing.assert_allclose(run(Sequential().upsample(size=4, mode="bilinear"), x)[0, :, 0],
                               [1, 1.25, 1.75, 2])
    np.testing.assert_allclose(run(Sequential().upsample(size=4, mode="bilinear",
                                                         align_corners=True), x)[0, :, 0],
                               [1, 4 / 3, 5 / 3, 2], rtol=1e-6)


def test_flatten_lays_an_image_out_place_by_place():
    x = np.arange(8, dtype=np.float32).reshape(1, 2, 2, 2)
    np.testing.assert_array_equal(run(Sequential().flatten(), x), [np.arange(8)])
    np.testing.assert_array_equal(run(Sequential().reshape(Shape(4, 2)), x)[0],
                                  np.arange(8).reshape(4, 2))


# -- normalisations --------------------------------------------------------------------------------
def test_layer_rms_and_instance_norms():
    s = math.sqrt(1.5)
    np.testing.assert_allclose(run(Sequential().layer_norm(eps=1e-12), [[1.0, 2.0, 3.0]]),
                               [[-s, 0, s]], rtol=1e-6)
    rms = math.sqrt(12.5)
    np.testing.assert_allclose(run(Sequential().rms_norm(eps=1e-12), [[3.0, 4.0]]),
                               [[3 / rms, 4 / rms]], rtol=1e-6)
    np.testing.assert_allclose(run(Sequential().instance_norm(eps=1e-12), series(1, 3))[0, :, 0],
                               [-1, 1], rtol=1e-6)


def test_group_norm_normalises_each_group_over_its_channels_and_places():
    x = np.array([[[1, 3, 10, 10], [3, 1, 20, 40]]], np.float32)  # 2 places, 4 channels
    out = run(Sequential().group_norm(2, eps=1e-12), x)
    np.testing.assert_allclose(out[0, :, :2], [[-1, 1], [1, -1]], rtol=1e-6)
    group = np.array([10, 10, 20, 40.0])
    np.testing.assert_allclose(out[0, :, 2:].T.reshape(-1), ((group - group.mean()) / group.std())
                               [[0, 2, 1, 3]], rtol=1e-5)


def test_batch_norm_running_statistics():
    """One training step on the rows [1] and [3]: mean 2, biased variance 1 (used to normalise),
    unbiased 2 (kept): running mean 0.1 * 2, running variance 0.9 + 0.1 * 2."""
    network = Sequential().batch_norm(eps=1e-12).lower(Shape(1), RandomStream(0))
    network.train()
    with running(RandomStream(0), 0):
        out = network.forward(Tensor(np.array([[1.0], [3.0]], np.float32)))
    np.testing.assert_allclose(out._data[:, 0], [-1, 1], rtol=1e-6)
    state = network.state_dict()
    np.testing.assert_allclose(state["0.running_mean"], [0.2], rtol=1e-6)
    np.testing.assert_allclose(state["0.running_var"], [1.1], rtol=1e-6)
    np.testing.assert_allclose(network(np.array([[1.2]], np.float32)), [[1 / math.sqrt(1.1)]],
                               rtol=1e-6)


def test_batch_norm_refuses_to_train_on_one_value_per_channel():
    network = Sequential().batch_norm().lower(Shape(3), RandomStream(0))
    network.train()
    with pytest.raises(OpError, match=r"batch_norm at place 0: training needs more than one "
                                      r"value per channel .* received a batch of shape \(1, 3\)"):
        network.forward(Tensor(np.ones((1, 3), np.float32)))


def test_an_epochs_last_batch_of_one_example_names_the_batch_norm_and_the_remedy():
    """Found by the fuzz of random stacks: 9 images in batches of 8 leave a last batch of one,
    pooled to one place, so one value per channel; the error names the layer and what to do."""
    network = (Sequential().conv2d(4, 3).max_pool2d(2).batch_norm().flatten().dense(2)
               .lower(Shape(4, 4, 1), RandomStream(0)))
    x = np.random.default_rng(0).standard_normal((9, 4, 4, 1)).astype(np.float32)
    with pytest.raises(OpError, match=r"batch_norm at place 2: .*shape \(1, 1, 1, 4\).*"
                                      r"choose a batch_size"):
        network.fit(x, np.zeros(9, np.int64), loss=CrossEntropy(), optimizer=Adam(1e-3),
                    batch_size=8, shuffle=False, progress=False)


def test_spatial_dropout_drops_whole_channels_in_training_only():
    network = Sequential().spatial_dropout(0.5).lower(Shape(6, 5, 8), RandomStream(0))
    x = np.ones((4, 6, 5, 8), np.float32)
    network.train()
    with running(RandomStream(3), 7):
        out = network.forward(Tensor(x))._data
    per_channel = out.reshape(4, 30, 8)
    assert np.all(per_channel == per_channel[:, :1])  # every place of a channel alike
    assert set(np.unique(out)) == {0.0, 2.0}
    np.testing.assert_array_equal(network(x), x)


# -- refusals ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("call, message", [
    (lambda: Sequential().conv2d(0, 3), "conv2d: filters must be greater than 0, received 0"),
    (lambda: Sequential().conv2d(4, (3, 3, 3)),
     "conv2d: kernel must be one integer or 2 (one per place axis), received (3, 3, 3)"),
    (lambda: Sequential().conv2d(4, 3, padding="causal"),
     "conv2d: padding 'causal' is a padding of series only"),
    (lambda: Sequential().conv1d(6, 3, groups=4), "conv1d: groups must divide filters (6), received 4"),
    (lambda: Sequential().conv2d(4, 3, padding="full"), "conv2d: padding"),
    (lambda: Sequential().conv_transpose2d(4, 3, stride=2, output_padding=2),
     "conv_transpose2d: dilation must leave output_padding 2 below the stride or the dilation"),
    (lambda: Sequential().max_pool2d(0), "max_pool2d: window"),
    (lambda: Sequential().upsample(), "upsample: arguments give exactly one of scale and size"),
    (lambda: Sequential().upsample(scale=2, align_corners=True),
     "upsample: align_corners applies to mode 'bilinear' only, received True"),
    (lambda: Sequential().upsample(scale=2, mode="bicubic"), "upsample: mode must be 'nearest' or"),
    (lambda: Sequential().pad(1, mode="wrap"), "pad: mode must be 'constant', 'reflect' or 'edge'"),
    (lambda: Sequential().batch_norm(momentum=2), "batch_norm: momentum must be less than or equal"),
    (lambda: Sequential().group_norm(0), "group_norm: groups must be greater than 0, received 0"),
    (lambda: Sequential().spatial_dropout(1.0), "spatial_dropout: rate must be less than 1"),
])
def test_verbs_refuse_bad_arguments(call, message):
    with pytest.raises(SpecError) as caught:
        call()
    assert message in str(caught.value)


@pytest.mark.parametrize("spec, shape, message", [
    (Sequential().conv2d(4, 3), Shape(28, 28),
     "conv2d(4, 3) at place 0 cannot take an input of shape 28x28: needs an image (height x width "
     "x channels), received an input of shape 28x28"),
    (Sequential().conv2d(4, 5), Shape(3, 3, 1),
     "a window of 5 places does not fit in the 3 places of axis 0 padded by 0 and 0"),
    (Sequential().conv2d(4, 3, groups=2), Shape(8, 8, 3),
     "2 groups must divide the 3 input channels"),
    (Sequential().max_pool2d(2, padding=2), Shape(8, 8, 3),
     "a padding of 2 is more than half the window of 2 places"),
    (Sequential().conv_transpose1d(2, 3, padding=4), Shape(2, 1),
     "the padding 4 leaves no output places"),
    (Sequential().conv_transpose1d(2, 1, stride=3, padding="same"), Shape(5, 1),
     "padding 'same' needs (kernel - 1) dilation + 1 + output_padding >= stride"),
    (Sequential().adaptive_avg_pool((2, 2)), Shape(8, 3),
     "size (2, 2) needs 2 place axes, the input has 1"),
    (Sequential().pad(((1, 1),), mode="reflect"), Shape(1, 3),
     "a reflection of 1 places needs more than 1"),
    (Sequential().upsample(scale=(2, 2)), Shape(8, 3), "scale (2, 2) gives 2 place axes"),
    (Sequential().reshape((5,)), Shape(2, 3), "cannot lay 6 values out as 5 (5 values)"),
    (Sequential().group_norm(4), Shape(6), "4 groups must divide the 6 channels"),
    (Sequential().instance_norm(), Shape(6), "needs places and channels"),
    (Sequential().global_avg_pool(), Shape(6), "needs places and channels"),
])
def test_lowering_refuses_shapes(spec, shape, message):
    with pytest.raises(ShapeError) as caught:
        spec.lower(shape, RandomStream(0))
    assert message in str(caught.value)


def test_a_spatial_network_saves_and_loads_with_its_running_statistics(tmp_path):
    spec = (Sequential().conv2d(4, 3, padding="same").batch_norm().relu().max_pool2d(2)
            .group_norm(2).upsample(scale=2, mode="bilinear").flatten().dense(3))
    network = spec.lower(Shape(6, 6, 2), RandomStream(4))
    x = np.random.default_rng(0).standard_normal((8, 6, 6, 2)).astype(np.float32)
    network.fit(x, np.zeros((8, 3), np.float32), loss=MeanSquaredError(), optimizer=SGD(lr=0.1),
                epochs=2, batch_size=4)
    assert not np.allclose(network.state_dict()["1.running_var"], 1)
    network.save(tmp_path / "net.safetensors")
    loaded = load(tmp_path / "net.safetensors")
    assert loaded.spec == spec
    np.testing.assert_array_equal(loaded(x), network(x))
