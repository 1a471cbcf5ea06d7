"""Gate orders and orientations of recurrent and attention weights: round trips, and each gate
landing where the other format keeps it."""

from __future__ import annotations

import numpy as np
import pytest

from layout import (
    gru_biases_to_onnx, gru_kernel_to_onnx, kernels_to_torch_in_projection, lstm_biases_to_onnx,
    lstm_kernel_to_onnx, onnx_to_gru_biases, onnx_to_gru_kernel, onnx_to_lstm_biases,
    onnx_to_lstm_kernel, recurrent_kernel_to_torch, torch_in_projection_to_kernels,
    torch_to_recurrent_kernel,
)

H, IN = 3, 2


def _labelled(gates: str) -> np.ndarray:
    """A kernel (in, G*H) whose every column holds 10 * (gate number) + row: gate k of ours is
    the k-th letter of `gates`."""
    columns = [10 * (k + 1) + np.arange(IN)[:, None] + np.zeros((1, H)) for k in range(len(gates))]
    return np.concatenate(columns, axis=1).astype(np.float32)


def _gate_of(row_block: np.ndarray) -> int:
    return int(row_block.flat[0] // 10) - 1


def test_lstm_kernel_goes_to_onnx_in_i_o_f_c_order():
    onnx_w = lstm_kernel_to_onnx(_labelled("ifgo"))
    assert onnx_w.shape == (4 * H, IN)
    ours = "ifgo"
    assert [ours[_gate_of(onnx_w[k * H:(k + 1) * H])] for k in range(4)] == list("iofg")
    np.testing.assert_array_equal(onnx_w[:H, 1], [11, 11, 11])  # gate i, input row 1


def test_gru_kernel_goes_to_onnx_in_z_r_h_order():
    onnx_w = gru_kernel_to_onnx(_labelled("rzn"))
    assert onnx_w.shape == (3 * H, IN)
    assert ["rzn"[_gate_of(onnx_w[k * H:(k + 1) * H])] for k in range(3)] == list("zrn")


@pytest.mark.parametrize("there, back, gates", [
    (lstm_kernel_to_onnx, onnx_to_lstm_kernel, 4),
    (gru_kernel_to_onnx, onnx_to_gru_kernel, 3),
    (recurrent_kernel_to_torch, torch_to_recurrent_kernel, 4),
])
def test_kernel_round_trip(there, back, gates):
    kernel = np.random.default_rng(0).standard_normal((IN, gates * H)).astype(np.float32)
    np.testing.assert_array_equal(back(there(kernel)), kernel)


@pytest.mark.parametrize("there, back, order", [
    (lstm_biases_to_onnx, onnx_to_lstm_biases, [0, 3, 1, 2]),
    (gru_biases_to_onnx, onnx_to_gru_biases, [1, 0, 2]),
])
def test_biases_round_trip_and_order(there, back, order):
    gates = len(order)
    b_ih = np.repeat(np.arange(gates, dtype=np.float32), H)
    b_hh = b_ih + 100
    joined = there(b_ih, b_hh)
    assert joined.shape == (2 * gates * H,)
    np.testing.assert_array_equal(joined[:gates * H:H], order)           # Wb in ONNX's order
    np.testing.assert_array_equal(joined[gates * H::H], np.add(order, 100))  # then Rb
    again = back(joined)
    np.testing.assert_array_equal(again[0], b_ih)
    np.testing.assert_array_equal(again[1], b_hh)


def test_torch_recurrent_kernel_is_the_transpose():
    kernel = _labelled("ifgo")
    np.testing.assert_array_equal(recurrent_kernel_to_torch(kernel), kernel.T)


def test_torch_in_projection_round_trip():
    rng = np.random.default_rng(1)
    q, k, v = (rng.standard_normal((5, 4)).astype(np.float32) for _ in range(3))
    packed = kernels_to_torch_in_projection(q, k, v)
    assert packed.shape == (12, 5)
    np.testing.assert_array_equal(packed[4:8], k.T)  # rows: queries, keys, values
    for ours, back in zip((q, k, v), torch_in_projection_to_kernels(packed)):
        np.testing.assert_array_equal(ours, back)


def test_in_projection_round_trip():
    """The in-projection as a MatMul's kernel (in, 3E): columns q, k, v; the bias likewise."""
    from layout import in_projection_biases, in_projection_to_kernels, kernels_to_in_projection

    rng = np.random.default_rng(2)
    q, k, v = (rng.standard_normal((5, 4)).astype(np.float32) for _ in range(3))
    packed = kernels_to_in_projection(q, k, v)
    assert packed.shape == (5, 12)
    np.testing.assert_array_equal(packed, kernels_to_torch_in_projection(q, k, v).T)
    for ours, back in zip((q, k, v), in_projection_to_kernels(packed)):
        np.testing.assert_array_equal(ours, back)
    bias = np.arange(12, dtype=np.float32)
    np.testing.assert_array_equal(in_projection_biases(bias)[1], bias[4:8])
