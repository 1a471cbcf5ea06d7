"""`check_trace`: trace a function of tensors and hold its ONNX graph to the eager run.

    check_trace(lambda x: (x @ w).relu(), {"x": ("batch", 4)}, {"batch": (3, 1, 8)},
                parameters={"w": w})

1. traces `fn` on inputs made at the first size of every symbol;
2. writes the graph; `check_model(full_check=True)`; every symbol is a dim_param of the inputs;
3. ONNX Runtime agrees with `fn` run eagerly (no trace) within `atol`, scaled by the largest
   expected magnitude, at the traced sizes, at every other size of each symbol (the others kept),
   and with every symbol at its last size, and deepsharp's annotation checker finds every shape
   annotation kept at each of those sizes (each symbol bound to its size); the reference
   evaluator (shape annotations checked; its LSTM and GRU honouring sequence_lens) agrees at the
   traced and the last sizes.

`Checked.errors` holds the largest scaled error ONNX Runtime gave per output.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

import numpy as np
import onnx
from onnx.reference import ReferenceEvaluator

from deepsharp.tensors import Tensor
from deepsharp.tracing import TracedModel, Tracer
from deepsharp_export_onnx import check_annotations
from tests.support.onnx_check import assert_valid, ort_session
from tests.support.reference_ops import REFERENCE_OPS

Shape = tuple[int | str, ...]
Make = Callable[[str, tuple[int, ...], np.random.Generator], np.ndarray]


def normal_inputs(name: str, shape: tuple[int, ...], generator: np.random.Generator) -> np.ndarray:
    return generator.standard_normal(shape).astype(np.float32)


def named_inputs(name: str, shape: tuple[int, ...], generator: np.random.Generator) -> np.ndarray:
    """By the input's name: "ids" int64 ids 0..9, "flag" or "mask" bools (70% True), else
    normal float32."""
    if name == "ids":
        return generator.integers(0, 10, shape)
    if name in ("flag", "mask"):
        return generator.random(shape) > 0.3
    return normal_inputs(name, shape, generator)


@dataclass
class Checked:
    traced: TracedModel
    model: onnx.ModelProto
    data: bytes
    errors: dict[str, float]  # output -> the largest error ONNX Runtime gave, over the scale

    @property
    def opset(self) -> int:
        return self.model.opset_import[0].version

    def ops(self) -> list[str]:
        return [n.op_type for n in self.model.graph.node]

    def count(self, op_type: str) -> int:
        return self.ops().count(op_type)


def _outputs(result: Any) -> dict[str, Tensor]:
    return dict(result) if isinstance(result, Mapping) else {"output": result}


def _concrete(shape: Shape, sizes: Mapping[str, int]) -> tuple[int, ...]:
    return tuple(sizes[d] if isinstance(d, str) else d for d in shape)


def assert_close(got: np.ndarray, expected: np.ndarray, atol: float, what: str) -> float:
    """Returns the error over the scale (the largest finite expected magnitude, at least 1);
    NaN, inf and -inf must stand where they stand in `expected`."""
    assert got.shape == expected.shape, f"{what}: shape {got.shape} != {expected.shape}"
    if expected.dtype.kind in "iub":
        np.testing.assert_array_equal(got, expected, err_msg=what)
        return 0.0
    special = ~np.isfinite(expected)
    if special.any():
        np.testing.assert_array_equal(got[special], expected[special], err_msg=what)
        got, expected = np.where(special, 0, got), np.where(special, 0, expected)
    scale = max(1.0, float(np.abs(expected).max())) if expected.size else 1.0
    error = float(np.abs(got.astype(np.float64) - expected).max()) if expected.size else 0.0
    assert error <= atol * scale, f"{what}: max error {error:.3g} > {atol} x {scale:.3g}"
    return error / scale


def check_trace(fn: Callable[..., Any], inputs: Mapping[str, Shape],
                sizes: Mapping[str, Sequence[int]] | None = None, *,
                parameters: Mapping[str, Tensor] | None = None, make: Make = normal_inputs,
                atol: float = 1e-5, reference: bool = True, seed: int = 0) -> Checked:
    sizes = dict(sizes or {})
    generator = np.random.default_rng(seed)
    traced_sizes = {s: v[0] for s, v in sizes.items()}

    def batch(assign: Mapping[str, int]) -> dict[str, np.ndarray]:
        return {n: make(n, _concrete(shape, assign), generator) for n, shape in inputs.items()}

    first = batch(traced_sizes)
    with Tracer() as tracer:
        for name, tensor in (parameters or {}).items():
            tracer.parameter(name, tensor)
        xs = {n: tracer.input(n, first[n], {i: d for i, d in enumerate(shape) if isinstance(d, str)})
              for n, shape in inputs.items()}
        traced = tracer.finish(_outputs(fn(**xs)))
    data = traced.to_bytes()
    model = onnx.load_from_string(data)
    assert_valid(model)
    for graph_input, (name, shape) in zip(model.graph.input, inputs.items()):
        dims = [d.dim_param or d.dim_value for d in graph_input.type.tensor_type.shape.dim]
        assert graph_input.name == name and dims == list(shape), (graph_input.name, dims)

    session = ort_session(data)
    assignments = [traced_sizes]
    assignments += [{**traced_sizes, s: v} for s, values in sizes.items() for v in values[1:]]
    if sizes:
        assignments.append({s: values[-1] for s, values in sizes.items()})
    errors: dict[str, float] = {}
    for index, assign in enumerate(assignments):
        arrays = first if index == 0 else batch(assign)
        expected = {n: t._data for n, t in _outputs(fn(**{k: Tensor(a) for k, a in arrays.items()})).items()}
        got = dict(zip([o.name for o in model.graph.output], session.run(None, arrays)))
        for name, value in expected.items():
            error = assert_close(got[name], value, atol,
                                 f"ONNX Runtime, output {name!r}, sizes {assign}")
            errors[name] = max(errors.get(name, 0.0), error)
        bindings = check_annotations(model, arrays)
        assert {s: bindings.get(s) for s in assign} == dict(assign), (bindings, assign)
        if reference and index in (0, len(assignments) - 1):
            evaluator = ReferenceEvaluator(model, check_shape_annotations=True,
                                           new_ops=REFERENCE_OPS)
            answers = dict(zip(evaluator.output_names, evaluator.run(None, arrays)))
            for name, value in expected.items():
                assert_close(np.asarray(answers[name]), value, 10 * atol,
                             f"reference evaluator, output {name!r}, sizes {assign}")
    return Checked(traced, model, data, errors)
