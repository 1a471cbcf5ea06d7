"""Losses on logits, each with its output activation.

| loss              | computed on logits z                       | output(z)  | answers                    |
|-------------------|--------------------------------------------|------------|----------------------------|
| MeanSquaredError  | mean((z - y)^2)                            | z          | numbers, the output's shape |
| BinaryCrossEntropy| mean(max(z,0) - z y + log(1 + e^-abs(z)))  | sigmoid(z) | 0/1 (or shares in [0, 1])  |
| CrossEntropy      | mean(-sum(y log_softmax(z)))               | softmax(z) | class ids, or class shares |

A network whose last step is the loss's own output activation (a sigmoid before
BinaryCrossEntropy, a softmax before CrossEntropy) has it lifted into the loss: trained on the
logits before it, answered through it once.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.special import expit

from deepsharp.errors import TargetError
from deepsharp.tensors import Tensor, apply
from deepsharp.tensors.ops.activations import _softmax


class Loss:
    """Base: `loss(logits, target)` is a scalar tensor; `output(z)` the answer's activation."""

    name = "loss"
    activation: str | None = None  # the kind of the layer this loss lifts, and writes as output

    def __call__(self, logits: Tensor, target: Any) -> Tensor:
        raise TypeError(f"{type(self).__name__} does not define __call__")

    def output(self, z: np.ndarray) -> np.ndarray:
        return np.asarray(z)

    def lifts(self, spec: Any) -> bool:
        return self.activation is not None and getattr(spec, "kind", None) == self.activation

    def prepare(self, target: Any, output_shape: tuple[int, ...]) -> np.ndarray:
        """`target` checked against the network's output (batch x output) and made ready."""
        return np.asarray(target)

    def default_metrics(self) -> list[Any]:
        """The metrics `fit` reports when it is given none."""
        return []

    def per_example(self, logits: Tensor, target: Any) -> Tensor:
        """The loss of every answer, its last axis reduced as Keras reduces it (the mean over the
        last axis, or the classes of a cross-entropy): logits' shape without its last axis."""
        raise TypeError(f"{type(self).__name__} does not define per_example")

    def weighted(self, logits: Tensor, target: Any, weights: np.ndarray) -> Tensor:
        """mean(weights * per_example(logits, target)): Keras' "sum over batch size" reduction,
        the weighted losses summed and divided by their count (not by the weights' sum).
        `weights` is (batch,) or the per-example losses' shape."""
        per = self.per_example(logits, target)
        w = np.asarray(weights, dtype=logits.dtype)
        w = w.reshape(w.shape + (1,) * (per.ndim - w.ndim))
        return apply("mean", apply("mul", per, w), axes=tuple(range(per.ndim)), keepdims=0)

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other)

    def __hash__(self) -> int:
        return hash(type(self).__name__)


def _last_axis_mean(per_element: Tensor) -> Tensor:
    if per_element.ndim < 2:  # one number per example: nothing to reduce
        return per_element
    return apply("mean", per_element, axes=(per_element.ndim - 1,), keepdims=0)


def _target_tensor(target: Any, like: Tensor) -> Tensor:
    return target if isinstance(target, Tensor) else Tensor(np.asarray(target, dtype=like.dtype))


def _float_target(loss: Loss, target: Any, output_shape: tuple[int, ...]) -> np.ndarray:
    y = np.asarray(target)
    if y.dtype.kind not in "fiub":
        raise TargetError(f"{loss.name}: answers must be numbers, received dtype {y.dtype}")
    y = y.astype(np.float32)
    if y.shape != output_shape and y.shape + (1,) == output_shape:
        y = y.reshape(output_shape)
    if y.shape != output_shape:
        raise TargetError(f"{loss.name}: answers of shape {y.shape} do not match the network's "
                          f"output of shape {output_shape}")
    if not np.all(np.isfinite(y)):
        raise TargetError(f"{loss.name}: answers contain NaN or infinity")
    return y


class MeanSquaredError(Loss):
    name = "MeanSquaredError"

    def __call__(self, logits: Tensor, target: Any) -> Tensor:
        return apply("mse_loss", logits, target)

    def prepare(self, target: Any, output_shape: tuple[int, ...]) -> np.ndarray:
        return _float_target(self, target, output_shape)

    def default_metrics(self) -> list[Any]:
        from deepsharp.metrics import MAE

        return [MAE()]

    def per_example(self, logits: Tensor, target: Any) -> Tensor:
        diff = apply("sub", logits, _target_tensor(target, logits))
        return _last_axis_mean(apply("mul", diff, diff))


