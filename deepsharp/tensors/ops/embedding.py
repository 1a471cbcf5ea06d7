"""Embedding lookup: rows of a table taken by integer ids (ONNX Gather on axis 0)."""

from __future__ import annotations

import numpy as np
from scipy.sparse import csr_matrix

from deepsharp.errors import OpError
from deepsharp.tensors.primitives import primitive


@primitive("embedding", fresh=True)
class Embedding:
    """weight[ids]: ids (int64, any shape) give ids.shape + (width,). The gradient sums into the
    rows taken; the row `padding_index` (when >= 0) gets none, as PyTorch's padding_idx."""

    def forward(weight, ids, *, padding_index):
        if ids.dtype.kind not in "iu":
            raise OpError(f"embedding: ids must be integers, received {ids.dtype}")
        if ids.size and (ids.min() < 0 or ids.max() >= weight.shape[0]):
            bad = ids[(ids < 0) | (ids >= weight.shape[0])].flat[0]
            raise OpError(f"embedding: id {int(bad)} is outside the vocabulary "
                          f"0..{weight.shape[0] - 1}")
        return np.take(weight, ids, axis=0), None

    def backward(grad, saved, weight, ids, *, padding_index):
        # one sparse product (one-hot rows by ids)^T @ grad sums repeats: many times faster than
        # np.add.at on a batch of series
        flat = ids.reshape(-1)
        one_hot = csr_matrix((np.ones(flat.size, grad.dtype), (flat, np.arange(flat.size))),
                             shape=(weight.shape[0], flat.size))
        full = np.asarray(one_hot @ grad.reshape(flat.size, -1), dtype=weight.dtype)
        if padding_index >= 0:
            full[padding_index] = 0
        return full, None
