"""lstm and gru: steps worked by hand in our gate order (i, f, g, o / r, z, n) and in ONNX's
(i, o, f, c / z, r, h), a reversed direction, a masked series, initialisation, refusals."""

from __future__ import annotations

import math

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from deepsharp import RandomStream, Sequential, Shape
from deepsharp.errors import OpError, ShapeError, SpecError
from deepsharp.tensors import Tensor, apply
from tests.support.onnx_check import run_ort


def sig(v: float) -> float:
    return 1.0 / (1.0 + math.exp(-v))


# One unit, one input: every gate is a number. Kernels (1, 4) in our order i, f, g, o.
A = {"i": 0.5, "f": -0.3, "g": 0.8, "o": 0.2}       # input weights
U = {"i": -0.4, "f": 0.6, "g": 0.3, "o": -0.7}      # state weights
BI = {"i": 0.1, "f": 0.2, "g": -0.1, "o": 0.05}     # bias_ih
BH = {"i": 0.0, "f": 0.1, "g": 0.2, "o": -0.15}     # bias_hh


def lstm_step(x: float, h: float, c: float) -> tuple[float, float]:
    pre = {gate: A[gate] * x + U[gate] * h + BI[gate] + BH[gate] for gate in "ifgo"}
    i, f, g, o = sig(pre["i"]), sig(pre["f"]), math.tanh(pre["g"]), sig(pre["o"])
    c = f * c + i * g
    return o * math.tanh(c), c


def _lstm_network(**options):
    network = Sequential().lstm(1, return_sequences=True, **options).lower(Shape(3, 1))
    for suffix in ("", "_reverse") if options.get("bidirectional") else ("",):
        network.load_state_dict({
            f"0.weight_ih_l0{suffix}": np.array([[A[g] for g in "ifgo"]], np.float32),
            f"0.weight_hh_l0{suffix}": np.array([[U[g] for g in "ifgo"]], np.float32),
            f"0.bias_ih_l0{suffix}": np.array([BI[g] for g in "ifgo"], np.float32),
            f"0.bias_hh_l0{suffix}": np.array([BH[g] for g in "ifgo"], np.float32),
        }, strict=False)
    return network


XS = [0.7, -1.2, 0.4]


def test_lstm_steps_worked_by_hand():
    h1, c1 = lstm_step(XS[0], 0.0, 0.0)
    h2, c2 = lstm_step(XS[1], h1, c1)
    h3, _ = lstm_step(XS[2], h2, c2)
    out = _lstm_network()(np.array([XS], np.float32)[..., None])
    np.testing.assert_allclose(out[0, :, 0], [h1, h2, h3], rtol=1e-6, atol=1e-7)


def test_lstm_reversed_reads_the_series_from_its_end():
    h3, c3 = lstm_step(XS[2], 0.0, 0.0)
    h2, c2 = lstm_step(XS[1], h3, c3)
    h1, _ = lstm_step(XS[0], h2, c2)
    out = _lstm_network(bidirectional=True)(np.array([XS], np.float32)[..., None])
    np.testing.assert_allclose(out[0, :, 1], [h1, h2, h3], rtol=1e-6, atol=1e-7)   # the reverse direction
    last = Sequential().lstm(1, bidirectional=True).lower(Shape(3, 1))
    last.load_state_dict(_lstm_network(bidirectional=True).state_dict())
    forward_last, _ = lstm_step(XS[2], *lstm_step(XS[1], *lstm_step(XS[0], 0.0, 0.0)))
    np.testing.assert_allclose(last(np.array([XS], np.float32)[..., None])[0],
                               [forward_last, h1], rtol=1e-6, atol=1e-7)  # PyTorch's h_n: h_T and h_1


