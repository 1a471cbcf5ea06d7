"""Cases for the sequence primitives: LSTM, GRU (both directions, with and without lengths),
attention (plain, key-masked with a fully masked series, causal) and the embedding lookup."""

from __future__ import annotations

import numpy as np

from tests.support.cases import case, normal


def _recurrent(gates: int, hidden: int = 3, inputs: int = 2, batch: int = 3, steps: int = 4):
    return [normal(batch, steps, inputs), 0.5 * normal(inputs, gates * hidden),
            0.5 * normal(hidden, gates * hidden), 0.3 * normal(gates * hidden),
            0.3 * normal(gates * hidden)]


_LENGTHS = np.array([4, 2, 0])  # a full series, a short one and an empty one

for _name, _gates in (("lstm", 4), ("gru", 3)):
    case(_name, "forward")(lambda g=_gates: (_recurrent(g), {"reverse": 0}))
    case(_name, "reverse")(lambda g=_gates: (_recurrent(g), {"reverse": 1}))
    case(_name, "lengths")(lambda g=_gates: (_recurrent(g) + [_LENGTHS], {"reverse": 0}))
    case(_name, "lengths-reverse")(lambda g=_gates: (_recurrent(g) + [_LENGTHS], {"reverse": 1}))

case("attention", "plain")(
    lambda: ([normal(2, 2, 4, 3), normal(2, 2, 4, 3), normal(2, 2, 4, 5)],
             {"scale": 0.5, "causal": 0}))
case("attention", "key-mask")(
    lambda: ([normal(2, 2, 4, 3), normal(2, 2, 4, 3), normal(2, 2, 4, 5),
              np.array([[True, True, False, True], [False, False, False, False]])],
             {"scale": 0.7, "causal": 0}))
case("attention", "causal-and-mask")(
    lambda: ([normal(2, 1, 4, 3), normal(2, 1, 4, 3), normal(2, 1, 4, 2),
              np.array([[False, True, True, True], [True, True, False, False]])],
             {"scale": 0.7, "causal": 1}))
case("embedding")(lambda: ([normal(5, 3), np.array([[0, 4, 4], [1, 0, 2]])],
                           {"padding_index": -1}))
# The padding row gets no gradient on purpose (PyTorch's padding_idx), so finite differences
# cannot agree on it: this case reads other rows; tests/deepsharp/test_seq_embedding.py pins it.
case("embedding", "padding")(lambda: ([normal(5, 3), np.array([[3, 4, 4], [1, 1, 2]])],
                                      {"padding_index": 0}))
case("self_attention", "two-heads")(lambda: (
    [normal(2, 4, 3), normal(3, 6), normal(3, 6), normal(3, 6), normal(6), normal(6), normal(6)],
    {"heads": 2, "scale": 0.5, "causal": 0}))
case("self_attention", "one-head-causal-mask")(lambda: (
    [normal(2, 4, 3), normal(3, 4), normal(3, 4), normal(3, 4), normal(4), normal(4), normal(4),
     np.array([[True, True, False, True], [True, False, True, True]])],
    {"heads": 1, "scale": 0.5, "causal": 1}))
