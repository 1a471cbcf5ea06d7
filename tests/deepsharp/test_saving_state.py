"""Saving what training needs: freeze flags survive save/load; a module written as code saves and
loads its state through the same safetensors format with a strict key check; an optimizer with
nothing to train refuses to be made or stepped; fit refuses a module with nothing trainable."""

from __future__ import annotations

import numpy as np
import pytest

from deepsharp import (
    SGD, Adam, AdamW, MeanSquaredError, Module, Parameter, RMSprop, RandomStream, Sequential,
    Shape, Tensor, load, load_state_dict, save, save_state_dict,
)
from deepsharp.errors import SpecError, StateError, TrainingError


class Scaled(Module):
    """A module written as code: a stack, a scale and a frozen offset."""

    def __init__(self, seed=0):
        super().__init__()
        self.body = Sequential().dense(4).relu().dense(2).lower(Shape(3), RandomStream(seed))
        self.scale = Parameter(np.full(2, 1.5, np.float32))
        self.offset = Parameter(np.array([0.25, -0.5], np.float32), frozen=True)

    def forward(self, x):
        return self.body(x) * self.scale + self.offset


def _frozen(module) -> list[str]:
    return [path for path, p in module.named_parameters() if not p.requires_grad]


def test_freeze_flags_survive_a_network_save_and_load(tmp_path):
    network = Sequential().dense(4).relu().dense(1).lower(Shape(3), RandomStream(0))
    network.steps[0].weight.requires_grad = False
    save(network, tmp_path / "net.ds")
    loaded = load(tmp_path / "net.ds")
    assert _frozen(loaded) == ["0.weight"]
    before = loaded.state_dict()["0.weight"]
    x = np.random.default_rng(0).standard_normal((20, 3)).astype(np.float32)
    loaded.fit(x, x[:, :1], loss=MeanSquaredError(), optimizer=SGD(0.1), verbose=0)
    np.testing.assert_array_equal(loaded.state_dict()["0.weight"], before)  # still frozen


def test_a_module_written_as_code_saves_and_loads_its_state_and_flags(tmp_path):
    module = Scaled(seed=0)
    module.scale.requires_grad = False
    module.offset.requires_grad = True
    module.save_weights(tmp_path / "w.ds")
    other = Scaled(seed=9)
    other.load_weights(tmp_path / "w.ds")
    assert _frozen(other) == ["scale"]
    for key, value in module.state_dict().items():
        np.testing.assert_array_equal(other.state_dict()[key], value)
    save(module, tmp_path / "same.ds")  # a module that is not a stack: its weights
    third = Scaled(seed=5)
    third.load_weights(tmp_path / "same.ds")
    np.testing.assert_array_equal(third.state_dict()["body.0.weight"],
                                  module.state_dict()["body.0.weight"])
    with pytest.raises(StateError, match="holds deepsharp.weights/1, expected deepsharp.network/1: "
                                         "the weights of a Scaled written as code; make the "
                                         "module in your code"):
        load(tmp_path / "same.ds")


def test_a_state_dict_round_trips_with_a_strict_key_check(tmp_path):
    module = Scaled(seed=0)
    save_state_dict(module.state_dict(), tmp_path / "state.safetensors")
    state = load_state_dict(tmp_path / "state.safetensors")
    other = Scaled(seed=3)
    other.load_state_dict(state)
    for key, value in module.state_dict().items():
        np.testing.assert_array_equal(other.state_dict()[key], value)
    extra = {**state, "head.bias": np.zeros(2, np.float32)}
    del extra["scale"]
    with pytest.raises(StateError, match="missing slots: scale; unexpected slots: head.bias"):
        other.load_state_dict(extra)
    save_state_dict({**state, "body.0.weight": np.zeros((3, 5), np.float32)},
                    tmp_path / "wrong.safetensors")
    with pytest.raises(StateError, match="slot body.0.weight: expected shape \\(3, 4\\), received "
                                         "\\(3, 5\\)"):
        other.load_state_dict(load_state_dict(tmp_path / "wrong.safetensors"))
    other.load_state_dict({"scale": np.ones(2, np.float32)}, strict=False)
    with pytest.raises(StateError, match="state must be a dict of arrays by path"):
        save_state_dict([1, 2], tmp_path / "bad.safetensors")


@pytest.mark.parametrize("kind", [SGD, Adam, AdamW, RMSprop])
def test_an_optimizer_with_nothing_to_train_refuses(kind):
    with pytest.raises(SpecError, match=f"{kind.__name__}: no parameters to train \\(received 0"):
        kind(parameters=[])
    frozen = Parameter(np.ones(2, np.float32), frozen=True)
    with pytest.raises(SpecError, match="received 1, all frozen or none"):
        kind(parameters=[("p", frozen)])
    with pytest.raises(TrainingError, match=f"{kind.__name__}.step: no parameters are bound"):
        kind().step()
    with pytest.raises(SpecError, match="parameters\\[0\\] is 3, not a Parameter"):
        kind(parameters=[3])


def test_an_optimizer_made_with_parameters_trains_them():
    module = Scaled()
    optimizer = Adam(1e-2, parameters=module.parameters())   # bare Parameters, PyTorch's way
    x = Tensor(np.ones((4, 3), np.float32))
    before = module.scale._data.copy()
    loss = (module(x) * module(x)).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    assert not np.array_equal(module.scale._data, before)
    assert np.array_equal(module.offset._data, [0.25, -0.5])  # frozen: left out


def test_fit_refuses_a_module_with_nothing_trainable():
    module = Scaled()
    for p in module.parameters():
        p.requires_grad = False
    x = np.ones((8, 3), np.float32)
    with pytest.raises(TrainingError, match="fit: Scaled has nothing to train: every parameter is "
                                            "frozen, or it has none"):
        module.fit(x, np.ones((8, 2), np.float32), loss=MeanSquaredError(), optimizer=SGD())


def test_fit_refuses_a_graph_read_back_with_no_parameters():
    from deepsharp_export_onnx import OnnxExport, OnnxFile

    network = Sequential().relu().lower(Shape(3), RandomStream(0))
    imported = OnnxFile(MeanSquaredError()).read(OnnxExport(Shape(3)).to_bytes(network,
                                                                             MeanSquaredError()))
    with pytest.raises(TrainingError, match="fit: Network has nothing to train"):
        imported.fit(np.ones((4, 3), np.float32), np.ones((4, 3), np.float32),
                     loss=MeanSquaredError(), optimizer=SGD())