def test_lstm_masked_series_stops_at_its_length():
    """Two real steps then padding: outputs beyond are zero, the last state is step 2's; the
    reverse direction starts at the last real step."""
    h1, c1 = lstm_step(XS[0], 0.0, 0.0)
    h2, _ = lstm_step(XS[1], h1, c1)
    r2, rc2 = lstm_step(XS[1], 0.0, 0.0)
    r1, _ = lstm_step(XS[0], r2, rc2)
    series = np.array([[XS[0], XS[1], 0.0]], np.float32)[..., None]
    network = Sequential().masking(0.0).lstm(1, return_sequences=True, bidirectional=True)
    network = network.lower(Shape(3, 1))
    network.load_state_dict({k.replace("0.", "1.", 1): v for k, v in
                             _lstm_network(bidirectional=True).state_dict().items()})
    out = network(series)[0]
    np.testing.assert_allclose(out[:, 0], [h1, h2, 0.0], rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(out[:, 1], [r1, r2, 0.0], rtol=1e-6, atol=1e-7)
    last = Sequential().masking(0.0).lstm(1).lower(Shape(3, 1))
    last.load_state_dict({"1." + k[2:]: v for k, v in _lstm_network().state_dict().items()})
    np.testing.assert_allclose(last(series)[0], [h2], rtol=1e-6, atol=1e-7)


def _onnx_single(op_type: str, w, r, b, x, extra_attrs):
    """One hand-written ONNX node (weights given in ONNX's own gate order) on x (steps, 1, 1)."""
    node = helper.make_node(op_type, ["X", "W", "R", "B"], ["Y"], hidden_size=1, **extra_attrs)
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("X", TensorProto.FLOAT, [3, 1, 1])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [3, 1, 1, 1])],
        initializer=[helper.make_tensor(n, TensorProto.FLOAT, a.shape, a.reshape(-1).tolist())
                     for n, a in (("W", w), ("R", r), ("B", b))])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 7)], ir_version=3)
    return run_ort(model.SerializeToString(), x, "X").reshape(-1)


def test_lstm_step_by_hand_in_onnx_gate_order():
    """ONNX holds the gates i, o, f, c: written out by hand, ONNX Runtime agrees with the steps
    worked above."""
    order = "iofg"
    w = np.array([[A[g]] for g in order], np.float32)[None]
    r = np.array([[U[g]] for g in order], np.float32)[None]
    b = np.array([BI[g] for g in order] + [BH[g] for g in order], np.float32)[None]
    h1, c1 = lstm_step(XS[0], 0.0, 0.0)
    h2, c2 = lstm_step(XS[1], h1, c1)
    h3, _ = lstm_step(XS[2], h2, c2)
    y = _onnx_single("LSTM", w, r, b, np.array(XS, np.float32).reshape(3, 1, 1), {})
    np.testing.assert_allclose(y, [h1, h2, h3], rtol=1e-6, atol=1e-7)


# GRU: r, z, n.
GA = {"r": 0.4, "z": -0.6, "n": 0.9}
GU = {"r": 0.3, "z": 0.5, "n": -0.8}
GBI = {"r": -0.1, "z": 0.2, "n": 0.05}
GBH = {"r": 0.15, "z": -0.05, "n": 0.3}


def gru_step(x: float, h: float) -> float:
    r = sig(GA["r"] * x + GBI["r"] + GU["r"] * h + GBH["r"])
    z = sig(GA["z"] * x + GBI["z"] + GU["z"] * h + GBH["z"])
    n = math.tanh(GA["n"] * x + GBI["n"] + r * (GU["n"] * h + GBH["n"]))  # reset after the product
    return (1 - z) * n + z * h


def _gru_network(**options):
    network = Sequential().gru(1, return_sequences=True, **options).lower(Shape(3, 1))
    for suffix in ("", "_reverse") if options.get("bidirectional") else ("",):
        network.load_state_dict({
            f"0.weight_ih_l0{suffix}": np.array([[GA[g] for g in "rzn"]], np.float32),
            f"0.weight_hh_l0{suffix}": np.array([[GU[g] for g in "rzn"]], np.float32),
            f"0.bias_ih_l0{suffix}": np.array([GBI[g] for g in "rzn"], np.float32),
            f"0.bias_hh_l0{suffix}": np.array([GBH[g] for g in "rzn"], np.float32),
        }, strict=False)
    return network


