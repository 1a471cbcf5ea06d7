"""Matrix products: `matmul` (numpy's, batch axes broadcast), `matmul_add` (x @ w + b fused) and
`matmul_add_relu` (max(x @ w + b, 0): a dense layer and the relu after it).

A product of a batch of rows by one matrix, (..., n, k) @ (k, m), is folded into one 2-D product
(one BLAS call over every row) each way, rather than numpy's loop of products per leading index.
"""

from __future__ import annotations

import numpy as np

from deepsharp.errors import OpError
from deepsharp.tensors.ops.two_threads import both, idle_point
from deepsharp.tensors.primitives import grad_out, needs_input_grad, primitive, unbroadcast

SPLIT_PRODUCT = 1 << 22  # multiplies: a smaller input gradient is not worth a hand-off


def _rows(a: np.ndarray) -> np.ndarray:
    return a if a.ndim == 2 else a.reshape(-1, a.shape[-1])  # (a matrix is its own rows)


@primitive("matmul")
class MatMul:
    """numpy's matmul on operands of rank >= 2, batch axes broadcast (ONNX MatMul)."""

    def forward(a, b):
        if a.ndim < 2 or b.ndim < 2:
            raise OpError(f"matmul: both operands need rank >= 2, received shapes {a.shape} "
                          f"and {b.shape}")
        if b.ndim == 2 and a.ndim > 2 and a.shape[-1] == b.shape[0]:
            return (_rows(a) @ b).reshape(*a.shape[:-1], b.shape[1]), None
        return np.matmul(a, b), None

    def backward(grad, saved, a, b):
        if b.ndim == 2 and a.ndim > 2:
            # (..., n, k) @ (k, m): fold the batch axes into one product (a BLAS call, not a loop)
            ga = (_rows(grad) @ b.T).reshape(a.shape) if needs_input_grad(0) else None
            return ga, _rows(a).T @ _rows(grad)
        ga = np.matmul(grad, np.swapaxes(b, -1, -2))
        gb = np.matmul(np.swapaxes(a, -1, -2), grad)
        return unbroadcast(ga, a.shape), unbroadcast(gb, b.shape)


@primitive("matmul_add", fresh=True)
class MatMulAdd:
    """x @ w + b over the last axis of x (..., k), w (k, m), b (m,): a dense layer's matmul and
    add as one primitive, the bias added in place into the product. A network runs it only when
    no tracer records (the graph holds MatMul and Add); the tests hold it to the two primitives."""

    def forward(x, w, b):
        if x.ndim < 2 or w.ndim != 2 or x.shape[-1] != w.shape[0] or b.shape != w.shape[1:]:
            raise OpError(f"matmul_add: needs x (..., k), w (k, m) and b (m,), received {x.shape}, "
                          f"{w.shape} and {b.shape}")
        y = _rows(x) @ w
        y += b
        # (rows of a matrix: y itself, not a reshaped view of it, which apply would then check
        # against every input's memory)
        return (y if x.ndim == 2 else y.reshape(*x.shape[:-1], w.shape[1])), None

    def backward(grad, saved, x, w, b):
        g = _rows(grad)
        if not needs_input_grad(0):  # (a first layer) one product on the caller alone: the
            idle_point()             # worker may take deferred work
        # (the weight's and bias's gradients straight into the optimizer's buffer when offered;
        # the input's, an independent product, on the worker inside data_parallel(2))
        (gw, gb), gx = both(
            lambda: (np.matmul(_rows(x).T, g, out=grad_out(1)),
                     np.add.reduce(g, axis=0, out=grad_out(2))),  # (g.sum's own reduce)
            lambda: (g @ w.T).reshape(x.shape) if needs_input_grad(0) else None,
            worth=needs_input_grad(0) and g.shape[0] * w.size >= SPLIT_PRODUCT)
        return gx, gw, gb


@primitive("matmul_add_relu", fresh=True)
class MatMulAddRelu:
    """max(x @ w + b, 0): `matmul_add` and the relu after it as one primitive, the relu taken in
    place in the product (no second array, one primitive to record and run back). A network runs
    it only when no tracer records (fused.py); the tests hold it to matmul_add and relu."""

    def forward(x, w, b):
        y, _ = MatMulAdd.forward(x, w, b)
        np.maximum(y, 0, out=y)
        return y, y

    def backward(grad, y, x, w, b):
        # relu's rule (grad where its input > 0): y > 0 exactly where x @ w + b > 0
        return MatMulAdd.backward(grad * (y > 0), None, x, w, b)
