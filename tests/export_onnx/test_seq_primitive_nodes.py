"""The sequence primitives' entries in the shared node table (what the tracer writes a record
as): each written alone on a tape, run in ONNX Runtime, and held to the primitive's own answer."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto
from onnx.reference import ReferenceEvaluator

from deepsharp.tensors import Tensor, apply
from deepsharp_export_onnx.graph import Tape
from deepsharp_export_onnx.write.nodes import PRIMITIVE_NODES, Emit
from tests.support.onnx_check import ort_session
from tests.support.reference_ops import REFERENCE_OPS

RNG = np.random.default_rng(7)
TYPES = {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.int64): TensorProto.INT64,
         np.dtype(bool): TensorProto.BOOL}


def _run(name: str, inputs: dict[str, np.ndarray], constants: dict[str, np.ndarray],
         order: list[str], attrs: dict, out_ranks: list[int]) -> list[np.ndarray]:
    """Write primitive `name` on inputs `order` (graph inputs or initializers) and run it."""
    tape = Tape()
    for key, value in inputs.items():
        tape.annotate(key, tuple(f"{key}_{i}" for i in range(value.ndim)), TYPES[value.dtype])
    for key, value in constants.items():
        tape.initializer(key, value)
    ranks = [(inputs | constants)[k].ndim for k in order]
    out = PRIMITIVE_NODES[name](Emit(tape, "node"), order, attrs, ranks)
    outputs = list(out) if isinstance(out, (list, tuple)) else [out]
    for value, rank in zip(outputs, out_ranks):
        tape.annotate(value, (None,) * rank, TensorProto.FLOAT)
    model = tape.to_model(list(inputs), outputs)
    model = onnx.shape_inference.infer_shapes(model)
    onnx.checker.check_model(model, full_check=True)
    results = ort_session(model.SerializeToString()).run(None, inputs)
    evaluator = ReferenceEvaluator(model, check_shape_annotations=True, new_ops=REFERENCE_OPS)
    for reference, result in zip(evaluator.run(None, inputs), results):
        np.testing.assert_allclose(reference, result, atol=1e-5)
    return results


@pytest.mark.parametrize("kind", ["lstm", "gru"])
@pytest.mark.parametrize("reverse", [0, 1])
@pytest.mark.parametrize("with_lengths", [False, True])
def test_recurrent_record_as_one_node(kind, reverse, with_lengths):
    gates = 4 if kind == "lstm" else 3
    x = RNG.standard_normal((3, 5, 2)).astype(np.float32)
    weights = {"w_ih": RNG.standard_normal((2, gates * 4)), "w_hh": RNG.standard_normal((4, gates * 4)),
               "b_ih": RNG.standard_normal(gates * 4), "b_hh": RNG.standard_normal(gates * 4)}
    weights = {k: (0.5 * v).astype(np.float32) for k, v in weights.items()}
    inputs = {"x": x}
    extra = ()
    if with_lengths:
        inputs["lengths"] = np.array([5, 0, 3], np.int64)
        extra = (Tensor(inputs["lengths"]),)
    expected = apply(kind, Tensor(x), *weights.values(), *extra, reverse=reverse)
    got = _run(kind, inputs, weights, ["x", *weights, *(["lengths"] if with_lengths else [])],
               {"reverse": reverse}, [e.ndim for e in expected])
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g, e._data, atol=1e-5)


@pytest.mark.parametrize("masked, causal", [(False, False), (True, False), (False, True),
                                             (True, True)])
def test_attention_record_as_the_unfused_pattern(masked, causal):
    q, k, v = (RNG.standard_normal((2, 3, 4, 5)).astype(np.float32) for _ in range(3))
    inputs = {"q": q, "k": k, "v": v}
    mask = np.array([[True, True, False, True], [False, False, False, False]])
    if masked:
        inputs["mask"] = mask
    expected = apply("attention", *[Tensor(a) for a in inputs.values()], scale=0.4,
                     causal=int(causal))._data
    got = _run("attention", inputs, {}, list(inputs), {"scale": 0.4, "causal": int(causal)}, [4])
    np.testing.assert_allclose(got[0], expected, atol=1e-5)
    if masked:
        np.testing.assert_array_equal(got[0][1], 0.0)   # no key left: zeros in the graph too


def test_embedding_record_as_a_gather():
    table = RNG.standard_normal((9, 3)).astype(np.float32)
    ids = np.array([[1, 8, 0], [2, 2, 5]], np.int64)
    got = _run("embedding", {"ids": ids}, {"table": table}, ["table", "ids"], {"padding_index": 0},
               [3])
    np.testing.assert_array_equal(got[0], table[ids])
