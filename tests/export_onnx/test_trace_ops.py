"""Every mapped primitive traced alone: ONNX Runtime and the reference evaluator agree with the eager
run at the traced sizes and at other sizes of every symbol."""

from __future__ import annotations

import numpy as np
import pytest

from deepsharp import functional as F
from deepsharp.tensors import PRIMITIVES, Tensor, apply
from deepsharp.tracing.tracer import ALIASES, NOT_TRACEABLE
from deepsharp_export_onnx.write.nodes import PRIMITIVE_NODES
from tests.support.trace_check import check_trace, named_inputs

_rng = np.random.default_rng(7)
W = Tensor(_rng.standard_normal((4, 6)).astype(np.float32))
V4 = Tensor(_rng.standard_normal(4).astype(np.float32))
TABLE = Tensor(_rng.standard_normal((10, 3)).astype(np.float32))
W3 = Tensor(_rng.standard_normal((2, 4, 3)).astype(np.float32))
MASK = Tensor(np.array([True, False, True, True]))

# example sizes differ from every fixed size below (see docs/tracing.md, symbolic axes)
B = {"batch": (7, 1, 8)}
BT = {"batch": (7, 1, 6), "steps": (5, 2, 9)}
X = {"x": ("batch", 4)}
XS = {"x": ("batch", "steps", 4)}


