"""ONNX reference-evaluator operators that honour `sequence_lens`.

onnx's reference LSTM and GRU ignore `sequence_lens` and run every step. These run onnx's own
implementation on each series cut to its length (read in the node's direction from its last real
step for `reverse`) and give what the ONNX specification says of the rest: zeros in Y beyond the
length, Y_h (and Y_c) the state after the last real step, the initial state for a length of 0.
"""

from __future__ import annotations

import numpy as np
from onnx.reference.ops.op_gru import GRU as _Gru
from onnx.reference.ops.op_lstm import LSTM as _Lstm


def _by_length(run, X, W, R, B, sequence_lens, rest, count):
    if sequence_lens is None:
        return run(X, W, R, B, None, *rest)
    steps, batch = X.shape[:2]
    directions, hidden = W.shape[0], R.shape[-1]
    parts = []
    for b in range(batch):
        length = int(sequence_lens[b])
        mine = [a[:, b:b + 1] if isinstance(a, np.ndarray) and a.ndim == 3 else a for a in rest]
        if length == 0:
            y = np.zeros((0, directions, 1, hidden), X.dtype)
            states = [np.zeros((directions, 1, hidden), X.dtype) if a is None else a
                      for a in mine[:2]]
            outputs = (y, *states)[:count]
        else:
            outputs = run(X[:length, b:b + 1], W, R, B, None, *mine)
        y = np.concatenate([outputs[0],
                            np.zeros((steps - length, directions, 1, hidden), X.dtype)])
        parts.append((y, *outputs[1:]))
    return tuple(np.concatenate([p[i] for p in parts], axis=2 if i == 0 else 1)
                 for i in range(len(parts[0])))


class LSTM(_Lstm):
    op_domain = ""

    def _run(self, X, W, R, B=None, sequence_lens=None, initial_h=None, initial_c=None, P=None,
             **attributes):
        if self.layout:
            raise ValueError("reference LSTM with sequence_lens: layout 0 only")
        run = lambda *a: _Lstm._run(self, *a, **attributes)  # noqa: E731
        return _by_length(run, X, W, R, B, sequence_lens, [initial_h, initial_c, P],
                          self.n_outputs)


class GRU(_Gru):
    op_domain = ""

    def _run(self, X, W, R, B=None, sequence_lens=None, initial_h=None, **attributes):
        if self.layout:
            raise ValueError("reference GRU with sequence_lens: layout 0 only")
        run = lambda *a: _Gru._run(self, *a, **attributes)  # noqa: E731
        return _by_length(run, X, W, R, B, sequence_lens, [initial_h], self.n_outputs)


REFERENCE_OPS = [LSTM, GRU]
