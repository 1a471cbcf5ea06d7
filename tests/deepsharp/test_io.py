"""Saving and loading: safetensors, strict by slot path, atomic."""

from __future__ import annotations

import json

import numpy as np
import pytest
from safetensors.numpy import load_file

import deepsharp
import deepsharp.files as files
import deepsharp.io as io
from deepsharp import RandomStream, Sequential, Shape
from deepsharp.errors import StateError
from tests.deepsharp.test_basics import TinyModule


def _network():
    return (Sequential().dense(6).gelu().dropout(0.1).dense(2).softmax()
            .lower(Shape(4), RandomStream(2)).with_features(["a", "b", "c", "d"]))


def test_save_and_load_give_the_same_network(tmp_path):
    network = _network()
    path = tmp_path / "model.safetensors"
    network.save(path)
    loaded = deepsharp.load(path)
    assert loaded.spec == network.spec and loaded.input_shape == Shape(4)
    assert loaded.features == ("a", "b", "c", "d") and loaded.io_names == (None, None)
    network.with_io_names("pixel_values", "logits").save(path)
    assert deepsharp.load(path).io_names == ("pixel_values", "logits")
    x = np.random.default_rng(0).standard_normal((5, 4)).astype(np.float32)
    np.testing.assert_array_equal(loaded(x), network(x))


def test_the_file_is_plain_safetensors_with_the_spec_as_json(tmp_path):
    path = tmp_path / "model.safetensors"
    _network().save(path)
    tensors = load_file(str(path))
    assert sorted(tensors) == ["0.bias", "0.weight", "3.bias", "3.weight"]
    from safetensors import safe_open

    with safe_open(str(path), framework="np") as handle:
        meta = handle.metadata()
    assert json.loads(meta["spec"])["layers"][1] == {"kind": "gelu", "approximate": "none"}
    assert meta["input_shape"] == "4"
    assert b"pickle" not in path.read_bytes()


def test_load_is_strict_by_slot_path(tmp_path):
    path = tmp_path / "model.safetensors"
    network = _network()
    state = network.state_dict()
    state.pop("3.bias")
    io._write(path, state, {"format": io.FORMAT_NETWORK, "spec": network.spec.to_json(),
                            "input_shape": "4", "features": "[]"})
    with pytest.raises(StateError, match="missing slots: 3.bias"):
        deepsharp.load(path)


def test_a_failed_save_leaves_the_old_file_whole(tmp_path, monkeypatch):
    path = tmp_path / "model.safetensors"
    _network().save(path)
    before = path.read_bytes()

    def broken_fsync(fd):
        raise OSError("disk full")

    monkeypatch.setattr(files.os, "fsync", broken_fsync)
    other = Sequential().dense(3).lower(Shape(4), RandomStream(5))
    with pytest.raises(OSError, match="disk full"):
        other.save(path)
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["model.safetensors"]  # no temporary left


def test_loading_something_else_is_named(tmp_path):
    path = tmp_path / "weights.safetensors"
    TinyModule(RandomStream(0)).save_weights(path)
    with pytest.raises(StateError, match="holds deepsharp.weights/1, expected deepsharp.network/1"):
        deepsharp.load(path)
    junk = tmp_path / "junk.safetensors"
    junk.write_bytes(b"not a safetensors file")
    with pytest.raises(StateError, match="not a readable safetensors file"):
        deepsharp.load(junk)


def test_module_weights_round_trip(tmp_path):
    source, target = TinyModule(RandomStream(0)), TinyModule(RandomStream(1))
    path = tmp_path / "tiny.safetensors"
    source.save_weights(path)
    target.load_weights(path)
    for key, value in source.state_dict().items():
        np.testing.assert_array_equal(target.state_dict()[key], value)


def test_a_network_carrying_a_preparation_is_not_saved_without_it(tmp_path):
    """A network file holds the stack, not the fitted preparation: saving would lose it (the
    network loaded would take prepared rows where it took raw ones), so save refuses by name and
    writes nothing; once the preparation is dropped, the stack saves."""
    from deepsharp.errors import SaveError
    from deepsharp.preparation import Standardizer

    network = _network()
    path = tmp_path / "model.safetensors"
    network.save(path)
    before = path.read_bytes()
    rows = np.random.default_rng(1).standard_normal((20, 4)).astype(np.float32)
    network.with_preparation(Standardizer.fit(rows))
    with pytest.raises(SaveError, match="carries a preparation \\(Standardizer\\)"):
        network.save(path)
    assert path.read_bytes() == before
    network.with_preparation(None).save(path)
    assert deepsharp.load(path).preparation is None


def test_a_checkpoint_callback_says_so_before_training_a_network_with_a_preparation(tmp_path):
    from deepsharp import SGD, MeanSquaredError
    from deepsharp.callbacks import ModelCheckpoint
    from deepsharp.errors import SpecError
    from deepsharp.preparation import Standardizer

    rows = np.random.default_rng(1).standard_normal((20, 4)).astype(np.float32)
    network = _network().with_preparation(Standardizer.fit(rows))
    weights = network.state_dict()["0.weight"].copy()
    with pytest.raises(SpecError, match="ModelCheckpoint: the network carries a preparation"):
        network.fit(rows, np.zeros((20, 2), np.float32), loss=MeanSquaredError(),
                    optimizer=SGD(0.1), callbacks=[ModelCheckpoint(tmp_path / "best.ds")],
                    progress=False)
    np.testing.assert_array_equal(network.state_dict()["0.weight"], weights)  # not trained
    assert not (tmp_path / "best.ds").exists()


def test_a_network_adapted_by_low_rank_keeps_what_it_carries():
    """with_low_rank makes a new network: its preparation, features and graph names come along
    (an export of it must take the raw rows the original took)."""
    from deepsharp.preparation import Standardizer

    rows = np.random.default_rng(1).standard_normal((20, 4)).astype(np.float32)
    network = _network().with_preparation(Standardizer.fit(rows)).with_io_names("x", "p")
    adapted = network.with_low_rank(2, on=["0"])
    assert adapted.preparation is network.preparation and adapted.io_names == ("x", "p")
    assert adapted.features == ("a", "b", "c", "d")
