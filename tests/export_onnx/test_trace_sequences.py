"""The sequence primitives traced: each alone over symbolic batch and steps, an LSTM model and a
transformer block written as code, and stacks traced vs exported by OnnxExport."""

from __future__ import annotations

import numpy as np
import onnx
import pytest

from deepsharp import MeanSquaredError, Module, Parameter, RandomStream, Sequential, Shape
from deepsharp import functional as F
from deepsharp.errors import TraceErrorKind, TraceException
from deepsharp.tensors import Tensor
from deepsharp.tracing import Tracer
from deepsharp_export_onnx import OnnxExport, check_annotations
from tests.support.onnx_check import assert_valid, ort_session, run_reference
from tests.support.trace_check import assert_close, check_trace, named_inputs

_rng = np.random.default_rng(5)


def weight(*shape, scale=0.4, offset=0.0):
    return Tensor((offset + _rng.standard_normal(shape) * scale).astype(np.float32))


TABLE, QUERY = weight(10, 4), weight(1, 1, 4)
LSTM_W = [weight(3, 16), weight(4, 16), weight(16), weight(16)]   # 3 -> 4 units
GRU_W = [weight(3, 15), weight(5, 15), weight(15), weight(15)]    # 3 -> 5 units

# example sizes differ from every fixed size of the cases (3, 4, 5 channels, 16 and 15 gates)
BT = {"batch": (7, 1, 2), "steps": (11, 1, 13)}
X = {"x": ("batch", "steps", 3)}
XF = {"x": ("batch", "steps", 3), "flag": ("batch", "steps")}
X4 = {"x": ("batch", "steps", 4)}


def lengths(flag):
    return flag.astype(np.int64).sum(axis=1)


def heads(x):  # (batch, steps, 4) -> (batch, 2 heads, steps, 2)
    return x.reshape(x.shape[0], x.shape[1], 2, 2).permute(0, 2, 1, 3)


# (id, function, inputs, an ONNX op the graph must hold)
CASES = [
    ("embedding", lambda ids: F.embedding(ids, TABLE), {"ids": ("batch", "steps")}, "Gather"),
    ("embedding-padding", lambda ids: F.embedding(ids, TABLE, padding_index=0).relu(),
     {"ids": ("batch", "steps")}, "Gather"),
    ("self-attention", lambda x: F.attention(x, x * 0.5, x), X4, "Softmax"),
    ("causal-attention", lambda x: F.attention(x, x, x.tanh(), causal=True), X4, "Range"),
    ("masked-causal-heads", lambda x, flag: F.attention(heads(x), heads(x), heads(x), flag,
                                                        causal=True),
     {"x": ("batch", "steps", 4), "flag": ("batch", "steps")}, "Range"),
    ("one-query-over-the-steps", lambda x, flag: F.attention(x.mean(axis=1, keepdims=True) + QUERY,
                                                             x, x, flag),
     {"x": ("batch", "steps", 4), "flag": ("batch", "steps")}, "Softmax"),
    ("lstm", lambda x: dict(zip(("y", "h", "c"), F.lstm(x, *LSTM_W))), X, "LSTM"),
    ("lstm-lengths-reverse", lambda x, flag: F.lstm(x, *LSTM_W, lengths(flag), reverse=True)[0],
     XF, "LSTM"),
    ("gru", lambda x: dict(zip(("y", "h"), F.gru(x, *GRU_W))), X, "GRU"),
    ("gru-lengths", lambda x, flag: F.gru(x, *GRU_W, lengths=lengths(flag))[1], XF, "GRU"),
]