# (id, function, inputs, sizes, an ONNX op the graph must hold)
CASES = [
    ("add-constant-vector", lambda x: x + V4, X, B, "Add"),
    ("sub-from-scalar", lambda x: 2.0 - x, X, B, "Sub"),
    ("mul-two-inputs", lambda x, y: x * y, {"x": ("batch", 4), "y": (1, 4)}, B, "Mul"),
    ("div", lambda x: x / (x.abs() + 1.0), X, B, "Div"),
    ("pow-constant-exponent", lambda x: (x.abs() + 0.5) ** 1.5, X, B, "Pow"),
    ("pow-traced-exponent", lambda x: 2.0 ** x, X, B, "Pow"),
    ("maximum", lambda x, y: F.maximum(x, y), {"x": ("batch", 4), "y": ("batch", 4)}, B, "Max"),
    ("minimum-scalar", lambda x: F.minimum(x, 0.25), X, B, "Min"),
    ("where-constant-condition", lambda x: F.where(MASK, x, -x), X, B, "Where"),
    ("where-input-condition", lambda flag, x: F.where(flag, x, 0.0),
     {"flag": ("batch", 4), "x": ("batch", 4)}, B, "Where"),
    ("neg", lambda x: -x, X, B, "Neg"),
    ("exp", lambda x: x.exp(), X, B, "Exp"),
    ("log", lambda x: (x.abs() + 1.0).log(), X, B, "Log"),
    ("sqrt", lambda x: x.abs().sqrt(), X, B, "Sqrt"),
    ("sin", lambda x: apply("sin", x), X, B, "Sin"),
    ("cos", lambda x: apply("cos", x), X, B, "Cos"),
    ("relu", F.relu, XS, BT, "Relu"),
    ("sigmoid", F.sigmoid, XS, BT, "Sigmoid"),
    ("tanh", F.tanh, XS, BT, "Tanh"),
    ("gelu-erf", F.gelu, XS, BT, "Gelu"),
    ("gelu-tanh", lambda x: F.gelu(x, approximate="tanh"), XS, BT, "Gelu"),
    ("silu", F.silu, X, B, "Sigmoid"),
    ("elu", lambda x: F.elu(x, 0.7), X, B, "Elu"),
    ("leaky-relu", lambda x: F.leaky_relu(x, 0.2), X, B, "LeakyRelu"),
    ("softplus", F.softplus, X, B, "Softplus"),
    ("hardtanh", lambda x: F.hardtanh(x, -0.5, 0.7), X, B, "Clip"),
    ("relu6", lambda x: F.relu6(x * 4), X, B, "Clip"),
    ("mish", F.mish, XS, BT, "Softplus"),
    ("hardsigmoid", lambda x: F.hardsigmoid(x * 4), X, B, "HardSigmoid"),
    ("hardswish", lambda x: F.hardswish(x * 4), XS, BT, "HardSwish"),
    ("relu-in-place", lambda x: F.relu(x * 1.0, inplace=True), X, B, "Relu"),
    ("prelu-channels", lambda x: F.prelu(x, F.full((x.shape[1],), 0.2)), X, B, "PRelu"),
    ("softmax-last", F.softmax, XS, BT, "Softmax"),
    ("softmax-over-steps", lambda x: F.softmax(x, axis=1), XS, BT, "Softmax"),
    ("log-softmax", F.log_softmax, XS, BT, "LogSoftmax"),
    ("matmul-by-weight", lambda x: x @ W, XS, BT, "MatMul"),
    ("matmul-batched", lambda x: x @ x.permute(0, 2, 1), XS, BT, "MatMul"),
    ("matmul-broadcast", lambda x: x.reshape(x.shape[0], 1, x.shape[1], 4) @ W3, XS, BT, "MatMul"),
    ("sum-over-steps", lambda x: x.sum(axis=1), XS, BT, "ReduceSum"),
    ("mean-keepdims", lambda x: x.mean(axis=-1, keepdims=True), XS, BT, "ReduceMean"),
    ("max-all", lambda x: x.max(), XS, BT, "ReduceMax"),
    ("reshape-merge-symbols", lambda x: x.reshape(x.shape[0] * x.shape[1], 4), XS, BT, "Reshape"),
    ("reshape-split-channels", lambda x: x.reshape(*x.shape[:2], 2, 2), XS, BT, "Reshape"),
    ("reshape-flatten", lambda x: x.reshape(x.shape[0], -1), {"x": ("batch", 5, 4)}, B, "Reshape"),
    ("reshape-minus-one", lambda x: x.reshape(-1, 2), X, B, "Reshape"),
    ("unsqueeze-squeeze", lambda x: x.unsqueeze(1).relu().squeeze(1) + x.unsqueeze(0).squeeze(),
     X, B, "Reshape"),
    ("permute", lambda x: x.permute(2, 0, 1), XS, BT, "Transpose"),
    ("transpose-swaps-two-axes", lambda x: x.transpose(0, 2), XS, BT, "Transpose"),
    ("slice-fixed-axis", lambda x: x[:, :, 1:3], XS, BT, "Slice"),
    ("slice-negative-step", lambda x: x[:, ::-2], {"x": ("batch", 7)}, B, "Slice"),
    ("flip-symbolic", lambda x: x.flip(1), XS, BT, "Slice"),
    ("flip-everything", lambda x: x[::-1, ::-1], X, B, "Slice"),
    ("concat-constant-rows", lambda x: F.concat([x, Tensor(np.ones((2, 4), np.float32))], axis=0),
     X, B, "Concat"),
    ("concat-same-symbol", lambda x: F.concat([x, x * 2], axis=1).reshape(-1, 4), XS, BT, "Concat"),
    ("concat-new-extent", lambda x, y: F.concat([x, y], axis=1).reshape(-1, 4),
     {"x": ("batch", "steps", 4), "y": ("batch", 3, 4)}, BT, "Concat"),
    ("expand-to-a-symbol", lambda x, y: y.expand(x.shape[0], 2, 4) + x[:, :2],
     {"x": ("batch", 5, 4), "y": (1, 1, 4)}, B, "Expand"),
    ("expand-keeps-symbols", lambda x: x.unsqueeze(2).expand(*x.shape[:2], 3, 4), XS, BT, "Expand"),
    ("gather-ids-into-table", lambda ids: TABLE[ids], {"ids": ("batch", "steps")}, BT, "Gather"),
    ("gather-constant-indices", lambda x: apply("gather", x, Tensor(np.array([3, 0, -1])), axis=1),
     X, B, "Gather"),
    ("select-last-step", lambda x: x.select(1, -1), XS, BT, "Slice"),  # a view, as PyTorch's
    ("select-first-step", lambda x: x.select(1, 0), XS, BT, "Slice"),
    ("write-through-a-diagonal", lambda x: _diagonal_doubled(x), {"x": ("batch", 3, 3)}, B,
     "ScatterND"),
    ("promoted-by-an-int-constant", lambda x: x * Tensor(np.arange(4)), X, B, "Mul"),  # cast eagerly
    ("promoted-bool-mask", lambda flag, x: F.concat([flag * x, flag], axis=-1),
     {"flag": ("batch", 4), "x": ("batch", 4)}, B, "Cast"),
    ("promoted-sqrt-of-ids", lambda ids: ids.sqrt() @ Tensor(np.ones((3, 2))),
     {"ids": ("batch", 3)}, B, "Cast"),
    ("cast-to-float64", lambda x: x.astype(np.float64), X, B, "Cast"),
    ("cast-ids-to-float", lambda ids: ids.astype(np.float32) * 0.5, {"ids": ("batch", 3)}, B, "Cast"),
]


