"""A primitive becomes traceable with one entry in the shared table: here a stand-in for a
convolution (sums of neighbouring steps: a symbolic length T gives T - 1, a new atom)."""

from __future__ import annotations

import numpy as np
import pytest

from deepsharp.errors import TraceErrorKind, TraceException
from deepsharp.tensors import PRIMITIVES, Tensor, apply, primitive
from deepsharp.tracing import Tracer, constants
from deepsharp_export_onnx.write.nodes import PRIMITIVE_DIMS, PRIMITIVE_NODES, writes_primitive
from tests.support.trace_check import check_trace

TO_THE_END = 2 ** 63 - 1


@pytest.fixture
def pair_sum():
    @primitive("test_pair_sum")
    class _PairSum:
        """a[..., 1:, ...] + a[..., :-1, ...] along `axis`."""

        def forward(a, *, axis):
            n = a.shape[axis]
            return np.take(a, range(1, n), axis) + np.take(a, range(n - 1), axis), None

    # the one entry: ONNX nodes, and (by default) positional symbolic dims
    @writes_primitive("test_pair_sum")
    def _write(emit, inputs, attrs, ranks):
        axes = emit.constant("axes", [attrs["axis"]])
        late = emit("Slice", [inputs[0], emit.constant("one", [1]),
                              emit.constant("end", [TO_THE_END]), axes], suffix="late")
        early = emit("Slice", [inputs[0], emit.constant("zero", [0]),
                               emit.constant("minus_one", [-1]), axes], suffix="early")
        return emit("Add", [late, early])

    yield lambda x, axis: apply("test_pair_sum", x, axis=axis)
    del PRIMITIVES["test_pair_sum"], PRIMITIVE_NODES["test_pair_sum"]
    PRIMITIVE_DIMS.pop("test_pair_sum", None)


def test_a_new_primitive_with_one_table_entry_traces_with_a_derived_atom(pair_sum):
    def fn(x):
        y = pair_sum(x, 1).relu()                       # (batch, steps - 1, 4): a new atom
        return y.reshape(y.shape[0], y.shape[1] * 4)     # read back from y's shape at run time

    checked = check_trace(fn, {"x": ("batch", "steps", 4)}, {"batch": (3, 1, 6), "steps": (5, 2, 9)})
    dims = {v.name: [d.dim_param or d.dim_value for d in v.type.tensor_type.shape.dim]
            for v in [*checked.model.graph.value_info, *checked.model.graph.output]}
    assert dims["test_pair_sum_0"] == ["batch", "test_pair_sum1_1", 4]
    assert dims["output"] == ["batch", "4*test_pair_sum1_1"]
    shapes = [n for n in checked.model.graph.node if n.op_type == "Shape"]
    assert [s.input for s in shapes] == [["x"], ["test_pair_sum_0"]]  # where each atom was made


def test_a_constant_too_large_for_a_file_is_unsupported(monkeypatch):
    monkeypatch.setattr(constants, "LARGEST_CONSTANT", 64)
    with Tracer() as tracer:
        x = tracer.input("x", np.ones((2, 4), np.float32))
        with pytest.raises(TraceException) as caught:
            x @ Tensor(np.ones((4, 5), np.float32))
    assert caught.value.kind is TraceErrorKind.UNSUPPORTED_OPERATION
    assert "matmul (operation 1): a constant of shape (4, 5) holds 80 bytes" in str(caught.value)


def test_a_derived_extent_of_one_is_refused(pair_sum):
    with Tracer() as tracer:
        x = tracer.input("x", np.ones((3, 2, 4), np.float32), {0: "batch", 1: "steps"})
        with pytest.raises(TraceException) as caught:
            pair_sum(x, 1)  # steps 2 -> 1
    assert caught.value.kind is TraceErrorKind.SYMBOLIC_SHAPE
    assert "test_pair_sum (operation 1): axis 1 of its result is symbolic but only 1" in str(caught.value)
