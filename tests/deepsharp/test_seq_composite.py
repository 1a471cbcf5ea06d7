"""residual, concat, columns and low-rank adapters: values by hand, slot paths, masks through
branches, with_low_rank, refusals."""

from __future__ import annotations

import numpy as np
import pytest

from deepsharp import MeanSquaredError, RandomStream, SGD, Sequential, Shape
from deepsharp.errors import ShapeError, SpecError
from deepsharp.layers.base import Flow
from deepsharp.tensors import Tensor
from tests.support import assert_module_gradients


def test_residual_adds_the_branch_and_names_its_slots():
    network = Sequential().dense(2).residual(Sequential().dense(2).relu()).lower(Shape(2))
    assert sorted(network.state_dict()) == ["0.bias", "0.weight", "1.branch.0.bias",
                                            "1.branch.0.weight"]
    network.load_state_dict({"0.weight": np.eye(2, dtype=np.float32), "0.bias": np.zeros(2, np.float32),
                             "1.branch.0.weight": np.array([[1, -1], [2, 0]], np.float32),
                             "1.branch.0.bias": np.array([0.5, 0], np.float32)})
    out = network(np.array([[1.0, 1.0]], np.float32))
    np.testing.assert_allclose(out, [[1 + 3.5, 1 + 0]])  # relu(x W + b) = (3.5, -1 -> 0)


def test_concat_and_columns_by_hand():
    spec = Sequential().concat(Sequential(), Sequential().columns(1, 3).dense(1, bias=False),
                               Sequential().columns(0, 1))
    network = spec.lower(Shape(3))
    assert network.output_shape == Shape(5)
    assert list(network.state_dict()) == ["0.branches.1.1.weight"]
    network.load_state_dict({"0.branches.1.1.weight": np.array([[2.0], [3.0]], np.float32)})
    np.testing.assert_allclose(network(np.array([[1.0, 2.0, 3.0]], np.float32)),
                               [[1, 2, 3, 13, 1]])


def test_branches_see_the_mask():
    spec = Sequential().embedding(5, 2, padding_index=0).residual(Sequential().lstm(2, return_sequences=True))
    network = spec.lower(Shape(4), RandomStream(2))
    ids = np.array([[1, 2, 0, 0]])
    flow = network.call(Flow(Tensor(ids)))
    np.testing.assert_array_equal(flow.mask._data, ids != 0)
    lstm_out = network.steps[1].branch.call(network.steps[0].call(Flow(Tensor(ids)))).value._data
    np.testing.assert_array_equal(lstm_out[0, 2:], 0)  # the branch's LSTM stopped at the length


def test_composite_gradients():
    network = Sequential().residual(Sequential().dense(3).tanh()).concat(
        Sequential().dense(2), Sequential().columns(1, 3)).lower(Shape(3), RandomStream(1))
    assert_module_gradients(network, np.random.default_rng(0).standard_normal((4, 3)))


def test_with_low_rank_answers_as_before_and_trains_only_the_pairs():
    base = Sequential().dense(6).relu().residual(Sequential().dense(6)).dense(2).lower(
        Shape(4), RandomStream(1))
    x = np.random.default_rng(1).standard_normal((16, 4)).astype(np.float32)
    adapted = base.with_low_rank(2, on=["0", "2.branch.0"], alpha=4.0)
    assert repr(adapted.spec.layers[0]) .startswith("LowRankDense")
    np.testing.assert_array_equal(adapted(x), base(x))
    state = adapted.state_dict()
    assert state["0.lora_a"].shape == (4, 2) and state["0.lora_b"].shape == (2, 6)
    np.testing.assert_array_equal(state["2.branch.0.lora_b"], 0)
    trainable = sorted(path for path, _ in adapted.trainable_parameters())
    assert trainable == ["0.lora_a", "0.lora_b", "2.branch.0.lora_a", "2.branch.0.lora_b"]
    before = adapted.state_dict()
    adapted.fit(x, np.ones((16, 2), np.float32), loss=MeanSquaredError(), optimizer=SGD(lr=0.1),
                epochs=2, batch_size=8)
    after = adapted.state_dict()
    changed = sorted(p for p in after if not np.array_equal(before[p], after[p]))
    assert changed == trainable
    kept = base.with_low_rank(3, on="3", freeze_rest=False)
    assert ("0.weight" in dict(kept.trainable_parameters())
            and "3.weight" not in dict(kept.trainable_parameters()))


def test_low_rank_dense_by_hand_and_gradients():
    network = Sequential().low_rank_dense(1, 1, alpha=2.0).lower(Shape(2))
    network.load_state_dict({"0.weight": np.array([[1.0], [2.0]], np.float32),
                             "0.bias": np.array([0.5], np.float32),
                             "0.lora_a": np.array([[3.0], [-1.0]], np.float32),
                             "0.lora_b": np.array([[0.25]], np.float32)})
    # x W + b + (x A) B * alpha / rank with x = (1, 1): 3 + 0.5 + 2 * 0.25 * 2
    np.testing.assert_allclose(network(np.array([[1.0, 1.0]], np.float32)), [[4.5]])
    assert_module_gradients(network, np.random.default_rng(0).standard_normal((3, 2)))


