"""Run exported graphs in ONNX Runtime and the reference evaluator and hold them to the network."""

from __future__ import annotations

from typing import Sequence

import numpy as np
import onnx
import onnxruntime as ort
from onnx.reference import ReferenceEvaluator

from deepsharp.losses import Loss
from deepsharp.network import Network
from deepsharp_export_onnx import OnnxExport, OnnxFile, check_annotations
from tests.support.reference_ops import REFERENCE_OPS


def ort_session(data: bytes) -> ort.InferenceSession:
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.log_severity_level = 3
    return ort.InferenceSession(data, options, providers=["CPUExecutionProvider"])


def run_ort(data: bytes, x: np.ndarray, input_name: str = "input") -> np.ndarray:
    return ort_session(data).run(None, {input_name: x})[0]


def run_in_float64(model: onnx.ModelProto, x: np.ndarray, input_name: str = "input") -> np.ndarray:
    """The graph evaluated in float64 by the reference evaluator (every float32 initializer,
    input, output, Cast and constant attribute made float64; GroupNormalization's stash_type too,
    whose function would otherwise compute its statistics in float32; the evaluator's own
    LayerNormalization computes in its input's type and takes no other stash_type): an answer to
    judge two float32 answers by where they part."""
    model = onnx.ModelProto.FromString(model.SerializeToString())
    graph, single, double = model.graph, onnx.TensorProto.FLOAT, onnx.TensorProto.DOUBLE
    for k, tensor in enumerate(graph.initializer):
        if tensor.data_type == single:
            graph.initializer[k].CopyFrom(onnx.numpy_helper.from_array(
                onnx.numpy_helper.to_array(tensor).astype(np.float64), tensor.name))
    for value in [*graph.input, *graph.output, *graph.value_info]:
        if value.type.tensor_type.elem_type == single:
            value.type.tensor_type.elem_type = double
    for node in graph.node:
        if node.op_type == "GroupNormalization" and not any(
                a.name == "stash_type" for a in node.attribute):
            node.attribute.append(onnx.helper.make_attribute("stash_type", double))
        for a in node.attribute:
            if (a.name == "to" or a.name == "stash_type" and node.op_type == "GroupNormalization") \
                    and a.i == single:
                a.i = double
            if a.type == onnx.AttributeProto.TENSOR and a.t.data_type == single:
                a.t.CopyFrom(onnx.numpy_helper.from_array(
                    onnx.numpy_helper.to_array(a.t).astype(np.float64), a.t.name))
    x = x.astype(np.float64) if x.dtype == np.float32 else x
    return ReferenceEvaluator(model, new_ops=REFERENCE_OPS).run(None, {input_name: x})[0]


def run_reference(model: onnx.ModelProto, x: np.ndarray, input_name: str = "input") -> np.ndarray:
    """The onnx reference evaluator, checking every shape annotation as values are made (its LSTM
    and GRU made to honour sequence_lens: see reference_ops)."""
    evaluator = ReferenceEvaluator(model, check_shape_annotations=True, new_ops=REFERENCE_OPS)
    return evaluator.run(None, {input_name: x})[0]


def assert_valid(model: onnx.ModelProto) -> None:
    """check_model(full_check=True), and every value the graph makes carries a shape annotation
    of its rank (an axis derived from a symbol, such as steps - 1, may be anonymous)."""
    onnx.checker.check_model(model, full_check=True)
    graph = model.graph
    annotated = {v.name: v for v in [*graph.output, *graph.value_info]}
    for node in graph.node:
        for out in node.output:
            assert out in annotated, f"{node.op_type} node {node.name!r}: output {out!r} has no annotation"
            assert annotated[out].type.tensor_type.HasField("shape"), f"output {out!r} has no shape"


def assert_graph_matches(data: bytes, network: Network, loss: Loss, batches: Sequence[np.ndarray],
                         *, atol: float = 1e-5, reference_atol: float = 1e-4) -> None:
    """The graph answers `network.predict` on every batch, in ONNX Runtime (within `atol`) and in
    the reference evaluator with shape annotations checked; and deepsharp's own annotation checker
    finds every annotation kept, binding `batch` to the batch size."""
    model = onnx.load_from_string(data)
    assert_valid(model)
    session = ort_session(data)
    for x in batches:
        expected = network.predict(x, loss)
        got = session.run(None, {"input": x})[0]
        assert got.shape == expected.shape, f"batch {len(x)}: {got.shape} != {expected.shape}"
        np.testing.assert_allclose(got, expected, rtol=0, atol=atol,
                                   err_msg=f"ONNX Runtime, batch of {len(x)}")
        reference = run_reference(model, x)
        np.testing.assert_allclose(reference, expected, rtol=0, atol=reference_atol,
                                   err_msg=f"reference evaluator, batch of {len(x)}")
        bindings = check_annotations(model, {"input": x})
        assert bindings.get("batch") == len(x), bindings


def assert_round_trip(data: bytes, network: Network, loss: Loss, x: np.ndarray,
                      *, atol: float = 1e-6) -> Network:
    """Read the graph back: the network gives the same numbers and exports to the same bytes."""
    imported = OnnxFile(loss).read(data)
    np.testing.assert_allclose(imported.predict(x, loss), network.predict(x, loss), rtol=0, atol=atol)
    again = OnnxExport(imported.input_shape).to_bytes(imported, loss)
    if again != data:
        a, b = onnx.load_from_string(data), onnx.load_from_string(again)
        raise AssertionError("export -> read -> export changed the bytes:\n"
                             f"first:  {onnx.printer.to_text(a.graph)[:3000]}\n"
                             f"second: {onnx.printer.to_text(b.graph)[:3000]}")
    return imported
