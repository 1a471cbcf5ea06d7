"""How the weights of an LSTM, a GRU and multi-head attention are laid out elsewhere.

Ours: a recurrent layer keeps its kernels as a dense layer does, inputs by outputs, so the gate
pre-activations are `x @ weight_ih + bias_ih + h @ weight_hh + bias_hh`; the gates sit side by
side along the last axis in PyTorch's order: LSTM (i, f, g, o), GRU (r, z, n).

ONNX's LSTM takes W (4H, in) and R (4H, H) with the gates in the order (i, o, f, c) (c is our g)
and one bias B = concat(Wb, Rb) of 8H; its GRU takes (z, r, h) (h is our n) and B of 6H.
PyTorch keeps `weight_ih_l0` (4H, in), the gates in our order.
"""

from __future__ import annotations

import numpy as np

LSTM_GATES = ("i", "f", "g", "o")        # ours and PyTorch's
LSTM_GATES_ONNX = ("i", "o", "f", "g")   # ONNX's i, o, f, c: its c is our g
GRU_GATES = ("r", "z", "n")              # ours and PyTorch's
GRU_GATES_ONNX = ("z", "r", "n")         # ONNX's z, r, h: its h is our n


def reorder_gates(array: np.ndarray, axis: int, source: tuple[str, ...],
                  target: tuple[str, ...]) -> np.ndarray:
    """The gate blocks of `array` along `axis` moved from `source` order to `target` order."""
    blocks = dict(zip(source, np.split(array, len(source), axis=axis)))
    return np.ascontiguousarray(np.concatenate([blocks[g] for g in target], axis=axis))


# -- LSTM ----------------------------------------------------------------------------------------
def lstm_kernel_to_onnx(kernel: np.ndarray) -> np.ndarray:
    """ONNX's W or R of one direction, (4H, in) in (i, o, f, c), from our (in, 4H) in (i, f, g, o)."""
    return reorder_gates(kernel.T, 0, LSTM_GATES, LSTM_GATES_ONNX)


def onnx_to_lstm_kernel(w: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(reorder_gates(w, 0, LSTM_GATES_ONNX, LSTM_GATES).T)


def lstm_biases_to_onnx(bias_ih: np.ndarray, bias_hh: np.ndarray) -> np.ndarray:
    """ONNX's B of one direction: concat(Wb, Rb), each (4H,) in (i, o, f, c)."""
    return np.concatenate([reorder_gates(bias_ih, 0, LSTM_GATES, LSTM_GATES_ONNX),
                           reorder_gates(bias_hh, 0, LSTM_GATES, LSTM_GATES_ONNX)])


def onnx_to_lstm_biases(b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    wb, rb = np.split(b, 2)
    return (reorder_gates(wb, 0, LSTM_GATES_ONNX, LSTM_GATES),
            reorder_gates(rb, 0, LSTM_GATES_ONNX, LSTM_GATES))


# -- GRU -----------------------------------------------------------------------------------------
def gru_kernel_to_onnx(kernel: np.ndarray) -> np.ndarray:
    """ONNX's W or R of one direction, (3H, in) in (z, r, h), from our (in, 3H) in (r, z, n)."""
    return reorder_gates(kernel.T, 0, GRU_GATES, GRU_GATES_ONNX)


def onnx_to_gru_kernel(w: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(reorder_gates(w, 0, GRU_GATES_ONNX, GRU_GATES).T)


def gru_biases_to_onnx(bias_ih: np.ndarray, bias_hh: np.ndarray) -> np.ndarray:
    """ONNX's B of one direction: concat(Wb, Rb), each (3H,) in (z, r, h)."""
    return np.concatenate([reorder_gates(bias_ih, 0, GRU_GATES, GRU_GATES_ONNX),
                           reorder_gates(bias_hh, 0, GRU_GATES, GRU_GATES_ONNX)])


def onnx_to_gru_biases(b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    wb, rb = np.split(b, 2)
    return (reorder_gates(wb, 0, GRU_GATES_ONNX, GRU_GATES),
            reorder_gates(rb, 0, GRU_GATES_ONNX, GRU_GATES))


# -- PyTorch (fixtures) -------------------------------------------------------------------------
def recurrent_kernel_to_torch(kernel: np.ndarray) -> np.ndarray:
    """PyTorch's `weight_ih_l0` / `weight_hh_l0`: (gates * H, in), the same gate order as ours."""
    return np.ascontiguousarray(kernel.T)


def torch_to_recurrent_kernel(weight: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(weight.T)


def torch_in_projection_to_kernels(in_proj_weight: np.ndarray) -> tuple[np.ndarray, ...]:
    """PyTorch MultiheadAttention's `in_proj_weight` (3E, in), rows q then k then v, as our three
    (in, E) kernels (query, key, value)."""
    return tuple(np.ascontiguousarray(w.T) for w in np.split(in_proj_weight, 3, axis=0))


def kernels_to_torch_in_projection(query: np.ndarray, key: np.ndarray,
                                   value: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(np.concatenate([query.T, key.T, value.T], axis=0))


def in_projection_to_kernels(kernel: np.ndarray) -> tuple[np.ndarray, ...]:
    """One (in, 3E) kernel projecting queries, keys and values at once (the columns q, then k,
    then v: PyTorch's in_proj_weight turned round, as its exporters write it for a MatMul) as our
    three (in, E) kernels."""
    return tuple(np.ascontiguousarray(w) for w in np.split(kernel, 3, axis=1))


def kernels_to_in_projection(query: np.ndarray, key: np.ndarray, value: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(np.concatenate([query, key, value], axis=1))


def in_projection_biases(bias: np.ndarray) -> tuple[np.ndarray, ...]:
    """PyTorch's in_proj_bias (3E,) as the query, key and value biases."""
    return tuple(np.ascontiguousarray(b) for b in np.split(bias, 3))
