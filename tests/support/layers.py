"""`check_layer`: everything a layer must show, in one call.

    report = check_layer(Sequential().dense(3).relu(), Shape(4))

1. lowers the spec; gradients of every parameter and the input by finite differences (float64);
2. exports it; `check_model(full_check=True)`;
3. ONNX Runtime and the reference evaluator (annotations checked) agree with `network.predict`
   at every batch size (and series length, for series);
4. reads the graph back: same numbers, and export -> read -> export gives the same bytes;
5. the imported network trains again (a fit epoch changes its parameters).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np
import onnx

from deepsharp.losses import BinaryCrossEntropy, CrossEntropy, Loss, MeanSquaredError
from deepsharp.network import Network
from deepsharp.optimizers import SGD
from deepsharp.random import RandomStream
from deepsharp.sequential import Sequential
from deepsharp.shape import Shape
from deepsharp_export_onnx import OnnxExport
from tests.support.gradcheck import assert_module_gradients
from tests.support.onnx_check import assert_graph_matches, assert_round_trip

MakeBatch = Callable[[int, tuple[int, ...], np.random.Generator], np.ndarray]


def normal_batch(n: int, shape: tuple[int, ...], generator: np.random.Generator) -> np.ndarray:
    return generator.standard_normal((n, *shape)).astype(np.float32)


@dataclass
class Report:
    network: Network
    model: onnx.ModelProto
    data: bytes
    imported: Network

    @property
    def opset(self) -> int:
        return self.model.opset_import[0].version

    def count(self, op_type: str) -> int:
        return sum(1 for n in self.model.graph.node if n.op_type == op_type)


def targets_for(loss: Loss, out: np.ndarray, generator: np.random.Generator) -> np.ndarray:
    if isinstance(loss, BinaryCrossEntropy):
        return (generator.random(out.shape) > 0.5).astype(np.float32)
    if isinstance(loss, CrossEntropy):
        return generator.integers(0, out.shape[-1], out.shape[:-1])
    return generator.standard_normal(out.shape).astype(np.float32)


def check_layer(spec: Sequential, shape: Shape, *, loss: Loss | None = None,
                batch_sizes: Sequence[int] = (1, 5, 32), lengths: Sequence[int] = (),
                make_batch: MakeBatch = normal_batch, seed: int = 0, gradients: bool = True,
                gradient_batch: int = 3, gradient_options: dict | None = None,
                atol: float = 1e-5, train_again: bool = True) -> Report:
    """Hold a layer stack to every standard. `lengths` are other series lengths (axis 0 of the
    example) at which the graph must also answer."""
    loss = loss or MeanSquaredError()
    generator = np.random.default_rng(seed)
    network = spec.lower(shape, RandomStream(seed))
    if gradients:
        x = make_batch(gradient_batch, tuple(shape), generator)
        assert_module_gradients(network, x, **(gradient_options or {}))
        network.eval()
    data = OnnxExport(shape).to_bytes(network, loss)
    model = onnx.load_from_string(data)
    batches = [make_batch(n, tuple(shape), generator) for n in batch_sizes]
    batches += [make_batch(3, (length, *tuple(shape)[1:]), generator) for length in lengths]
    assert_graph_matches(data, network, loss, batches, atol=atol)
    imported = assert_round_trip(data, network, loss, batches[-1])
    if train_again:
        assert_trains(imported, loss, make_batch(16, tuple(shape), generator), generator)
    return Report(network, model, data, imported)


def assert_trains(network: Network, loss: Loss, x: np.ndarray, generator: np.random.Generator) -> None:
    """One epoch of SGD changes every trainable parameter that received a gradient."""
    y = targets_for(loss, network.predict(x, loss), generator)
    before = {path: p._data.copy() for path, p in network.trainable_parameters()}
    history = network.fit(x, y, loss=loss, optimizer=SGD(lr=0.05), epochs=1, batch_size=8)
    assert np.isfinite(history[-1]["loss"])
    changed = [path for path, p in network.trainable_parameters()
               if not np.array_equal(before[path], p._data)]
    assert not before or changed, "training changed no parameter"