def test_gru_steps_worked_by_hand_and_reversed():
    h1 = gru_step(XS[0], 0.0)
    h2 = gru_step(XS[1], h1)
    h3 = gru_step(XS[2], h2)
    r3 = gru_step(XS[2], 0.0)
    r2 = gru_step(XS[1], r3)
    r1 = gru_step(XS[0], r2)
    out = _gru_network(bidirectional=True)(np.array([XS], np.float32)[..., None])[0]
    np.testing.assert_allclose(out[:, 0], [h1, h2, h3], rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(out[:, 1], [r1, r2, r3], rtol=1e-6, atol=1e-7)


def test_gru_masked_series():
    h1 = gru_step(XS[0], 0.0)
    network = Sequential().masking(0.0).gru(1, return_sequences=True).lower(Shape(3, 1))
    network.load_state_dict({"1." + k[2:]: v for k, v in _gru_network().state_dict().items()})
    out = network(np.array([[XS[0], 0.0, 0.0]], np.float32)[..., None])[0, :, 0]
    np.testing.assert_allclose(out, [h1, 0.0, 0.0], rtol=1e-6, atol=1e-7)


def test_gru_step_by_hand_in_onnx_gate_order():
    order = "zrn"
    w = np.array([[GA[g]] for g in order], np.float32)[None]
    r = np.array([[GU[g]] for g in order], np.float32)[None]
    b = np.array([GBI[g] for g in order] + [GBH[g] for g in order], np.float32)[None]
    h1 = gru_step(XS[0], 0.0)
    h2 = gru_step(XS[1], h1)
    h3 = gru_step(XS[2], h2)
    y = _onnx_single("GRU", w, r, b, np.array(XS, np.float32).reshape(3, 1, 1),
                     {"linear_before_reset": 1})
    np.testing.assert_allclose(y, [h1, h2, h3], rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("verb, gates", [("lstm", 4), ("gru", 3)])
def test_slots_and_initialisation_follow_pytorch(verb, gates):
    network = getattr(Sequential(), verb)(64, bidirectional=True, layers=2).lower(
        Shape(5, 10), RandomStream(2))
    state = network.state_dict()
    expected = {}
    for k, width in ((0, 10), (1, 128)):
        for suffix in ("", "_reverse"):
            expected[f"0.weight_ih_l{k}{suffix}"] = (width, gates * 64)
            expected[f"0.weight_hh_l{k}{suffix}"] = (64, gates * 64)
            expected[f"0.bias_ih_l{k}{suffix}"] = (gates * 64,)
            expected[f"0.bias_hh_l{k}{suffix}"] = (gates * 64,)
    assert {k: v.shape for k, v in state.items()} == expected
    bound = 1 / math.sqrt(64)
    everything = np.concatenate([v.reshape(-1) for v in state.values()])
    assert np.abs(everything).max() <= bound and np.abs(everything).max() > 0.99 * bound
    assert abs(everything.std() - bound / math.sqrt(3)) < 0.005


def test_output_shapes():
    assert Sequential().lstm(8).lower(Shape(5, 3)).output_shape == Shape(8)
    assert Sequential().gru(8, return_sequences=True, bidirectional=True).lower(
        Shape(5, 3)).output_shape == Shape(5, 16)


@pytest.mark.parametrize("call, message", [
    (lambda: Sequential().lstm(0), "lstm: units must be greater than 0, received 0"),
    (lambda: Sequential().gru(4, layers=0), "gru: layers must be greater than 0, received 0"),
    (lambda: Sequential().lstm(4, bidirectional="both"), "lstm: bidirectional must be True or False, received 'both'"),
])
def test_verbs_refuse_bad_arguments(call, message):
    with pytest.raises(SpecError, match=message):
        call()


def test_lowering_refuses_a_row():
    with pytest.raises(ShapeError, match=r"lstm\(4\) at place 0 cannot take an input of shape 5: "
                                         r"needs a series \(steps x channels\)"):
        Sequential().lstm(4).lower(Shape(5))


@pytest.mark.parametrize("kind", ["lstm", "gru"])
def test_primitive_refuses_bad_operands(kind):
    gates = 4 if kind == "lstm" else 3
    x = Tensor(np.zeros((2, 3, 2), np.float32))
    weights = [np.zeros((2, gates * 3)), np.zeros((3, gates * 3)), np.zeros(gates * 3),
               np.zeros(gates * 3)]
    with pytest.raises(OpError, match=rf"{kind}: x must be \(batch, steps, in\), received shape"):
        apply(kind, Tensor(np.zeros((3, 2), np.float32)), *weights, reverse=0)
    with pytest.raises(OpError, match=rf"{kind}: weight_hh must have shape \(3, {gates * 3}\)"):
        apply(kind, x, weights[0], np.zeros((3, 5)), *weights[2:], reverse=0)
    with pytest.raises(OpError, match=rf"{kind}: lengths must lie in 0..3, received 0..4"):
        apply(kind, x, *weights, np.array([4, 0]), reverse=0)
    with pytest.raises(OpError, match=rf"{kind}: lengths must be integers of shape \(2,\)"):
        apply(kind, x, *weights, np.array([1.0, 2.0]), reverse=0)


def test_tracer_node_writer_refuses_computed_weights():
    from deepsharp_export_onnx.graph import Tape
    from deepsharp_export_onnx.write.nodes import PRIMITIVE_NODES, Emit

    with pytest.raises(ValueError, match="lstm: the weights must be constants .* 'w_ih' is "
                                         "computed in the graph"):
        PRIMITIVE_NODES["lstm"](Emit(Tape(), "0.lstm"), ["x", "w_ih", "w_hh", "b_ih", "b_hh"],
                                {"reverse": 0}, [3, 2, 2, 1, 1])
    assert onnx.defs.has("LSTM")
