"""Handing batches to a module: its inputs (one array, a tuple by position, a dict by name), the
call itself, the answers' preparation per output, sample and class weights, and the checks of
`fit`'s and `predict`'s plain arguments (counts: integers, numpy's too, never a bool)."""

from __future__ import annotations

import inspect
import math
from collections.abc import Mapping  # (typing's alias: an isinstance costs microseconds)
from typing import Any

import numpy as np

from deepsharp.batches import _is_plain, as_array, as_float32, map_leaves
from deepsharp.errors import DataError, MaskRefused, OpError, ShapeError, SpecError, TargetError
from deepsharp.module import Module
from deepsharp.tensors import Tensor


# -- plain arguments --------------------------------------------------------------------------------
def count(verb: str, name: str, value: Any, *, low: int = 1, none: bool = False) -> int | None:
    """A count argument: an int or numpy integer >= low (a bool is refused: True is not 1 epoch)."""
    if value is None and none:
        return None
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) \
            or value < low:
        what = "a positive integer" if low == 1 else f"an integer >= {low}"
        raise SpecError(f"{verb}: {name} must be {what}{' or None' if none else ''}, received "
                        f"{value!r}")
    return int(value)


def flag(verb: str, name: str, value: Any) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise SpecError(f"{verb}: {name} must be True or False, received {value!r}")
    return bool(value)


def fraction(verb: str, name: str, value: Any) -> float:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.number)) \
            or not math.isfinite(value) or not 0.0 <= value < 1.0:
        raise SpecError(f"{verb}: {name} must be a number from 0 up to (not including) 1, "
                        f"received {value!r}")
    return float(value)


# -- inputs -----------------------------------------------------------------------------------------
def _parameters(module: Module) -> tuple[list[str], bool, bool]:
    """forward's positional parameter names, whether it takes *args, and whether **kwargs."""
    try:
        signature = inspect.signature(module.forward)
    except (TypeError, ValueError):
        return [], True, True
    kinds = inspect.Parameter
    names = [p.name for p in signature.parameters.values()
             if p.kind in (kinds.POSITIONAL_ONLY, kinds.POSITIONAL_OR_KEYWORD)]
    varargs = any(p.kind is kinds.VAR_POSITIONAL for p in signature.parameters.values())
    varkw = any(p.kind is kinds.VAR_KEYWORD for p in signature.parameters.values())
    return names, varargs, varkw


def inputs_of(module: Module, x: Any, verb: str, name: str = "x") -> tuple | dict:
    """The module's inputs as a tuple (by position) or a dict (by forward's parameter names).
    A list of numbers is one array; a tuple or list of arrays is several inputs when forward
    takes several."""
    names, varargs, varkw = _parameters(module)
    if isinstance(x, (Mapping, tuple, list)) and len(x) == 0:
        raise SpecError(f"{verb}: {name} holds no arrays (received {x!r})")
    if isinstance(x, Mapping):
        unknown = sorted(str(k) for k in x if k not in names) if not varkw else []
        missing = [n for n in names if n not in x]
        if unknown or missing:
            raise SpecError(f"{verb}: {name} names inputs {sorted(map(str, x))}; "
                            f"{type(module).__name__}.forward takes {names}")
        return {str(k): as_array(v, f"{name}[{k!r}]", verb) for k, v in x.items()}
    arrays = isinstance(x, (tuple, list)) and not _is_plain(x)
    if arrays and len(x) == 1:  # (x,): the one input, as Keras reads it
        return (as_array(x[0], f"{name}[0]", verb),)
    if not (arrays and (varargs or len(names) > 1)):
        return (as_array(x, name, verb),)
    if not varargs and len(x) > len(names):
        raise SpecError(f"{verb}: {name} holds {len(x)} arrays, but {type(module).__name__}."
                        f"forward takes {len(names)} inputs ({', '.join(names)})")
    return tuple(as_array(v, f"{name}[{i}]", verb) for i, v in enumerate(x))


def tensors(inputs: tuple | dict) -> tuple | dict:
    if isinstance(inputs, dict):
        return {k: Tensor(v) for k, v in inputs.items()}
    return tuple(Tensor(v) for v in inputs)


def call(module: Module, inputs: tuple | dict, lift: Any) -> Any:
    """forward on tensors; one input through `logits` (a stack lifts `lift`'s activation)."""
    if isinstance(inputs, dict):
        return module.forward(**inputs)
    if len(inputs) == 1:
        return module.logits(inputs[0], lift)
    return module.forward(*inputs)


def check_shapes(module: Module, inputs: tuple | dict, verb: str, what: str) -> None:
    """A stack holds the caller's whole array (not a probe's row) to its input shape."""
    from deepsharp.network import Network

    if isinstance(module, Network) and isinstance(inputs, tuple) and len(inputs) == 1:
        try:
            module.check_batch(inputs[0])
        except ShapeError as error:
            raise ShapeError(f"{verb}: {what}: {error}") from None