@pytest.mark.parametrize("call, message", [
    (lambda: Sequential().residual(Sequential()),
     "residual: branch must hold at least one layer (x + x is not a residual)"),
    (lambda: Sequential().residual(3), "residual: branch must be a Sequential, received int"),
    (lambda: Sequential().concat(Sequential()), "concat: branches must be two or more"),
    (lambda: Sequential().concat(Sequential(), "dense"), "concat: branch 1 must be a Sequential, received str"),
    (lambda: Sequential().columns(4, 2), "columns: stop must be above start (4), received 2"),
    (lambda: Sequential().low_rank_dense(4, 0), "low_rank_dense: rank must be greater than 0"),
])
def test_verbs_refuse_bad_arguments(call, message):
    with pytest.raises(SpecError) as caught:
        call()
    assert message in str(caught.value)


@pytest.mark.parametrize("spec, shape, message", [
    (Sequential().residual(Sequential().dense(3)), Shape(4),
     "the branch gives 3; a residual needs it to give back the shape it takes, 4"),
    (Sequential().concat(Sequential(), Sequential().lstm(2)), Shape(3, 4),
     "the branches give 3x4, 2; a concat needs them equal but for the last axis"),
    (Sequential().columns(1, 5), Shape(4), "stop 5 is beyond the 4 channels of the last axis"),
])
def test_lowering_refuses_shapes(spec, shape, message):
    with pytest.raises(ShapeError) as caught:
        spec.lower(shape)
    assert message in str(caught.value)


def test_with_low_rank_refusals():
    network = Sequential().dense(3).relu().residual(Sequential().dense(3)).lower(Shape(2))
    with pytest.raises(SpecError, match=r"with_low_rank: place 1 holds relu\(\), not a dense layer"):
        network.with_low_rank(2, on=["1"])
    with pytest.raises(SpecError, match=r"place '2.branch.4': the stack has 1 layers"):
        network.with_low_rank(2, on=["2.branch.4"])
    with pytest.raises(SpecError, match=r"place '1.branch.0': layer 1 \(relu\(\)\) has no branch"):
        network.with_low_rank(2, on=["1.branch.0"])
    with pytest.raises(SpecError, match="with_low_rank: rank must be a positive integer, received 0"):
        network.with_low_rank(0, on=["0"])
    with pytest.raises(SpecError, match="with_low_rank: on must name at least one place"):
        network.with_low_rank(2, on=[])
    with pytest.raises(SpecError, match="place 'x.1' is not a place in a stack"):
        network.with_low_rank(2, on=["x.1"])


def test_nested_stacks_save_and_load(tmp_path):
    from deepsharp import load

    spec = (Sequential().embedding(20, 4, padding_index=0)
            .residual(Sequential().lstm(4, return_sequences=True).dropout(0.1))
            .concat(Sequential(), Sequential().multi_head_attention(2, 4).gaussian_noise(0.1))
            .gru(3).dense(2))
    network = spec.lower(Shape(6), RandomStream(4)).with_low_rank(2, on=["4"])
    assert Sequential.from_json(network.spec.to_json()) == network.spec
    network.save(tmp_path / "net.safetensors")
    loaded = load(tmp_path / "net.safetensors")
    ids = np.array([[3, 4, 5, 0, 0, 0], [1, 2, 3, 4, 5, 6]])
    np.testing.assert_array_equal(loaded(ids), network(ids))
    assert loaded.steps[4].weight.frozen and not loaded.steps[4].lora_a.frozen


def test_gate_multiplies_by_the_branch_broadcast_and_names_its_slots():
    """x * branch(x): a squeeze-and-excitation branch pools the places to (1, 1, C)."""
    se = Sequential().global_avg_pool(keep_axes=True).dense(2, bias=False).sigmoid()
    network = Sequential().gate(se).lower(Shape(2, 2, 2))
    assert sorted(network.state_dict()) == ["0.branch.1.weight"]
    network.load_state_dict({"0.branch.1.weight": np.array([[1, 0], [0, -1]], np.float32)})
    x = np.array([[[[1, 2], [3, 4]], [[5, 6], [7, 8]]]], np.float32)  # (1, 2, 2, 2)
    means = x.mean(axis=(1, 2))  # (4, 5) per channel
    weights = 1 / (1 + np.exp(-np.array([means[0, 0], -means[0, 1]])))
    np.testing.assert_allclose(network(x), x * weights, rtol=1e-6)


def test_gate_gradients_and_a_whole_shape_branch():
    network = Sequential().dense(3).gate(Sequential().dense(3).sigmoid()).gate(
        Sequential().global_avg_pool(keep_axes=True).dense(3).tanh()).lower(Shape(4, 2),
                                                                          RandomStream(3))
    assert_module_gradients(network, np.random.default_rng(2).standard_normal((3, 4, 2)))


@pytest.mark.parametrize("branch, message", [
    (Sequential().dense(3), "the branch gives 4x3; a gate multiplies x 4x5 by it, so each of its "
                            "axes must be x's size or 1"),
    (Sequential().global_avg_pool(), "the branch gives 5; a gate multiplies x 4x5 by it"),
])
def test_gate_refuses_a_branch_that_does_not_broadcast(branch, message):
    with pytest.raises(ShapeError, match=message):
        Sequential().gate(branch).lower(Shape(4, 5))


def test_gate_refuses_an_empty_branch_and_a_non_sequential():
    with pytest.raises(SpecError, match="x \\* x is not a gate"):
        Sequential().gate(Sequential())
    with pytest.raises(SpecError, match="gate: branch must be a Sequential, received int"):
        Sequential().gate(3)
