"""Models traced whole: an MLP and a transformer written as code, stacks traced and exported,
OnnxExport of networks written as code."""

from __future__ import annotations

import io
import math

import numpy as np
import onnx
import pytest

from deepsharp import (
    BinaryCrossEntropy, CrossEntropy, MeanSquaredError, Module, Parameter, RandomStream,
    Sequential, Shape, functional as F,
)
from deepsharp.tracing import TraceException, Tracer
from deepsharp_export_onnx import ExportRefused, OnnxExport
from tests.support.onnx_check import assert_valid, ort_session
from tests.support.trace_check import check_trace
from tests.support.trace_check import assert_close, check_trace


def _weights(seed: int):
    generator = np.random.default_rng(seed)

    def make(*shape, scale=0.4, offset=0.0):
        return Parameter((offset + generator.standard_normal(shape) * scale).astype(np.float32))

    return make


class MLP(Module):
    def __init__(self, sizes=(6, 16, 16, 3), seed=0):
        super().__init__()
        make = _weights(seed)
        for i, (a, b) in enumerate(zip(sizes, sizes[1:])):
            setattr(self, f"w{i}", make(b, a))  # (out, in), as PyTorch's F.linear takes it
            setattr(self, f"b{i}", make(b))
        object.__setattr__(self, "depth", len(sizes) - 1)

    def forward(self, x):
        for i in range(self.depth):
            x = F.linear(x, getattr(self, f"w{i}"), getattr(self, f"b{i}"))
            if i < self.depth - 1:
                x = F.gelu(x, approximate="tanh") if i % 2 else x.relu()
        return x


class Block(Module):
    """Pre-norm transformer block from primitives: a layer norm written by hand, multi-head
    attention from reshape/transpose/matmul/softmax, a GELU MLP, residuals."""

    def __init__(self, width=8, heads=2, hidden=16, seed=0):
        super().__init__()
        make = _weights(seed)
        object.__setattr__(self, "heads", heads)
        self.norm1_scale, self.norm1_shift = make(width, scale=0.1, offset=1.0), make(width, scale=0.1)
        self.norm2_scale, self.norm2_shift = make(width, scale=0.1, offset=1.0), make(width, scale=0.1)
        self.query, self.key, self.value, self.out = (make(width, width) for _ in range(4))
        self.up, self.up_bias = make(width, hidden), make(hidden)
        self.down, self.down_bias = make(hidden, width), make(width)

    @staticmethod
    def norm(x, scale, shift, eps=1e-5):
        centred = x - x.mean(axis=-1, keepdims=True)
        variance = (centred * centred).mean(axis=-1, keepdims=True)
        return centred / (variance + eps).sqrt() * scale + shift

    def attention(self, x):
        batch, steps, width = x.shape
        size = width // self.heads

        def heads(t):
            return t.reshape(batch, steps, self.heads, size).permute(0, 2, 1, 3)

        q, k, v = heads(x @ self.query), heads(x @ self.key), heads(x @ self.value)
        scores = F.softmax((q @ k.permute(0, 1, 3, 2)) * (1.0 / math.sqrt(size)), axis=-1)
        mixed = (scores @ v).permute(0, 2, 1, 3).reshape(batch, steps, width)
        return mixed @ self.out

    def forward(self, x):
        x = x + self.attention(self.norm(x, self.norm1_scale, self.norm1_shift))
        hidden = F.gelu(self.norm(x, self.norm2_scale, self.norm2_shift) @ self.up + self.up_bias)
        return x + hidden @ self.down + self.down_bias


class Transformer(Module):
    """Two blocks, the mean over steps, a linear head (series classification)."""

    def __init__(self, width=8, classes=3):
        super().__init__()
        self.embed = _weights(5)(6, width)
        self.first, self.second = Block(width, seed=1), Block(width, seed=2)
        self.head = _weights(6)(width, classes)

    def forward(self, x):
        h = self.second(self.first(x @ self.embed))
        return h.mean(axis=1) @ self.head


def _parameters(module: Module):
    return dict(module.named_parameters())


def test_mlp_with_symbolic_batch():
    model = MLP().eval()
    checked = check_trace(model.forward, {"x": ("batch", 6)}, {"batch": (5, 1, 64)},
                          parameters=_parameters(model))
    assert checked.ops().count("Gemm") == 3 and checked.opset == 20  # Gelu; F.linear is a Gemm


