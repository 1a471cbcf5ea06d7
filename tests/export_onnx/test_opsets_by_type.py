"""opsets.BY_TYPE against ONNX Runtime and the checker: each entry's node, alone on inputs of that
element type, runs and passes check_model(full_check=True) at the set the table gives and not at
the set before; an entry of None runs at no set up to the newest Runtime takes."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from deepsharp_export_onnx.opsets import BY_TYPE, FIRST
from tests.support.onnx_check import ort_session

NEWEST = 23
ELEM = {"float": TensorProto.FLOAT, "double": TensorProto.DOUBLE, "int": TensorProto.INT64,
        "bool": TensorProto.BOOL}
NUMPY = {"float": np.float32, "double": np.float64, "int": np.int64, "bool": np.bool_}
BINARY = {"Max", "Min", "Add", "Sub", "Mul", "Div", "Less", "Greater", "LessOrEqual",
          "GreaterOrEqual", "Pow", "MatMul", "Gemm", "Einsum", "Mod", "BitwiseAnd", "BitwiseOr",
          "BitwiseXor"}


def _node_inputs(op: str, kind: str):
    """(input names -> (elem type, shape) for graph inputs, initializers, attributes, outputs)."""
    x = {"x": (ELEM[kind], [2, 3])}
    if op in ("MatMul", "Gemm"):
        return {**x, "w": (ELEM[kind], [3, 2])}, {}, {}, 1
    if op == "Einsum":
        return {**x, "w": (ELEM[kind], [4, 3])}, {}, {"equation": "ij,kj->ik"}, 1
    if op in BINARY:  # Mod: C's fmod, the form floats need (remainders of floats use it)
        return {**x, "w": (ELEM[kind], [2, 3])}, {}, {"fmod": 1} if op == "Mod" else {}, 1
    if op == "Where":
        return {"c": (TensorProto.BOOL, [2, 3]), **x, "w": (ELEM[kind], [2, 3])}, {}, {}, 1
    if op == "PRelu":
        return x, {"slope": np.full(3, 0.2, NUMPY[kind])}, {}, 1
    if op == "Clip":
        bounds = {n: np.asarray(v, NUMPY[kind]) for n, v in (("low", 0), ("high", 1))}
        return x, bounds, {}, 1
    extra = {"TopK": ({"k": np.array([2])}, {}, 2), "CumSum": ({"axis": np.array(1)}, {}, 1),
             "Pad": ({"pads": np.array([0, 1, 0, 1])}, {}, 1),
             "ArgMax": ({}, {"axis": 1}, 1), "ArgMin": ({}, {"axis": 1}, 1)}
    if op in extra:
        constants, attrs, outputs = extra[op]
        return x, constants, attrs, outputs
    return x, {}, ({"keepdims": 0} if op.startswith("Reduce") else {}), 1


def _runs(op: str, kind: str, opset: int) -> bool:
    inputs, constants, attrs, outputs = _node_inputs(op, kind)
    node = helper.make_node(op, [*inputs, *constants], [f"y{k}" for k in range(outputs)], **attrs)
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info(n, t, s) for n, (t, s) in inputs.items()],
        [helper.make_tensor_value_info(f"y{k}", 0, None) for k in range(outputs)],
        initializer=[numpy_helper.from_array(a, n) for n, a in constants.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = helper.find_min_ir_version_for([helper.make_opsetid("", opset)])
    if model.ir_version < 4:
        model.graph.input.extend(helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(
            a.dtype), list(a.shape)) for n, a in constants.items())
    try:
        inferred = onnx.shape_inference.infer_shapes(model, strict_mode=True)
        for k in range(outputs):
            model.graph.output[k].CopyFrom(inferred.graph.output[k])
        onnx.checker.check_model(model, full_check=True)
        feeds = {n: (np.arange(int(np.prod(s))).reshape(s) % 3 + 1).astype(
            NUMPY[kind] if t == ELEM[kind] else np.bool_) for n, (t, s) in inputs.items()}
        ort_session(model.SerializeToString()).run(None, feeds)
    except Exception:
        return False
    return True


ENTRIES = [(op, kind, need) for op, table in BY_TYPE.items() for kind, need in table.items()]


@pytest.mark.parametrize("op, kind, need", ENTRIES, ids=[f"{o}-{k}" for o, k, _ in ENTRIES])
def test_the_table_is_what_onnx_runtime_runs(op, kind, need):
    if need is None:
        assert not _runs(op, kind, NEWEST), f"{op} on {kind} runs at {NEWEST}"
        other = next(k for k in ("float", "int", "double") if BY_TYPE[op].get(k, 0) is not None)
        assert _runs(op, other, NEWEST), f"the {op} node built here does not run on {other}"
        return
    assert _runs(op, kind, need), f"{op} on {kind} does not run at {need}"
    if need - 1 >= max(FIRST.get(op, 7), 7):
        assert not _runs(op, kind, need - 1), f"{op} on {kind} already runs at {need - 1}"
