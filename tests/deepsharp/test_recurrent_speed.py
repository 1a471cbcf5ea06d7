"""The recurrent primitives' shortcuts change no number: the input's gradient skipped when nothing
needs it, and the kernels' gradients written into the optimizer's gradient buffer (`grad_out`).
The per-step passes themselves are held bit for bit to the compiled kernels, which repeat the
operations in their order (test_compiled.py), and to PyTorch (test_seq_torch.py)."""

from __future__ import annotations

import numpy as np
import pytest

from deepsharp import RandomStream, Sequential, Shape
from deepsharp.tensors import Tensor, apply
from tests.support.grad_places import check_gradients_in_adams_buffer


def _arrays(gates: int, seed: int = 3) -> list[np.ndarray]:
    generator = np.random.default_rng(seed)
    return [generator.standard_normal(s).astype(np.float32) * 0.5
            for s in ((3, 7, 4), (4, 5 * gates), (5, 5 * gates), (5 * gates,), (5 * gates,))]


@pytest.mark.parametrize("kind, gates", [("lstm", 4), ("gru", 3)])
@pytest.mark.parametrize("reverse", [0, 1])
def test_an_input_without_gradient_leaves_the_kernels_gradients_as_they_were(kind, gates,
                                                                              reverse):
    """The rule skips the input's gradient when the input needs none (a network's first layer);
    the kernels' and biases' gradients are the same bit for bit."""
    results = []
    for wanted in (True, False):
        x, *rest = _arrays(gates)
        x = Tensor(x, requires_grad=wanted)
        params = [Tensor(a, requires_grad=True) for a in rest]
        y, h, *_ = apply(kind, x, *params, reverse=reverse)
        ((y * y).sum() + (h * 3).sum()).backward()
        assert (x.grad is not None) == wanted
        results.append([p.grad for p in params])
    for with_x, without_x in zip(*results):
        np.testing.assert_array_equal(with_x, without_x)


@pytest.mark.parametrize("kind", ["lstm", "gru"])
def test_recurrent_gradients_in_adams_buffer_are_the_same_numbers(kind):
    """After a first flat step, the LSTM's and the GRU's rules write their kernels' and biases'
    gradients in their places in Adam's gradient buffer (as the dense layer's does): the numbers
    made without it, an earlier gradient not written over, a second pass without zero_grad
    accumulating as ever (tests/support/grad_places.py)."""
    network = (getattr(Sequential(), kind)(5, return_sequences=True).dense(2)
               .lower(Shape(6, 3), RandomStream(0)))
    x = np.random.default_rng(4).standard_normal((4, 6, 3)).astype(np.float32)
    check_gradients_in_adams_buffer(network, x)