def test_transformer_block_with_symbolic_batch_and_steps():
    block = Block()
    checked = check_trace(block.forward, {"x": ("batch", "steps", 8)},
                          {"batch": (3, 1, 6), "steps": (5, 1, 11)}, parameters=_parameters(block))
    ops = checked.ops()
    assert ops.count("Softmax") == 1 and ops.count("Reshape") == 4
    # the two symbolic sizes read from the input's shape once, reused by every reshape
    assert ops.count("Shape") == 1 and ops.count("Gather") == 2


def test_transformer_through_module_trace():
    model = Transformer()
    x = np.random.default_rng(4).standard_normal((3, 5, 6)).astype(np.float32)
    traced = model.trace(x, axis_names={0: "batch", 1: "steps"})
    model_proto = traced.to_onnx()
    assert_valid(model_proto)
    named = {i.name for i in model_proto.graph.initializer
             if "/" not in i.name and not i.name.startswith("const_")}  # not operands, scalars
    assert named == set(model.state_dict())
    session = ort_session(model_proto.SerializeToString())
    for shape in [(3, 5, 6), (1, 1, 6), (4, 13, 6)]:
        x = np.random.default_rng(shape[1]).standard_normal(shape).astype(np.float32)
        assert_close(session.run(None, {"input": x})[0], model.evaluate(x), 1e-5, f"{shape}")


@pytest.mark.parametrize("spec, shape, axes", [
    (Sequential().dense(8).relu().dense(8).tanh().dense(3), Shape(5), {0: "batch"}),
    (Sequential().dense(6).gelu().dropout(0.2).dense(2).softmax(), Shape(4), {0: "batch"}),
    (Sequential().dense(6).silu().dense(2), Shape(7, 4), {0: "batch", 1: "steps"}),
])
def test_a_traced_stack_gives_the_numbers_of_the_exported_stack(spec, shape, axes):
    network = spec.lower(shape, RandomStream(3))
    generator = np.random.default_rng(0)
    example = generator.standard_normal((3, 11, *tuple(shape)[1:]) if shape.rank == 2
                                        else (3, *tuple(shape))).astype(np.float32)
    traced = network.trace(example, axis_names=axes).to_bytes()
    exported = OnnxExport(shape).to_bytes(network, MeanSquaredError())
    assert_valid(onnx.load_from_string(traced))
    ours, theirs = ort_session(traced), ort_session(exported)
    for n in (1, 2, 9):
        x = generator.standard_normal((n, *tuple(shape))).astype(np.float32)
        if shape.rank == 2:
            x = generator.standard_normal((n, 2 + n, *tuple(shape)[1:])).astype(np.float32)
        np.testing.assert_array_equal(ours.run(None, {"input": x})[0],
                                      theirs.run(None, {"input": x})[0])


class Wrapped(Module):
    """A stack inside a network written as code: OnnxExport traces it."""

    def __init__(self, spec, shape):
        super().__init__()
        self.inner = spec.lower(shape, RandomStream(8))
        self.gain = Parameter(np.full(self.inner.output_shape[-1], 1.5, np.float32))

    def forward(self, x):
        return self.inner(x) * self.gain


@pytest.mark.parametrize("loss, last", [(BinaryCrossEntropy(), "Sigmoid"),
                                        (CrossEntropy(), "Softmax"),
                                        (MeanSquaredError(), "Mul")])
def test_onnx_export_traces_a_network_written_as_code(loss, last):
    module = Wrapped(Sequential().dense(5).relu().dense(3), Shape(4))
    stream = io.BytesIO()
    OnnxExport(Shape(4), features=["a", "b", "c", "d"]).write(module, loss, stream)
    model = onnx.load_from_string(stream.getvalue())
    assert_valid(model)
    assert model.graph.node[-1].op_type == last and model.graph.node[-1].output == ["output"]
    assert [i.name for i in model.graph.input][:1] == ["input"]
    metadata = {p.key: p.value for p in model.metadata_props}
    assert metadata["features"] == '["a", "b", "c", "d"]'
    session = ort_session(stream.getvalue())
    for n in (1, 6):
        x = np.random.default_rng(n).standard_normal((n, 4)).astype(np.float32)
        assert_close(session.run(None, {"input": x})[0], module.predict(x, loss), 1e-5, f"{n}")


def test_onnx_export_of_a_series_module_has_symbolic_steps():
    module = Wrapped(Sequential().dense(3).tanh(), Shape(6, 4))
    data = OnnxExport(Shape(6, 4)).to_bytes(module, MeanSquaredError())
    model = onnx.load_from_string(data)
    dims = [d.dim_param or d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim]
    assert dims == ["batch", "steps", 4]
    x = np.random.default_rng(2).standard_normal((2, 9, 4)).astype(np.float32)
    assert_close(ort_session(data).run(None, {"input": x})[0], module.evaluate(x), 1e-5, "steps 9")


