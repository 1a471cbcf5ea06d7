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

Every write goes to a temporary file beside the target, is flushed to disk, and then replaces the
target in one rename: a failed save leaves the old file whole.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any, Sequence

import numpy as np
from safetensors import safe_open
from safetensors.numpy import save as _serialize

from deepsharp.errors import StateError

FORMAT_NETWORK = "deepsharp.network/1"
FORMAT_WEIGHTS = "deepsharp.weights/1"
FORMAT_CHECKPOINT = "deepsharp.checkpoint/1"


def write_atomic(path: Any, data: bytes) -> None:
    """Write `data` to `path` through a temporary file and one rename."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(data)
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temporary, target)
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise


def _write(path: Any, tensors: dict[str, np.ndarray], metadata: dict[str, str]) -> None:
    # (np.ascontiguousarray would turn a 0-d array, such as Adam's step count, into 1-d)
    arrays = {k: v if v.flags.c_contiguous else np.ascontiguousarray(v) for k, v in tensors.items()}
    write_atomic(path, _serialize(arrays, metadata=metadata))


def _read(path: Any, expected_format: str,
          weights_hint: bool = False) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    try:
        with safe_open(str(path), framework="np") as handle:
            metadata = handle.metadata() or {}
            tensors = {key: handle.get_tensor(key) for key in handle.keys()}
    except FileNotFoundError:
        raise
    except Exception as error:  # safetensors raises its own error types for a damaged file
        raise StateError(f"{path}: not a readable safetensors file ({error})") from None
    found = metadata.get("format")
    if weights_hint and found == FORMAT_WEIGHTS:
        raise StateError(f"{path}: holds {found}, expected {expected_format}: the weights of a "
                         f"{metadata.get('class', 'module')} written as code; make the module in "
                         f"your code, then module.load_weights(path)")
    if found != expected_format:
        raise StateError(f"{path}: holds {found or 'no deepsharp format'}, expected {expected_format}")
    return tensors, metadata


def frozen_paths(module: Any) -> str:
    """The paths of the parameters kept out of training, as JSON (the files' `frozen` entry)."""
    return json.dumps([path for path, p in module.named_parameters() if not p.requires_grad])


def restore_frozen(module: Any, metadata: dict[str, str], path: Any) -> None:
    """Give back the frozen flags a file holds (a file without the entry changes none)."""
    if "frozen" not in metadata:
        return
    try:
        frozen = json.loads(metadata["frozen"])
    except ValueError:
        frozen = None
    known = dict(module.named_parameters())
    if not isinstance(frozen, list) or not all(isinstance(f, str) for f in frozen):
        raise StateError(f"{path}: its frozen entry must be a list of parameter paths, received "
                         f"{metadata['frozen'][:80]!r}")
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
    metadata = {
        "format": FORMAT_NETWORK,
        "spec": network.spec.to_json(),
        "input_shape": str(network.input_shape),
        "features": json.dumps(list(network.features or [])),
        "frozen": frozen_paths(network),
    }
    _write(path, network.state_dict(), metadata)


def load(path: Any):
    """The Network saved at `path`, with every slot as saved (strict by slot path)."""
    from deepsharp.random import RandomStream
    from deepsharp.sequential import Sequential
    from deepsharp.shape import Shape

    tensors, metadata = _read(path, FORMAT_NETWORK, weights_hint=True)
    spec = Sequential.from_json(metadata["spec"])
    network = spec.lower(Shape.parse(metadata["input_shape"]), RandomStream(0))
    try:
        network.load_state_dict(tensors, strict=True)
    except StateError as error:
        raise StateError(f"{path}: {error}") from None
    restore_frozen(network, metadata, path)
    return network.with_features(json.loads(metadata.get("features", "[]")) or None)


def save_weights(module: Any, path: Any) -> None:
    _write(path, module.state_dict(), {"format": FORMAT_WEIGHTS, "class": type(module).__name__,
                                       "frozen": frozen_paths(module)})


def load_weights(module: Any, path: Any, strict: bool = True) -> None:
    tensors, metadata = _read(path, FORMAT_WEIGHTS)
    module.load_state_dict(tensors, strict=strict)
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
    saved_optimizer = json.loads(metadata["optimizer"])
    faults = []
    if int(metadata["seed"]) != seed:
        faults.append(f"seed {metadata['seed']} (this run: {seed})")
    if int(metadata["batch_size"]) != batch_size:
        faults.append(f"batch_size {metadata['batch_size']} (this run: {batch_size})")
    if saved_optimizer != json.loads(json.dumps({"class": type(optimizer).__name__, **optimizer.config()})):
        faults.append(f"optimizer {saved_optimizer} (this run: {type(optimizer).__name__} {optimizer.config()})")
    if faults:
        raise StateError(f"{path}: cannot resume: the checkpoint was made with " + ", ".join(faults))
    module.load_state_dict(_split(tensors, "module/"), strict=True)
    optimizer.load_state_arrays(_split(tensors, "optimizer/"))
    for index, callback in enumerate(callbacks):
        if hasattr(callback, "load_state_arrays"):
            callback.load_state_arrays(_split(tensors, f"callback{index}/"))
    history = History(json.loads(metadata["history"]))
    return history, len(history), int(metadata["step"])