class BinaryCrossEntropy(Loss):
    name = "BinaryCrossEntropy"
    activation = "sigmoid"

    def __call__(self, logits: Tensor, target: Any) -> Tensor:
        return apply("bce_logits_loss", logits, target)

    def output(self, z: np.ndarray) -> np.ndarray:
        return expit(np.asarray(z))

    def prepare(self, target: Any, output_shape: tuple[int, ...]) -> np.ndarray:
        y = _float_target(self, target, output_shape)
        if y.size and (y.min() < 0 or y.max() > 1):
            bad = y[(y < 0) | (y > 1)].flat[0]
            raise TargetError(f"{self.name}: answers must lie in [0, 1], received {bad:g}")
        return y

    def default_metrics(self) -> list[Any]:
        from deepsharp.metrics import Accuracy

        return [Accuracy()]

    def per_example(self, logits: Tensor, target: Any) -> Tensor:
        # max(z, 0) - z y + log(1 + e^-|z|), the stable form of the fused primitive
        y = _target_tensor(target, logits)
        soft = apply("log", apply("add", apply("exp", apply("neg", apply("abs", logits))), 1.0))
        per = apply("add", apply("sub", apply("relu", logits), apply("mul", logits, y)), soft)
        return _last_axis_mean(per)


class CrossEntropy(Loss):
    """Answers as class ids (integers, the output's shape without its last axis) or as class
    shares (the output's shape, rows summing to 1)."""

    name = "CrossEntropy"
    activation = "softmax"

    def __call__(self, logits: Tensor, target: Any) -> Tensor:
        y = target._data if isinstance(target, Tensor) else np.asarray(target)
        if y.dtype.kind in "iu":
            return apply("cross_entropy_ids_loss", logits, y)
        return apply("cross_entropy_loss", logits, y)

    def output(self, z: np.ndarray) -> np.ndarray:
        return _softmax(np.asarray(z), -1)

    def prepare(self, target: Any, output_shape: tuple[int, ...]) -> np.ndarray:
        y = np.asarray(target)
        classes = output_shape[-1]
        if y.dtype.kind in "iu":
            if y.shape + (1,) == output_shape and classes == 1:
                raise TargetError(f"{self.name}: the network gives one number per row; class ids "
                                  f"need one output per class")
            if y.shape != output_shape[:-1]:
                raise TargetError(f"{self.name}: class ids of shape {y.shape} do not match the "
                                  f"network's output of shape {output_shape} (ids need shape "
                                  f"{output_shape[:-1]})")
            # (y.min and y.max's own reduces, without their Python frames, compared as Python
            # ints: exact, and a numpy scalar's comparison costs more than the reduce)
            if y.size and (int(np.minimum.reduce(y, axis=None)) < 0
                           or int(np.maximum.reduce(y, axis=None)) >= classes):
                bad = y[(y < 0) | (y >= classes)].flat[0]
                raise TargetError(f"{self.name}: class id {bad} is outside 0..{classes - 1}")
            return y.astype(np.int64)
        y = _float_target(self, y, output_shape)
        sums = y.sum(axis=-1)
        if y.size and (y.min() < 0 or np.abs(sums - 1).max() > 1e-3):
            raise TargetError(f"{self.name}: class shares must be non-negative and sum to 1 per "
                              f"row, received a row summing to {sums.flat[np.abs(sums - 1).argmax()]:g}")
        return y

    def default_metrics(self) -> list[Any]:
        from deepsharp.metrics import Accuracy

        return [Accuracy()]

    def per_example(self, logits: Tensor, target: Any) -> Tensor:
        y = target._data if isinstance(target, Tensor) else np.asarray(target)
        if y.dtype.kind in "iu":  # ids: the one-hot rows pick each answer's log-probability
            y = np.eye(logits.shape[-1], dtype=logits.dtype)[y]
        log_p = apply("log_softmax", logits, axis=logits.ndim - 1)
        picked = apply("sum", apply("mul", log_p, Tensor(y.astype(logits.dtype))),
                       axes=(logits.ndim - 1,), keepdims=0)
        return apply("neg", picked)
