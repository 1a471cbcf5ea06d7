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


def _prepared_network():
    from deepsharp.preparation import Chain, Columns, FillMissing, IndexEncoder, OneHot, Standardizer

    rng = np.random.default_rng(1)
    table = {"size": rng.normal(3.0, 2.0, (20, 2)).astype(np.float32),  # (colours 12 wide)
             "colour": rng.choice(["red", "green", "blue"], 20).astype("<U12"),
             "deck": rng.integers(1, 5, 20)}
    table["size"][3, 1] = np.nan
    prepare = Columns.fit(table, {"size": [FillMissing, Standardizer], "colour": OneHot,
                                  "deck": IndexEncoder})
    assert isinstance(prepare.columns[0].prepare, Chain)
    network = (Sequential().dense(3).relu().dense(2)
               .lower(Shape(prepare.width_out), RandomStream(0)))
    return network.with_preparation(prepare), table


def test_a_network_file_holds_the_preparation(tmp_path):
    """The fitted preparation is saved with the stack (settings in the metadata, arrays beside
    the slots, string categories as JSON) and loads equal, so the loaded network answers raw
    rows as the saved one did."""
    network, table = _prepared_network()
    path = tmp_path / "model.safetensors"
    network.save(path)
    loaded = deepsharp.load(path)
    assert loaded.preparation == network.preparation
    from deepsharp import MeanSquaredError

    prepared = network.preparation(table)
    np.testing.assert_array_equal(loaded.predict(loaded.preparation(table), MeanSquaredError()),
                                  network.predict(prepared, MeanSquaredError()))
    assert set(loaded.state_dict()) == set(network.state_dict())  # its arrays are no slots


def test_a_checkpoint_callback_saves_a_network_with_its_preparation(tmp_path):
    from deepsharp import SGD, MeanSquaredError
    from deepsharp.callbacks import ModelCheckpoint

    network, table = _prepared_network()
    rows = network.preparation(table)
    network.fit(rows, np.zeros((20, 2), np.float32), loss=MeanSquaredError(), optimizer=SGD(0.1),
                callbacks=[ModelCheckpoint(tmp_path / "best.ds", monitor="loss")], progress=False)
    assert deepsharp.load(tmp_path / "best.ds").preparation == network.preparation


def _with_metadata(path, **changes):
    """The network file at `path` written again with metadata keys changed (None: removed)."""
    from safetensors.numpy import load_file, safe_open, save_file

    with safe_open(str(path), "np") as f:
        metadata = dict(f.metadata())
    tensors = load_file(str(path))
    for key, value in changes.items():
        if key.startswith("array:"):
            name = key[len("array:"):]
            tensors.pop(name) if value is None else tensors.__setitem__(name, value)
        elif value is None:
            metadata.pop(key)
        else:
            metadata[key] = value
    save_file(tensors, str(path), metadata=metadata)


@pytest.mark.parametrize("changes, message", [
    ({"preparation": '{"kind": "pickle", "fields": {}}'}, "expected a step of kind"),
    ({"preparation": "[" * 100_000}, "metadata 'preparation' is damaged"),
    ({"preparation": '{"kind": "standardizer", "fields": {"mean": {"array": "elsewhere"}, '
                     '"std": {"array": "preparation/std"}}}'},
     "names the array 'elsewhere', which the file does not hold as numbers"),
    ({"preparation": '{"kind": "standardizer", "fields": {"mean": {"strings": ["a"], '
                     '"width": 1}, "std": {"strings": ["b"], "width": 1}}}'}, "Standardizer"),
    ({"preparation": '{"kind": "one_hot", "fields": {"categories": {"tuple": [{"strings": '
                     '["long"], "width": 2}]}}}'},
     "expected category strings and a width that holds them"),
    ({"preparation": '{"kind": "chain", "fields": {"steps": ' + '{"tuple": [' * 40 + ']}' * 40
                     + '}}'}, "nested deeper than 16"),
    ({"array:preparation/extra": np.zeros(3, np.float32)}, "belong to no step of the preparation"),
])
def test_a_damaged_preparation_record_is_refused_naming_it(tmp_path, changes, message):
    from deepsharp.preparation import Standardizer

    path = tmp_path / "model.safetensors"
    rows = np.random.default_rng(1).standard_normal((20, 4)).astype(np.float32)
    _network().with_preparation(Standardizer.fit(rows)).save(path)
    _with_metadata(path, **changes)
    with pytest.raises(StateError) as caught:
        deepsharp.load(path)
    assert str(path) in str(caught.value) and message in str(caught.value)


def test_a_network_adapted_by_low_rank_keeps_what_it_carries():
    """with_low_rank makes a new network: its preparation, features and graph names come along
    (an export of it must take the raw rows the original took)."""
    from deepsharp.preparation import Standardizer

    rows = np.random.default_rng(1).standard_normal((20, 4)).astype(np.float32)
    network = _network().with_preparation(Standardizer.fit(rows)).with_io_names("x", "p")
    adapted = network.with_low_rank(2, on=["0"])
    assert adapted.preparation is network.preparation and adapted.io_names == ("x", "p")
    assert adapted.features == ("a", "b", "c", "d")
