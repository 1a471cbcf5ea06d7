"""Network files, weights and checkpoints that are damaged, hostile or not files at all: each is a
StateError naming the file (never KeyError, JSONDecodeError, TypeError, RecursionError), costs
little, and never blocks; saves respect the umask, leave no temporary and name the target."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
import tracemalloc

import numpy as np
import pytest
from safetensors.numpy import save as serialize

import deepsharp
import deepsharp.files as files
from deepsharp import Adam, RandomStream, Sequential, Shape
from deepsharp.errors import SaveError, StateError
from deepsharp.io import FORMAT_CHECKPOINT, FORMAT_NETWORK, load_checkpoint, save_checkpoint


def _network():
    return Sequential().dense(3).relu().dense(2).lower(Shape(4), RandomStream(1))


def _file(tmp_path, metadata, tensors=None, name="model.safetensors"):
    path = tmp_path / name
    path.write_bytes(serialize(tensors or {}, metadata=metadata))
    return path


def _network_metadata(**changes):
    network = _network()
    metadata = {"format": FORMAT_NETWORK, "spec": network.spec.to_json(),
                "input_shape": str(network.input_shape), "features": "[]"}
    metadata.update(changes)
    return {k: v for k, v in metadata.items() if v is not None}, network.state_dict()


@pytest.mark.parametrize("key, value, says", [
    ("spec", "{not json", "metadata 'spec' is damaged"),
    ("spec", "[" * 100_000 + "]" * 100_000, "metadata 'spec' is damaged"),
    ("spec", '{"layers": [{"kind": ["dense"]}]}', "metadata 'spec'"),
    ("spec", '{"layers": [{"kind": "dense", "units": "many"}]}', "metadata 'spec'"),
    ("spec", '{"layers": [{"kind": "dense"}]}', "metadata 'spec'"),
    ("spec", None, "metadata 'spec' is missing"),
    ("input_shape", "4xfour", "metadata 'input_shape' is damaged"),
    ("input_shape", "-4", "metadata 'input_shape'"),
    ("input_shape", None, "metadata 'input_shape' is missing"),
    ("features", '{"a": 1}', "metadata 'features'"),
    ("features", "[1, 2]", "metadata 'features'"),
    ("frozen", "[" * 100_000, "metadata 'frozen' is damaged"),  # found by the suite's fuzz test
    ("frozen", "[1]", "metadata 'frozen': expected a JSON list of names"),
])
def test_damaged_network_metadata_is_the_load_error(tmp_path, key, value, says):
    metadata, tensors = _network_metadata(**{key: value})
    path = _file(tmp_path, metadata, tensors)
    with pytest.raises(StateError, match=says) as caught:
        deepsharp.load(path)
    assert str(path) in str(caught.value)


def test_a_spec_the_input_shape_cannot_take_is_the_load_error(tmp_path):
    metadata, tensors = _network_metadata(input_shape="4x5x6x7x8x9")
    path = _file(tmp_path, metadata, tensors)
    with pytest.raises(StateError, match="cannot be built for input shape"):
        deepsharp.load(path)


@pytest.mark.parametrize("spec, shape", [
    ('{"layers": [{"kind": "dense", "units": 1000000000}]}', "4"),
    ('{"layers": [{"kind": "dense", "units": 1}]}', "1000000000"),
    ('{"layers": [{"kind": "layer_norm"}]}', "1000000000"),
    ('{"layers": [{"kind": "sine_positions", "max_length": 1000000000}]}', "3x100"),
    ('{"layers": [{"kind": "embedding", "vocabulary": 1000000, "width": 100000}]}', "5"),
])
def test_a_tiny_file_declaring_a_huge_network_is_refused_before_allocating(tmp_path, spec, shape):
    path = _file(tmp_path, {"format": FORMAT_NETWORK, "spec": spec, "input_shape": shape})
    assert path.stat().st_size < 300
    tracemalloc.start()
    try:
        with pytest.raises(StateError, match="more than the .* left in the budget"):
            deepsharp.load(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 64 << 20  # the budget's free part (16M numbers) is never reached by a refusal


@pytest.mark.parametrize("dtype", [np.uint8, np.bool_, np.int32, np.float16, np.float64])
def test_weights_stored_in_another_dtype_are_refused_not_converted(tmp_path, dtype):
    metadata, tensors = _network_metadata()
    tensors["0.weight"] = tensors["0.weight"].astype(dtype)
    path = _file(tmp_path, metadata, tensors)
    with pytest.raises(StateError, match=f"0.weight is stored as {np.dtype(dtype)}, the slot holds float32"):
        deepsharp.load(path)


def test_load_weights_refuses_other_dtypes_too(tmp_path):
    network = _network()
    state = {k: v.astype(np.float16) for k, v in network.state_dict().items()}
    path = _file(tmp_path, {"format": "deepsharp.weights/1"}, state)
    with pytest.raises(StateError, match="stored as float16"):
        deepsharp.io.load_weights(network, path)


@pytest.mark.parametrize("data", [b"", b"\x00" * 7, b"\xff" * 8 + b"{}", (10).to_bytes(8, "little") + b"[1,2]",
                                  (2).to_bytes(8, "little") + b"{}"])
def test_bytes_that_are_not_safetensors_are_the_load_error(tmp_path, data):
    path = tmp_path / "model.safetensors"
    path.write_bytes(data)
    with pytest.raises(StateError):
        deepsharp.load(path)


def test_a_tensor_whose_offsets_pass_the_end_is_refused(tmp_path):
    metadata, tensors = _network_metadata()
    good = serialize(tensors, metadata=metadata)
    path = tmp_path / "model.safetensors"
    path.write_bytes(good[:-8])
    with pytest.raises(StateError, match="not a readable safetensors file"):
        deepsharp.load(path)


def _finishes(function, seconds=10.0):
    outcome = {}

    def run():
        try:
            function()
        except BaseException as error:  # noqa: BLE001 - the test inspects it
            outcome["error"] = error

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), "blocked"
    return outcome.get("error")


def test_a_fifo_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "pipe.safetensors"
    os.mkfifo(fifo)
    error = _finishes(lambda: deepsharp.load(fifo))
    assert isinstance(error, StateError) and "FIFO" in str(error)
    error = _finishes(lambda: load_checkpoint(fifo, _network(), Adam(), [], seed=0, batch_size=2))
    assert isinstance(error, StateError)


def test_a_directory_or_device_is_refused(tmp_path):
    with pytest.raises(StateError, match="directory"):
        deepsharp.load(tmp_path)
    with pytest.raises(StateError, match="character device"):
        deepsharp.load("/dev/null")


# -- checkpoints -------------------------------------------------------------------------------
def _checkpoint(tmp_path, **changes):
    network, optimizer = _network(), Adam()
    optimizer.bind(network.named_parameters())
    path = tmp_path / "run.ckpt"
    save_checkpoint(path, network, optimizer, [], [{"epoch": 0, "loss": 1.0}], 3, seed=0, batch_size=2)
    stored = deepsharp.io._read(path, FORMAT_CHECKPOINT)
    metadata = {**stored[1], **changes}
    path.write_bytes(serialize(stored[0], metadata={k: v for k, v in metadata.items() if v is not None}))
    return path, network, optimizer


@pytest.mark.parametrize("key, value", [
    ("optimizer", "{"), ("optimizer", "[" * 50_000), ("seed", "zero"), ("seed", "-1"),
    ("batch_size", "2.5"), ("step", "9" * 5000), ("history", '"loss"'), ("history", "[1, 2]"),
    ("history", "["), ("step", None), ("history", None),
])
def test_damaged_checkpoint_metadata_is_the_load_error(tmp_path, key, value):
    path, network, optimizer = _checkpoint(tmp_path, **{key: value})
    with pytest.raises(StateError, match=f"metadata {key!r}"):
        load_checkpoint(path, network, optimizer, [], seed=0, batch_size=2)


def test_optimizer_state_of_the_wrong_shape_or_dtype_is_refused(tmp_path):
    network, optimizer = _network(), Adam()
    optimizer.bind(network.named_parameters())
    optimizer.state = {"0.weight": {"exp_avg": np.zeros((2, 2), np.float32)},
                       "0.bias": {"exp_avg": np.zeros(3, np.uint8)}}
    path = tmp_path / "run.ckpt"
    save_checkpoint(path, network, optimizer, [], [], 0, seed=0, batch_size=2)
    with pytest.raises(StateError, match="0.weight/exp_avg is float32 \\(2, 2\\)") as caught:
        load_checkpoint(path, network, optimizer, [], seed=0, batch_size=2)
    assert "0.bias/exp_avg is uint8" in str(caught.value)


# -- saving ------------------------------------------------------------------------------------
@pytest.mark.parametrize("umask", [0o022, 0o077, 0o002])
def test_a_saved_file_gets_the_umask_permissions(tmp_path, umask):
    old = os.umask(umask)
    try:
        path = tmp_path / "model.safetensors"
        _network().save(path)
    finally:
        os.umask(old)
    assert path.stat().st_mode & 0o777 == 0o666 & ~umask


def test_a_write_error_names_the_target_not_the_temporary(tmp_path, monkeypatch):
    path = tmp_path / "model.safetensors"

    def broken_write(fd, data):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(files.os, "write", broken_write)
    with pytest.raises(SaveError, match="cannot save .*model.safetensors: No space left") as caught:
        _network().save(path)
    assert ".tmp" not in str(caught.value)
    assert list(tmp_path.iterdir()) == []


def test_saving_into_a_path_below_a_file_names_the_target(tmp_path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(SaveError, match="cannot save .*file/model.safetensors"):
        _network().save(tmp_path / "file" / "model.safetensors")


def test_a_save_killed_mid_write_keeps_the_old_file_and_leaves_no_temporary(tmp_path):
    path = tmp_path / "model.safetensors"
    _network().save(path)
    before = path.read_bytes()
    script = textwrap.dedent(f"""
        import os, signal
        import deepsharp.files as files
        from deepsharp import RandomStream, Sequential, Shape
        real = os.write
        def dying(fd, data):
            real(fd, bytes(data[:100]))
            os.kill(os.getpid(), signal.SIGKILL)
        files.os.write = dying
        Sequential().dense(300).lower(Shape(400), RandomStream(0)).save({str(path)!r})
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=120)
    assert done.returncode == -9, done.stderr.decode()
    assert path.read_bytes() == before
    # An unnamed temporary (O_TMPFILE) vanished with the process; a named one, where the system
    # has no unnamed files, belongs to a dead process and is removed by the next save.
    _network().save(path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.safetensors"]
