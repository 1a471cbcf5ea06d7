"""The check that a backward rule writing gradients into Adam's gradient buffer (`grad_out`)
changes no number, shared by the fused dense kernels' and the recurrent rules' tests."""

from __future__ import annotations

import numpy as np

from deepsharp import Adam
from deepsharp.layers.base import Flow
from deepsharp.tensors import Tensor


def gradients(network, x, optimizer=None, rounds: int = 1) -> dict[str, np.ndarray]:
    """The parameters' gradients after `rounds` backward passes that follow the optimizer's
    zero_grad (without one: gradients and places emptied by hand)."""
    if optimizer is not None:
        optimizer.zero_grad()
    for _, p in network.named_parameters():
        if optimizer is None:
            p.grad, p._grad_home = None, None
    for _ in range(rounds):
        y = network.call(Flow(Tensor(x))).value
        (y * y).sum().backward()
    return {name: p.grad for name, p in network.named_parameters()}


def check_gradients_in_adams_buffer(network, x) -> dict[str, np.ndarray]:
    """After a first flat step, zero_grad gives each parameter a place in a new gradient buffer,
    and the rules write every gradient there: the numbers made without it, a gradient kept from
    the step before not written over, a second backward pass without zero_grad accumulating as
    ever. Returns the gradients of the first pass (before any step)."""
    optimizer = Adam(1e-2, parameters=network.trainable_parameters())
    first = gradients(network, x, optimizer)
    assert getattr(optimizer, "_flat_moments", None) is None  # no flat buffer before a step
    kept = {name: g.copy() for name, g in first.items()}
    optimizer.step()
    in_buffer = gradients(network, x, optimizer)
    assert all(g.base is optimizer._flat_moments.grad for g in in_buffer.values())
    for name in first:
        np.testing.assert_array_equal(first[name], kept[name], err_msg=name)  # not written over
    twice = {n: g.copy() for n, g in gradients(network, x, optimizer, rounds=2).items()}
    plain = gradients(network, x)
    for name in plain:
        np.testing.assert_array_equal(in_buffer[name], plain[name], err_msg=name)
        np.testing.assert_array_equal(twice[name], plain[name] + plain[name], err_msg=name)
    return first