def _diagonal_doubled(x):
    y = x * 1.0
    y.diagonal(0, 1, 2).mul_(2.0)  # a view: the write reaches y (as PyTorch's CopySlices)
    return y


@pytest.mark.parametrize("fn, inputs, sizes, op_type", [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])
def test_traced_op_matches_eager(fn, inputs, sizes, op_type):
    checked = check_trace(fn, inputs, sizes, make=named_inputs)
    assert op_type in checked.ops(), checked.ops()


def test_every_primitive_is_mapped_aliased_or_refused():
    """The lowering table, the aliases and the refusals cover every primitive of the core."""
    covered = set(PRIMITIVE_NODES) | set(NOT_TRACEABLE) | {"copy"}
    assert sorted(set(PRIMITIVES) - covered) == []
    assert set(ALIASES) - {"copy"} <= set(PRIMITIVE_NODES)


def test_static_shapes_write_constant_shape_operands():
    checked = check_trace(lambda x: x.reshape(6, 2).transpose(1, 0).reshape(3, 4), {"x": (3, 4)})
    assert checked.ops() == ["Reshape", "Transpose", "Reshape"]
    assert checked.opset == 7


def test_one_symbolic_axis_reshapes_with_minus_one():
    checked = check_trace(lambda x: x.reshape(x.shape[0], 2, 2), X, B)
    assert checked.count("Shape") == 0
    from onnx import numpy_helper

    (reshape,) = [n for n in checked.model.graph.node if n.op_type == "Reshape"]
    operand = {i.name: numpy_helper.to_array(i) for i in checked.model.graph.initializer}[reshape.input[1]]
    assert operand.tolist() == [-1, 2, 2]


def test_two_symbolic_axes_read_their_sizes_from_shape_nodes():
    checked = check_trace(lambda x: x.reshape(x.shape[0], x.shape[1], 2, 2), XS, BT)
    assert checked.count("Shape") == 1 and checked.count("Gather") == 2
    assert checked.count("Concat") == 1


def test_expand_writes_one_where_the_input_has_the_size():
    checked = check_trace(lambda x: x.unsqueeze(2).expand(*x.shape[:2], 3, 4), XS, BT)
    from onnx import numpy_helper

    (expand,) = [n for n in checked.model.graph.node if n.op_type == "Expand"]
    operand = {i.name: numpy_helper.to_array(i) for i in checked.model.graph.initializer}[expand.input[1]]
    assert operand.tolist() == [1, 1, 3, 1]  # batch, steps and 4 kept by broadcasting


def test_concat_of_a_symbolic_and_a_fixed_extent_is_a_new_atom():
    checked = check_trace(lambda x, y: F.concat([x, y], axis=1).reshape(-1, 4).relu()
                          .reshape(x.shape[0], x.shape[1] + 3, 4),
                          {"x": ("batch", "steps", 4), "y": ("batch", 3, 4)}, BT)
    dims = {v.name: [d.dim_param or d.dim_value for d in v.type.tensor_type.shape.dim]
            for v in checked.model.graph.value_info}
    assert ["batch", "concat1_1", 4] in dims.values()
    assert ["batch*concat1_1", 4] in dims.values()


def test_select_is_a_slice_counted_from_the_end_at_any_size():
    """select is a view (as PyTorch's): a Slice and a Reshape, no Gather; check_trace holds the
    graph at other batch sizes and series lengths."""
    checked = check_trace(lambda x: x.select(1, -1) + 1.0, XS, BT)
    assert "Gather" not in checked.ops() and "Slice" in checked.ops()
    checked = check_trace(lambda x: x.select(1, 2) + 1.0, {"x": ("batch", 5, 4)}, B)
    assert "Gather" not in checked.ops()
