"""Saving and loading: safetensors files (no pickle anywhere), written atomically.

- `save(network, path)` / `load(path)`: one file holding the spec as JSON (in the safetensors
  metadata), the input shape, the feature names, and every slot by path. Loading is strict by slot
  path.
- `save_weights(module, path)` / `load_weights(module, path)`: the slots only, for networks written
  as code (`save(module, path)` writes this too for a module that is not a stack).
- `save_state_dict(state, path)` / `load_state_dict(path)`: a state dict as PyTorch users keep one
  (`module.load_state_dict(load_state_dict(path))` checks every key, strictly by default).

Networks and weights files also hold which parameters are frozen (`requires_grad=False`); loading
gives those flags back.
- `save_checkpoint` / `load_checkpoint`: the slots, the optimizer's state by parameter path, the
  callbacks' arrays, the history and the step count; `fit(checkpoint=..., resume=True)` uses them.

Every write goes through `deepsharp.files.write_atomic` (whole or not at all, the umask's
permissions, no temporary left, errors naming the target), and every read through
`read_regular` (a regular file only); a damaged file is a StateError naming the file and part.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np
from safetensors.numpy import load as _deserialize
from safetensors.numpy import save as _serialize

from deepsharp.errors import PreparationError, SaveError, StateError
from deepsharp.files import read_regular, write_atomic
from deepsharp.preparation.record import from_record, to_record

FORMAT_NETWORK = "deepsharp.network/1"
FORMAT_WEIGHTS = "deepsharp.weights/1"
FORMAT_CHECKPOINT = "deepsharp.checkpoint/1"
# Lowering a spec read from a file may make this many numbers beyond the ones the file holds
# (tables such as sine positions are worked out, not stored); past it the file is refused.
FREE_ELEMENTS = 1 << 24
PREPARATION = "preparation"  # the prefix of a preparation's arrays among the slots

__all__ = ["load", "load_checkpoint", "load_state_dict", "load_weights", "save", "save_checkpoint",
           "save_state_dict", "save_weights", "write_atomic"]


def _write(path: Any, tensors: dict[str, np.ndarray], metadata: dict[str, str]) -> None:
    # (np.ascontiguousarray would turn a 0-d array, such as Adam's step count, into 1-d)
    arrays = {k: v if v.flags.c_contiguous else np.ascontiguousarray(v) for k, v in tensors.items()}
    write_atomic(path, _serialize(arrays, metadata=metadata))


def _read(path: Any, expected_format: str,
          weights_hint: bool = False) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    """The tensors and metadata of the safetensors file at `path`. Every fault is a StateError
    naming the file: not a regular file, a damaged header, sizes the bytes do not hold (the
    safetensors reader checks each tensor's offsets against the bytes present before making it),
    or another format."""
    data = read_regular(path, lambda reason: StateError(f"{path}: {reason}"))
    try:
        metadata = _header_metadata(data)
        tensors = _deserialize(data)
    except Exception as error:  # safetensors raises its own error types for a damaged file
        raise StateError(f"{path}: not a readable safetensors file ({_short(error)})") from None
    found = metadata.get("format")
    if weights_hint and found == FORMAT_WEIGHTS:
        raise StateError(f"{path}: holds {found}, expected {expected_format}: the weights of a "
                         f"{metadata.get('class', 'module')} written as code; make the module in "
                         f"your code, then module.load_weights(path)")
    if found != expected_format:
        raise StateError(f"{path}: holds {_short(found) if found else 'no deepsharp format'}, "
                         f"expected {expected_format}")
    return tensors, metadata


def _header_metadata(data: bytes) -> dict[str, str]:
    """The `__metadata__` of a safetensors header: 8 bytes of length, then that much JSON."""
    if len(data) < 8:
        raise ValueError(f"{len(data)} bytes, shorter than the 8-byte header length")
    length = int.from_bytes(data[:8], "little")
    if length > len(data) - 8:
        raise ValueError(f"the header declares {length:,} bytes, the file holds {len(data) - 8:,}")
    header = json.loads(data[8:8 + length])
    metadata = header.get("__metadata__", {}) if isinstance(header, dict) else None
    if not isinstance(metadata, dict) or not all(isinstance(v, str) for v in metadata.values()):
        raise ValueError("its __metadata__ is not a map of strings")
    return metadata


def _short(value: Any, limit: int = 200) -> str:
    text = str(value)
    return text if len(text) <= limit else text[:limit] + "..."


def _field(path: Any, metadata: dict[str, str], key: str, parse: Callable[[str], Any]) -> Any:
    """Metadata `key` parsed by `parse`; missing or damaged, it is a StateError naming the key."""
    if key not in metadata:
        raise StateError(f"{path}: metadata {key!r} is missing")
    try:
        return parse(metadata[key])
    except StateError as error:
        raise StateError(f"{path}: metadata {key!r}: {error}") from None
    except Exception as error:  # JSONDecodeError, a SpecError, RecursionError from deep nesting
        raise StateError(f"{path}: metadata {key!r} is damaged: {_short(error)}") from None


def _strings(text: str) -> list[str]:
    value = json.loads(text)
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise StateError(f"expected a JSON list of names, received {_short(text, 80)!r}")
    return value


def _count(text: str) -> int:
    if not text.isdigit() or len(text) > 18:
        raise StateError(f"expected a non-negative integer, received {_short(text, 80)!r}")
    return int(text)


def _history(text: str) -> list[dict[str, Any]]:
    value = json.loads(text)
    ok = isinstance(value, list) and all(
        isinstance(row, dict) and all(v is None or isinstance(v, (int, float, str)) for v in row.values())
        for row in value)
    if not ok:
        raise StateError(f"expected a JSON list of per-epoch records, received {_short(text, 80)!r}")
    return value


def _lowered(path: Any, spec: Any, shape: Any, tensors: dict[str, np.ndarray]):
    """`spec.lower(shape)` under a budget of the numbers the file holds (plus FREE_ELEMENTS), so a
    spec declaring more than the file could fill is refused before it is allocated."""
    from deepsharp.layers.base import allocation_budget
    from deepsharp.random import RandomStream

    held = sum(int(t.size) for t in tensors.values())
    try:
        with allocation_budget(held + FREE_ELEMENTS):
            return spec.lower(shape, RandomStream(0))
    except Exception as error:  # a ShapeError naming the layer, or numpy refusing a size
        raise StateError(f"{path}: the saved spec cannot be built for input shape {shape}: "
                         f"{_short(error, 400)}") from None


def _same_dtypes(path: Any, module: Any, tensors: dict[str, np.ndarray]) -> None:
    """Refuse a stored array whose dtype is not its slot's: no conversion, no reinterpretation
    (U8, BOOL, I32 or F16 bytes where a float32 slot is would give other numbers)."""
    slots = dict(module.named_parameters())
    slots.update(module.named_buffers())
    wrong = [f"{name} is stored as {tensors[name].dtype}, the slot holds {slot.dtype}"
             for name, slot in slots.items() if name in tensors and tensors[name].dtype != slot.dtype]
    if wrong:
        raise StateError(f"{path}: " + "; ".join(wrong))


def frozen_paths(module: Any) -> str:
    """The paths of the parameters kept out of training, as JSON (the files' `frozen` entry)."""
    return json.dumps([path for path, p in module.named_parameters() if not p.requires_grad])


def restore_frozen(module: Any, metadata: dict[str, str], path: Any) -> None:
    """Give back the frozen flags a file holds (a file without the entry changes none)."""
    if "frozen" not in metadata:
        return
    frozen = _field(path, metadata, "frozen", _strings)  # damaged: a StateError naming the entry
    known = dict(module.named_parameters())
    unknown = sorted(set(frozen) - set(known))
    if unknown:
        raise StateError(f"{path}: marks {unknown} frozen, which are not parameters of this "
                         f"{type(module).__name__}")
    for name, parameter in known.items():
        parameter.requires_grad = name not in frozen


def save(network: Any, path: Any) -> None:
    """A stack whole (spec, input shape, features, slots, frozen flags); a module written as code
    by its weights, as `save_weights` (its class comes from the user's code)."""
    if not hasattr(network, "spec") or not hasattr(network, "input_shape"):
        save_weights(network, path)
        return
    tensors = dict(network.state_dict())
    metadata = {}
    if getattr(network, "preparation", None) is not None:
        # the fitted preparation: its settings in the metadata, its arrays beside the slots
        try:
            record, arrays = to_record(network.preparation, PREPARATION)
        except PreparationError as error:
            raise SaveError(f"cannot save {path}: {error}") from None
        metadata["preparation"] = json.dumps(record)
        tensors.update(arrays)
    metadata.update({
        "format": FORMAT_NETWORK,
        "spec": network.spec.to_json(),
        "input_shape": str(network.input_shape),
        "features": json.dumps(list(network.features or [])),
        "io_names": json.dumps([n or "" for n in network.io_names]),
        "frozen": frozen_paths(network),
    })
    _write(path, tensors, metadata)


def load(path: Any):
    """The Network saved at `path`, with every slot as saved (strict by slot path, each array of
    its slot's dtype). Any fault in the file is a StateError naming the file and the part."""
    from deepsharp.sequential import Sequential
    from deepsharp.shape import Shape

    tensors, metadata = _read(path, FORMAT_NETWORK, weights_hint=True)
    spec = _field(path, metadata, "spec", Sequential.from_json)
    shape = _field(path, metadata, "input_shape", Shape.parse)
    features = _field(path, metadata, "features", _strings) if "features" in metadata else []
    names = _field(path, metadata, "io_names", _strings) if "io_names" in metadata else ["", ""]
    if len(names) != 2:
        raise StateError(f"{path}: io_names: expected the input's and the output's name, "
                         f"received {len(names)} names")
    arrays = {k: tensors.pop(k) for k in list(tensors) if k.startswith(f"{PREPARATION}/")}
    preparation = (_field(path, metadata, "preparation", lambda text: _preparation(text, arrays))
                   if "preparation" in metadata else None)
    network = _lowered(path, spec, shape, tensors)
    _restore(path, network, tensors)
    restore_frozen(network, metadata, path)
    return network.with_features(features or None).with_io_names(
        names[0] or None, names[1] or None).with_preparation(preparation)


def _preparation(text: str, arrays: dict[str, np.ndarray]) -> Any:
    """The fitted preparation a network file holds, every array it names used."""
    try:
        step = from_record(json.loads(text), arrays)
    except PreparationError as error:
        raise StateError(str(error)) from None
    if arrays:
        raise StateError(f"arrays {sorted(arrays)[:3]} belong to no step of the preparation")
    return step


def _restore(path: Any, module: Any, tensors: dict[str, np.ndarray], strict: bool = True) -> None:
    _same_dtypes(path, module, tensors)
    try:
        module.load_state_dict(tensors, strict=strict)
    except StateError as error:
        raise StateError(f"{path}: {error}") from None


def save_weights(module: Any, path: Any) -> None:
    _write(path, module.state_dict(), {"format": FORMAT_WEIGHTS, "class": type(module).__name__,
                                       "frozen": frozen_paths(module)})


def load_weights(module: Any, path: Any, strict: bool = True) -> None:
    tensors, metadata = _read(path, FORMAT_WEIGHTS)
    _restore(path, module, tensors, strict)
    if strict:
        restore_frozen(module, metadata, path)


def save_state_dict(state: dict[str, Any], path: Any) -> None:
    """Write a state dict (path -> array) as safetensors, atomically (`torch.save(state_dict)`)."""
    if not isinstance(state, dict) or not all(isinstance(k, str) for k in state):
        raise StateError(f"save_state_dict: state must be a dict of arrays by path, received "
                         f"{type(state).__name__}")
    arrays = {k: np.asarray(getattr(v, "_data", v)) for k, v in state.items()}
    _write(path, arrays, {"format": FORMAT_WEIGHTS, "class": "state_dict"})


def load_state_dict(path: Any) -> dict[str, np.ndarray]:
    """The state dict in a weights file, for `module.load_state_dict(...)` (which checks every
    key against the module's, strictly by default)."""
    tensors, _ = _read(path, FORMAT_WEIGHTS)
    return tensors


# -- checkpoints ---------------------------------------------------------------------------------
def _split(tensors: dict[str, np.ndarray], prefix: str) -> dict[str, np.ndarray]:
    return {k[len(prefix):]: v for k, v in tensors.items() if k.startswith(prefix)}


def save_checkpoint(path: Any, module: Any, optimizer: Any, callbacks: Sequence[Any],
                    history: list, step: int, *, seed: int, batch_size: int) -> None:
    tensors = {f"module/{k}": v for k, v in module.state_dict().items()}
    tensors.update({f"optimizer/{k}": v for k, v in optimizer.state_arrays().items()})
    for index, callback in enumerate(callbacks):
        if hasattr(callback, "state_arrays"):
            tensors.update({f"callback{index}/{k}": v for k, v in callback.state_arrays().items()})
    metadata = {
        "format": FORMAT_CHECKPOINT,
        "optimizer": json.dumps({"class": type(optimizer).__name__, **optimizer.config()}),
        "history": json.dumps(list(history)),
        "step": str(step),
        "seed": str(seed),
        "batch_size": str(batch_size),
    }
    _write(path, tensors, metadata)


def load_checkpoint(path: Any, module: Any, optimizer: Any, callbacks: Sequence[Any], *,
                    seed: int, batch_size: int):
    """Restore a checkpoint into `module`, `optimizer` and `callbacks`; return (history, next
    epoch, step), or None when there is no file yet. A checkpoint made with another seed, batch
    size or optimizer is refused: resuming it could not be bit-exact."""
    from deepsharp.callbacks import History

    if not Path(path).exists():
        return None
    tensors, metadata = _read(path, FORMAT_CHECKPOINT)
    saved_optimizer = _field(path, metadata, "optimizer", json.loads)
    saved_seed = _field(path, metadata, "seed", _count)
    saved_batch = _field(path, metadata, "batch_size", _count)
    saved_history = _field(path, metadata, "history", _history)
    step = _field(path, metadata, "step", _count)
    faults = []
    if saved_seed != seed:
        faults.append(f"seed {saved_seed} (this run: {seed})")
    if saved_batch != batch_size:
        faults.append(f"batch_size {saved_batch} (this run: {batch_size})")
    if saved_optimizer != json.loads(json.dumps({"class": type(optimizer).__name__, **optimizer.config()})):
        faults.append(f"optimizer {_short(saved_optimizer)} (this run: {type(optimizer).__name__} "
                      f"{optimizer.config()})")
    if faults:
        raise StateError(f"{path}: cannot resume: the checkpoint was made with " + ", ".join(faults))
    _restore(path, module, _split(tensors, "module/"))
    _optimizer_state(path, module, optimizer, _split(tensors, "optimizer/"))
    for index, callback in enumerate(callbacks):
        if hasattr(callback, "load_state_arrays"):
            arrays = _split(tensors, f"callback{index}/")
            _same_dtypes(path, module, arrays)  # a callback keeps slots by path (the best weights)
            callback.load_state_arrays(arrays)
    return History(saved_history), len(saved_history), step


def _optimizer_state(path: Any, module: Any, optimizer: Any, arrays: dict[str, np.ndarray]) -> None:
    """Each state array is a float scalar (a step count) or a float array of its parameter's shape
    (a moment); anything else would break the next update, so it is refused here."""
    shapes = dict((name, p.shape) for name, p in module.named_parameters())
    wrong = []
    for key, value in arrays.items():
        owner = key.rpartition("/")[0]
        if owner in shapes and (value.dtype.kind != "f" or value.shape not in ((), shapes[owner])):
            wrong.append(f"optimizer state {key} is {value.dtype} {value.shape}, expected a float "
                         f"scalar or {shapes[owner]}")
    if wrong:
        raise StateError(f"{path}: " + "; ".join(wrong))
    try:
        optimizer.load_state_arrays(arrays)
    except StateError as error:
        raise StateError(f"{path}: {error}") from None