@pytest.mark.parametrize("fn, inputs, op_type", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_traced_sequence_op_matches_eager(fn, inputs, op_type):
    checked = check_trace(fn, inputs, BT, make=named_inputs)
    assert op_type in checked.ops(), checked.ops()


def _output_dims(checked):
    return {o.name: [d.dim_param or d.dim_value for d in o.type.tensor_type.shape.dim]
            for o in checked.model.graph.output}


def test_recurrent_results_keep_batch_and_steps_and_the_last_states_lose_the_steps():
    checked = check_trace(CASES[6][1], X, BT)
    assert _output_dims(checked) == {"y": ["batch", "steps", 4], "h": ["batch", 4],
                                     "c": ["batch", 4]}


def test_a_causal_mask_is_computed_in_the_graph_not_held_as_a_constant():
    checked = check_trace(lambda x: F.attention(x, x, x, causal=True), X4, BT)
    assert not [i for i in checked.model.graph.initializer if i.data_type == onnx.TensorProto.BOOL]
    assert checked.count("Shape") == 1 and checked.count("Range") == 2


def test_a_mask_built_at_the_example_length_is_refused():
    with Tracer() as tracer:
        x = tracer.input("x", np.ones((7, 11, 4), np.float32), {0: "batch", 1: "steps"})
        fixed = Tensor(np.ones((7, 11), bool))
        with pytest.raises(TraceException) as caught:
            F.attention(x, x, x, fixed)
    assert caught.value.kind is TraceErrorKind.SYMBOLIC_SHAPE
    assert "attention (operation 1): axis 0 is the symbolic size batch in one operand and fixed " \
           "at 7" in str(caught.value)


def test_recurrent_weights_computed_from_an_input_are_unsupported():
    with Tracer() as tracer:
        x = tracer.input("x", np.ones((7, 11, 3), np.float32), {0: "batch", 1: "steps"})
        scale = x.mean()
        with pytest.raises(TraceException) as caught:
            F.lstm(x, LSTM_W[0] * scale, *LSTM_W[1:])
    assert caught.value.kind is TraceErrorKind.UNSUPPORTED_OPERATION
    assert "lstm (operation 3): its weights depend on an input" in str(caught.value)


def _weights(seed):
    generator = np.random.default_rng(seed)

    def make_weight(*shape, scale=0.3, offset=0.0):
        return Parameter((offset + generator.standard_normal(shape) * scale).astype(np.float32))

    return make_weight


class Tagger(Module):
    """Ids (0 pads) -> embedding -> LSTM over the real steps -> a reversed GRU over the LSTM's
    outputs -> per step tags, and the two last states side by side -> a summary."""

    input_dtype = "int64"

    def __init__(self, vocabulary=12, width=6, units=5):
        super().__init__()
        make_weight = _weights(1)
        self.table = make_weight(vocabulary, width)
        self.lstm_ih, self.lstm_hh = make_weight(width, 4 * units), make_weight(units, 4 * units)
        self.lstm_bi, self.lstm_bh = make_weight(4 * units), make_weight(4 * units)
        self.gru_ih, self.gru_hh = make_weight(units, 3 * units), make_weight(units, 3 * units)
        self.gru_bi, self.gru_bh = make_weight(3 * units), make_weight(3 * units)
        self.tag_head, self.summary_head = make_weight(units, 3), make_weight(2 * units, 2)

    def forward(self, ids):
        real = lengths(ids.astype(bool))  # the count of ids other than 0
        x = F.embedding(ids, self.table, padding_index=0)
        y, h, _ = F.lstm(x, self.lstm_ih, self.lstm_hh, self.lstm_bi, self.lstm_bh, real)
        z, g = F.gru(y, self.gru_ih, self.gru_hh, self.gru_bi, self.gru_bh, real, reverse=True)
        return {"tags": z @ self.tag_head, "summary": F.concat([h, g], axis=1) @ self.summary_head}


class Block(Module):
    """A pre-norm transformer block: layer norm, causal two-head attention leaving padded keys
    out, a GELU MLP, residuals; then a layer norm."""

    def __init__(self, width=8, heads_count=2, hidden=12):
        super().__init__()
        make_weight = _weights(2)
        object.__setattr__(self, "heads_count", heads_count)
        self.norm1, self.shift1 = make_weight(width, scale=0.1, offset=1.0), make_weight(width)
        self.norm2, self.shift2 = make_weight(width, scale=0.1, offset=1.0), make_weight(width)
        self.norm3, self.shift3 = make_weight(width, scale=0.1, offset=1.0), make_weight(width)
        self.qkv, self.out = make_weight(width, 3 * width), make_weight(width, width)
        self.up, self.up_bias = make_weight(width, hidden), make_weight(hidden)
        self.down, self.down_bias = make_weight(hidden, width), make_weight(width)

    def split(self, t):
        batch, steps, width = t.shape
        return t.reshape(batch, steps, self.heads_count, width // self.heads_count) \
            .permute(0, 2, 1, 3)

    def forward(self, x, mask):
        batch, steps, width = x.shape
        h = F.layer_norm(x, self.norm1, self.shift1)
        qkv = h @ self.qkv
        q, k, v = (self.split(qkv[:, :, i * width:(i + 1) * width]) for i in range(3))
        mixed = F.attention(q, k, v, mask, causal=True).permute(0, 2, 1, 3) \
            .reshape(batch, steps, width)
        x = x + mixed @ self.out
        h = F.gelu(F.layer_norm(x, self.norm2, self.shift2) @ self.up + self.up_bias)
        return F.layer_norm(x + h @ self.down + self.down_bias, self.norm3, self.shift3)


def test_an_lstm_tagger_over_symbolic_steps():
    model = Tagger()
    checked = check_trace(model.forward, {"ids": ("batch", "steps")},
                          {"batch": (7, 1, 3), "steps": (11, 1, 9)}, make=named_inputs,
                          parameters=dict(model._slots()))
    assert checked.count("LSTM") == 1 and checked.count("GRU") == 1
    assert _output_dims(checked) == {"tags": ["batch", "steps", 3], "summary": ["batch", 2]}
    # the weights are held once, in ONNX's gate order (the traced parameters nothing reads dropped)
    read = {i for node in checked.model.graph.node for i in node.input}
    assert {i.name for i in checked.model.graph.initializer} <= read
    assert max(checked.errors.values()) < 1e-5


def test_a_transformer_block_with_symbolic_batch_and_steps():
    block = Block()
    checked = check_trace(block.forward, {"x": ("batch", "steps", 8), "mask": ("batch", "steps")},
                          {"batch": (3, 1, 5), "steps": (7, 1, 13)},
                          make=named_inputs, parameters=dict(block._slots()))
    assert checked.count("LayerNormalization") == 3 and checked.count("Softmax") == 1
    assert checked.opset == 20  # Gelu
    assert max(checked.errors.values()) < 1e-5


# -- stacks: the traced graph gives the numbers of the exported one --------------------------------
def _ids(generator, batch, steps):
    """Ids of series of different lengths, padded by 0 at the end."""
    ids = generator.integers(1, 20, (batch, steps))
    for row, length in enumerate(generator.integers(1, steps + 1, batch)):
        ids[row, length:] = 0
    return ids


def _floats(generator, *shape):
    return generator.standard_normal(shape).astype(np.float32)


STACKS = [
    ("image-conv-stack",
     Sequential().conv2d(6, 3, padding="same").relu().max_pool2d(2).batch_norm()
     .conv2d(8, 3, stride=2).gelu().group_norm(2).global_avg_pool().dense(3),
     Shape(10, 12, 3), {0: "batch"}, lambda g, n, t: _floats(g, n, 10, 12, 3)),
    ("series-conv-stack",
     Sequential().conv1d(6, 3, padding="same").relu().avg_pool1d(2).conv1d(5, 3, dilation=2)
     .layer_norm().pad(((1, 2),)).conv_transpose1d(4, 2, stride=2).adaptive_avg_pool(3)
     .flatten().dense(2),
     Shape(16, 4), {0: "batch", 1: "steps"}, lambda g, n, t: _floats(g, n, t, 4)),
    ("masked-sequence-stack",
     Sequential().embedding(20, 8, padding_index=0).lstm(8, return_sequences=True)
     .multi_head_attention(2, 8).layer_norm().gru(6, bidirectional=True).dense(3),
     Shape(12), {0: "batch", 1: "steps"}, _ids),
]


@pytest.mark.parametrize("spec, shape, axes, batch", [s[1:] for s in STACKS],
                         ids=[s[0] for s in STACKS])
def test_a_traced_stack_gives_the_numbers_of_the_exported_stack(spec, shape, axes, batch):
    network = spec.lower(shape, RandomStream(4))
    generator = np.random.default_rng(0)
    traced = network.trace(batch(generator, 7, 23), axis_names=axes).to_bytes()
    exported = OnnxExport(shape).to_bytes(network, MeanSquaredError())
    model = onnx.load_from_string(traced)
    assert_valid(model)
    ours, theirs = ort_session(traced), ort_session(exported)
    for n, steps in [(1, 13), (2, 23), (5, 31)]:
        x = batch(generator, n, steps)
        expected = network.evaluate(x)
        got = ours.run(None, {"input": x})[0]
        assert_close(got, theirs.run(None, {"input": x})[0], 1e-5, f"traced vs exported, {n}")
        assert_close(got, expected, 1e-5, f"traced vs eager, batch {n}")
        assert_close(run_reference(model, x), expected, 1e-4, f"reference evaluator, batch {n}")
        bindings = check_annotations(model, {"input": x})
        assert bindings["batch"] == n and bindings.get("steps", steps) == steps


class Classifier(Module):
    """Ids -> embedding -> LSTM over the real steps -> its last state -> two classes."""

    input_dtype = "int64"

    def __init__(self):
        super().__init__()
        self.tagger = Tagger()

    def forward(self, ids):
        return self.tagger(ids)["summary"]


def test_onnx_export_of_a_module_over_ids_has_symbolic_steps():
    module = Classifier()
    data = OnnxExport(Shape(9)).to_bytes(module, MeanSquaredError())
    model = onnx.load_from_string(data)
    assert_valid(model)
    dims = [d.dim_param or d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim]
    assert dims == ["batch", "steps"]
    generator = np.random.default_rng(3)
    for n, steps in [(1, 4), (6, 17)]:
        ids = generator.integers(0, 12, (n, steps))
        assert_close(ort_session(data).run(None, {"input": ids})[0], module.evaluate(ids), 1e-5,
                     f"{n} series of {steps} steps")
        assert check_annotations(model, {"input": ids}) == {"batch": n, "steps": steps}