def test_onnx_export_refuses_what_cannot_be_traced_and_a_newer_opset():
    class Peeking(Module):
        def forward(self, x):
            return x * float(x.sum())

    with pytest.raises(ExportRefused, match=r"Peeking \(traced\): DATA_DEPENDENT: __float__"):
        OnnxExport(Shape(4)).to_bytes(Peeking(), MeanSquaredError())
    with pytest.raises(ExportRefused, match=r"gelu \(operation \d+\): node '\w+' \(Gelu\) needs "
                                            r"operator set 20, above max_opset 17"):
        OnnxExport(Shape(6), max_opset=17).to_bytes(MLP(), MeanSquaredError())
    with pytest.raises(ExportRefused, match="expected a Network or a Module"):
        OnnxExport(Shape(4)).to_bytes(lambda x: x, MeanSquaredError())


class ClassToken(Module):
    """A summary token (the mean of the steps plus a learned vector) put before the steps (a
    concatenation: steps + 1 is a new atom), a block over steps + 1, and the token's output as
    the answer (a select)."""

    def __init__(self, width=8):
        super().__init__()
        make = _weights(9)
        self.embed, self.token = make(6, width), make(1, 1, width)
        self.block = Block(width, seed=3)

    def forward(self, x):
        h = x @ self.embed
        token = h.mean(axis=1, keepdims=True) + self.token  # (batch, 1, width), traced
        return self.block(F.concat([token, h], axis=1)).select(1, 0)


def test_a_class_token_transformer_over_a_derived_extent():
    model = ClassToken()
    checked = check_trace(model.forward, {"x": ("batch", "steps", 6)},
                          {"batch": (3, 1, 5), "steps": (6, 1, 10)}, parameters=_parameters(model))
    dims = {v.name: [d.dim_param or d.dim_value for d in v.type.tensor_type.shape.dim]
            for v in checked.model.graph.value_info}
    assert ["batch", "concat4_1", 8] in dims.values()
    shapes = [n.input[0] for n in checked.model.graph.node if n.op_type == "Shape"]
    # batch from the input, steps + 1 from the concatenation, and the count of the mean over
    # the steps from the mean's input (so that an empty axis gives NaN: mean_node)
    assert shapes == ["matmul_0", "x", "concat_0"]


def test_a_constant_expanded_to_a_plain_batch_is_refused_where_it_meets_the_symbol():
    token = Parameter(np.ones((1, 1, 8), np.float32))
    with Tracer() as tracer:
        h = tracer.input("h", np.ones((3, 6, 8), np.float32), {0: "batch", 1: "steps"})
        expanded = token.expand(3, 1, 8)  # constants only: runs eagerly, batch baked in
        with pytest.raises(TraceException, match=r"concat \(operation 1\): axis 0 is the symbolic "
                                                 r"size batch in one operand and fixed at 3"):
            F.concat([expanded, h], axis=1)


def test_a_constant_expanded_to_the_batch_read_from_the_input_follows_it():
    token = Parameter(np.ones((1, 1, 8), np.float32))
    checked = check_trace(lambda h: F.concat([token.expand(h.shape[0], 1, 8), h], axis=1),
                          {"h": ("batch", "steps", 8)}, {"batch": (3, 2, 5), "steps": (6, 4, 9)},
                          parameters={"token": token})
    assert checked.count("Expand") == 1


class Embedded(Module):
    """Ids in: an embedding table gathered by the input, averaged over steps."""

    input_dtype = "int64"

    def __init__(self):
        super().__init__()
        self.table = _weights(4)(20, 5)
        self.head = _weights(5)(5, 2)

    def forward(self, ids):
        return self.table[ids].mean(axis=1) @ self.head


def test_onnx_export_of_a_module_taking_ids():
    module = Embedded()
    data = OnnxExport(Shape(9)).to_bytes(module, BinaryCrossEntropy())
    model = onnx.load_from_string(data)
    assert model.graph.input[0].type.tensor_type.elem_type == onnx.TensorProto.INT64
    ids = np.random.default_rng(0).integers(0, 20, (4, 9))
    assert_close(ort_session(data).run(None, {"input": ids})[0],
                 module.predict(ids, BinaryCrossEntropy()), 1e-5, "ids")
