"""What the graph holds: constants, aliases, pruning, names, outputs, and equal bytes."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import numpy_helper

from deepsharp import Module, Parameter, Sequential, Shape, RandomStream
from deepsharp.tensors import Tensor, apply
from deepsharp.tracing import Tracer
from tests.support.onnx_check import assert_valid, ort_session

_rng = np.random.default_rng(11)


def example(*shape):
    return _rng.standard_normal(shape).astype(np.float32)


def initializers(model: onnx.ModelProto) -> dict[str, np.ndarray]:
    return {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}


def ops(model: onnx.ModelProto) -> list[str]:
    return [n.op_type for n in model.graph.node]


def run(model: onnx.ModelProto, **feeds) -> list[np.ndarray]:
    return ort_session(model.SerializeToString()).run(None, feeds)


def trace(fn, *examples, axis_names=None, parameters=None):
    with Tracer() as tracer:
        for name, t in (parameters or {}).items():
            tracer.parameter(name, t)
        xs = [tracer.input(f"x{i}", e, axis_names) for i, e in enumerate(examples)]
        out = fn(*xs)
        return tracer.finish(out if isinstance(out, dict) else {"y": out})


def test_a_weight_used_twice_is_one_initializer_holding_a_copy():
    w = Tensor(example(4, 4))
    traced = trace(lambda x: (x @ w).relu() @ w, example(3, 4), parameters={"w": w})
    before = w.numpy().copy()
    model = traced.to_onnx()
    assert list(initializers(model)) == ["w"]
    np.testing.assert_array_equal(initializers(model)["w"], before)


def test_scalars_are_deduplicated_by_value():
    traced = trace(lambda x: x * 0.5 + (x * 0.5).exp() * 0.5 + 2.0, example(3, 4))
    assert sorted(initializers(traced.to_onnx()).values(), key=float) == [0.5, 2.0]


def test_a_differently_strided_view_of_a_weight_is_named_view():
    w = Tensor(example(2, 4))
    model = trace(lambda x: x @ w.T, example(3, 4), parameters={"w": w}).to_onnx()
    weights = initializers(model)
    assert list(weights) == ["w.view_0"]
    assert weights["w.view_0"].flags["C_CONTIGUOUS"]
    np.testing.assert_array_equal(weights["w.view_0"], w.numpy().T)


def test_operations_on_constants_run_eagerly_and_write_no_node():
    w, b = Tensor(example(4, 3)), Tensor(example(3))
    model = trace(lambda x: x @ (w * 2.0 + 1.0) + (b + b), example(5, 4)).to_onnx()
    assert ops(model) == ["MatMul", "Add"]
    values = sorted(initializers(model).values(), key=lambda a: a.ndim)
    np.testing.assert_allclose(values[0], b.numpy() * 2)
    np.testing.assert_allclose(values[1], w.numpy() * 2 + 1)


def test_aliases_write_no_node():
    def fn(x):
        y = x.clone().reshape(x.shape)[:, :].detach().permute(0, 1).astype(np.float32)
        return {"y": apply("sum", y.contiguous(), axes=(), keepdims=0).relu()}  # sums nothing

    model = trace(fn, example(3, 4)).to_onnx()
    assert ops(model) == ["Relu"]
    assert model.graph.node[0].input == ["x0"]


def test_an_output_that_is_an_input_or_repeated_gets_an_identity():
    x_example = example(3, 4)
    with Tracer() as tracer:
        x = tracer.input("x", x_example, {0: "batch"})
        r = x.relu()
        traced = tracer.finish({"same": x.detach(), "r": r, "again": r})
    model = traced.to_onnx()
    assert_valid(model)
    assert [(n.op_type, list(n.input), list(n.output)) for n in model.graph.node] == [
        ("Relu", ["x"], ["r"]), ("Identity", ["x"], ["same"]), ("Identity", ["r"], ["again"])]
    same, r, again = run(model, x=x_example)
    np.testing.assert_array_equal(same, x_example)
    np.testing.assert_array_equal(again, np.maximum(x_example, 0))


def test_only_what_the_outputs_need_is_kept():
    w = Tensor(example(4, 4))
    with Tracer() as tracer:
        tracer.parameter("unused_weight", w)
        x = tracer.input("x", example(3, 4))
        scratch = (x @ w).exp()  # recorded, never used by an output
        scratch.sum()
        y = x.tanh()
        traced = tracer.finish({"y": y})
    assert [op.primitive for op in traced.graph.ops] == ["tanh"]
    model = traced.to_onnx()
    assert ops(model) == ["Tanh"] and not initializers(model)


def test_python_control_flow_is_unrolled():
    layers = [Tensor(example(4, 4)) for _ in range(3)]

    def fn(x):
        for i, w in enumerate(layers):
            x = x @ w
            if x.shape[-1] == 4 and i % 2 == 0:  # decided on sizes and flags: fine
                x = x.relu()
        return x

    model = trace(fn, example(5, 4), axis_names={0: "batch"}).to_onnx()
    assert ops(model) == ["MatMul", "Relu", "MatMul", "MatMul", "Relu"]


def test_several_inputs_share_a_symbol_and_outputs_keep_their_order():
    a, b = example(3, 4), example(3, 2)
    with Tracer() as tracer:
        x = tracer.input("a", a, {0: "batch"})
        y = tracer.input("b", b, {0: "batch"})
        traced = tracer.finish({"first": y * 2.0, "second": x.sum(axis=1, keepdims=True) + y})
    model = traced.to_onnx()
    assert_valid(model)
    assert [o.name for o in model.graph.output] == ["first", "second"]
    assert traced.input_names == ["a", "b"] and traced.output_names == ["first", "second"]
    dims = [[d.dim_param or d.dim_value for d in v.type.tensor_type.shape.dim]
            for v in [*model.graph.input[:2], *model.graph.output]]  # (IR 3 lists initializers too)
    assert dims == [["batch", 4], ["batch", 2], ["batch", 2], ["batch", 2]]
    a2, b2 = example(6, 4), example(6, 2)
    first, second = run(model, a=a2, b=b2)
    np.testing.assert_allclose(second, a2.sum(1, keepdims=True) + b2, rtol=1e-6, atol=1e-6)


def test_equal_traces_give_equal_bytes():
    def build():
        return Sequential().dense(6).gelu().dense(2).lower(Shape(4), RandomStream(5))

    x = example(3, 4)
    first = build().trace(x, axis_names={0: "batch"}).to_bytes()
    second = build().trace(x.copy(), axis_names={0: "batch"}).to_bytes()
    assert first == second
    other = build()
    other.load_state_dict({k: v + 1 for k, v in other.state_dict().items()})
    assert other.trace(x, axis_names={0: "batch"}).to_bytes() != first


def test_save_onnx_writes_the_bytes(tmp_path):
    traced = trace(lambda x: x.sigmoid(), example(3, 4), axis_names={0: "batch"})
    traced.save_onnx(tmp_path / "model.onnx")
    assert (tmp_path / "model.onnx").read_bytes() == traced.to_bytes()
    assert [p.name for p in tmp_path.iterdir()] == ["model.onnx"]


class Normalised(Module):
    """A parameter, a buffer and a nested module, with dropout that only acts in training."""

    def __init__(self):
        super().__init__()
        self.body = Sequential().dense(3).dropout(0.5).lower(Shape(4), RandomStream(2))
        self.scale = Parameter(np.full(3, 2.0, np.float32))
        self.register_buffer("shift", np.ones(3, np.float32))

    def forward(self, x):
        return self.body(x) * self.scale - self.shift


def test_module_trace_names_parameters_and_buffers_by_path_and_traces_evaluation():
    module = Normalised()
    module.train()
    traced = module.trace(example(5, 4), axis_names={0: "batch"})
    assert module.training  # the mode is restored
    model = traced.to_onnx()
    assert set(initializers(model)) == {"body.0.weight", "body.0.bias", "scale", "shift"}
    assert set(module.state_dict()) == set(initializers(model))
    assert "Dropout" not in ops(model)
    x = example(9, 4)
    (got,) = run(model, input=x)
    np.testing.assert_allclose(got, module.evaluate(x), atol=1e-6)


def test_module_trace_with_several_named_inputs_and_outputs():
    class Two(Module):
        def forward(self, a, b):
            return {"sum": a + b, "product": a * b}

    traced = Two().trace({"a": example(3, 2), "b": example(3, 2)}, axis_names={0: "batch"})
    assert traced.input_names == ["a", "b"] and traced.output_names == ["sum", "product"]
    assert "batch" in repr(traced)