def probe(module: Module, inputs: tuple | dict, lift: Any, verb: str, what: str,
          given: tuple | dict | None = None) -> Any:
    """The evaluation pass on the first example of `inputs` (zeros when there is none): the
    outputs' kinds and shapes. Errors name the caller's arrays (`given`, by default `inputs`),
    not the probe's row."""
    def first(a: np.ndarray) -> np.ndarray:
        return as_float32(a[:1] if len(a) else np.zeros((1, *a.shape[1:]), a.dtype))

    from deepsharp.tensors import no_grad

    was_training = module.training
    module.eval()
    try:
        with no_grad():
            return call(module, tensors(map_leaves(first, inputs)), lift)
    except MaskRefused as error:  # the network's design, whatever the batch's shape
        raise MaskRefused(f"{verb}: {what}: {error}") from None
    except (ShapeError, OpError) as error:
        named = inputs if given is None else given
        arrays = named.values() if isinstance(named, dict) else named
        shapes = ", ".join(str(tuple(a.shape)) for a in arrays)
        raise ShapeError(f"{verb}: {what}: {type(module).__name__} cannot take inputs of shape "
                         f"{shapes}: {error}") from None
    finally:
        module.train(was_training)


def check_finite(inputs: tuple | dict, what: str, offset: int = 0) -> None:
    """Refuse NaN or infinity in float inputs, naming the input and the example."""
    named = inputs.items() if isinstance(inputs, dict) else (
        (("x" if len(inputs) == 1 else f"x[{i}]"), v) for i, v in enumerate(inputs))
    for name, array in named:
        array = np.asarray(array)
        if array.dtype.kind == "f" and array.size:
            bad = ~np.isfinite(array.reshape(len(array), -1)).all(axis=1)
            if bad.any():
                row = int(np.argmax(bad))
                value = array[row][~np.isfinite(array[row])].flat[0]
                raise DataError(f"fit: {what}: {name} holds {value} at example {offset + row}; "
                                f"validation needs finite numbers")


# -- answers and weights ----------------------------------------------------------------------------
def prepare(loss: Any, y: Any, shape: tuple[int, ...], what: str) -> np.ndarray:
    try:
        return loss.prepare(as_array(y, "y"), shape)
    except SpecError as error:
        raise TargetError(f"{what}: {error}") from None
    except TargetError as error:
        raise TargetError(f"{what}: {error}") from None


def sample_weights(w: Any, per_example: tuple[int, ...], what: str) -> np.ndarray:
    """Weights of shape (rows,) or the per-example losses' shape, finite and >= 0."""
    w = as_array(w, "sample_weight")
    if w.dtype.kind not in "iuf":
        raise TargetError(f"{what}: sample_weight must hold numbers, received dtype {w.dtype}")
    w = np.asarray(w, np.float32)
    if w.shape != per_example[:1] and w.shape != per_example:
        raise TargetError(f"{what}: sample_weight of shape {w.shape} fits neither the examples "
                          f"{per_example[:1]} nor the losses {per_example}")
    if not np.isfinite(w).all() or (w < 0).any():
        bad = w[~np.isfinite(w) | (w < 0)].flat[0]
        raise TargetError(f"{what}: sample_weight must be finite and >= 0, received {bad}")
    return w


def check_class_weight(class_weight: Any) -> dict[int, float] | None:
    if class_weight is None:
        return None
    if not isinstance(class_weight, Mapping):
        raise SpecError(f"fit: class_weight must be a dict class -> weight, received "
                        f"{class_weight!r}")
    found = {}
    for k, v in class_weight.items():
        if isinstance(k, (bool, np.bool_)) or not isinstance(k, (int, np.integer)) or k < 0:
            raise SpecError(f"fit: class_weight keys must be class indices (integers >= 0), "
                            f"received {k!r}")
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, np.number)) \
                or not math.isfinite(v) or v < 0:
            raise SpecError(f"fit: class_weight[{k}] must be a number >= 0, received {v!r}")
        found[int(k)] = float(v)
    return found


def class_weights(class_weight: dict[int, float], target: np.ndarray, what: str) -> np.ndarray:
    """Keras' class_weight as sample weights: each example weighs its class's weight (1 for a class
    not named); its class is its id, the largest share of a row, or a 0/1 answer rounded."""
    y = target
    if y.dtype.kind == "f" and y.ndim > 1:  # shares: the largest; one 0/1 column: itself
        y = np.argmax(y, axis=-1) if y.shape[-1] != 1 else y[..., 0]
    if y.ndim != 1:
        raise TargetError(f"{what}: class_weight needs one class per example; the answers have "
                          f"shape {target.shape}")
    classes = np.round(y).astype(np.int64)
    table = np.ones(max(int(classes.max(initial=0)), max(class_weight, default=0)) + 1, np.float32)
    for k, v in class_weight.items():
        table[k] = v
    return table[classes]


def rows_in(inputs: tuple | dict) -> int:
    return len(next(iter(inputs.values())) if isinstance(inputs, dict) else inputs[0])
