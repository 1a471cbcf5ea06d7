"""The two-thread training step (deepsharp.parallel) against one pass over the whole batch."""

from __future__ import annotations

import numpy as np
import pytest
from threadpoolctl import threadpool_info

from deepsharp import SGD, CrossEntropy, Module, RandomStream, Sequential, Shape, TrainingError
from deepsharp.errors import SpecError
from deepsharp.parallel import data_parallel, forward_backward, threads
from deepsharp.random import RandomStream as Stream
from deepsharp.run import current_run, running
from deepsharp.tensors import Tensor

# float summation order only: a product over two shares of rows against one over all of them
RTOL = 1e-5


def _network():
    return (Sequential().conv2d(4, 3).relu().max_pool2d(2).flatten().dense(8).dropout(0.5)
            .relu().dense(3)).lower(Shape(8, 8, 1), RandomStream(0))


def _batch(n: int = 9):
    generator = np.random.default_rng(1)
    return (generator.standard_normal((n, 8, 8, 1)).astype(np.float32),
            generator.integers(0, 3, n))


def _gradients(network, x, y, count: int):
    loss = CrossEntropy()
    for _, p in network.named_parameters():
        p.grad = None
    network.train()
    with data_parallel(count), running(Stream(3), 7):
        value, (logits, mean) = forward_backward(network, lambda rows: _pass(network, loss, x[rows],
                                                                           y[rows]), len(x))
    return value, logits, mean, {n: p.grad.copy() for n, p in network.named_parameters()}


def _pass(network, loss, x, y):
    """The loss and a payload: the logits (a row each) and a mean over the rows."""
    logits = network.logits(Tensor(x), loss)
    return loss(logits, y), (logits._data, float(logits._data.mean()))


def test_two_shares_give_the_gradients_of_one_pass():
    """Dropout masks drawn alike, gradients summed: the same numbers up to summation order."""
    network, (x, y) = _network(), _batch()
    one = _gradients(network, x, y, 1)
    two = _gradients(network, x, y, 2)
    assert two[0] == pytest.approx(one[0], rel=RTOL)
    np.testing.assert_allclose(two[1], one[1], rtol=RTOL, atol=1e-6)
    assert two[2] == pytest.approx(one[2], rel=RTOL, abs=1e-6)  # a mean, weighted by rows
    for name, g in one[3].items():
        np.testing.assert_allclose(two[3][name], g, rtol=RTOL, atol=RTOL * np.abs(g).max(),
                                   err_msg=name)


def test_fit_on_two_threads_trains_the_same_parameters():
    x, y = _batch(40)
    states = []
    for count in (1, 2):
        network = _network()
        with data_parallel(count):
            network.fit(x, y, loss=CrossEntropy(), optimizer=SGD(0.05), batch_size=10, epochs=2,
                        seed=5, progress=False)
        states.append(network.state_dict())
    for name, value in states[0].items():
        np.testing.assert_allclose(states[1][name], value, rtol=RTOL, atol=RTOL, err_msg=name)


def test_a_share_draws_its_rows_of_the_whole_batch():
    whole = Stream(2).generator("dropout:3:5").random((10, 4))
    with running(Stream(2), 5, (slice(6, 10), 10)):
        share = current_run().draw("dropout:3", (4, 4))
        with pytest.raises(Exception, match="first axis must be the batch"):
            current_run().draw("dropout:3", (5, 4))
    np.testing.assert_array_equal(share, whole[6:10])


def test_blas_threads_are_set_inside_the_block_only():
    def blas():
        return [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]

    before = blas()
    with data_parallel(2):
        assert threads() == 2 and set(blas()) == {1}
    assert blas() == before and threads() == 1


def test_refusals_name_the_reason():
    x, y = _batch(8)
    with pytest.raises(SpecError, match="threads must be 1 or 2, received 3"):
        with data_parallel(3):
            pass
    norm = (Sequential().flatten().dense(4).batch_norm().dense(3)
            .lower(Shape(8, 8, 1), RandomStream(0)))
    with data_parallel(2), pytest.raises(TrainingError, match=r"layer 2 \(batch_norm\) mixes"):
        norm.fit(x, y, loss=CrossEntropy(), optimizer=SGD(0.1), batch_size=8, progress=False)

    class Code(Module):
        def __init__(self):
            super().__init__()
            self.inner = _network()

        def forward(self, x):
            return self.inner(x)

    with data_parallel(2), pytest.raises(TrainingError, match="only a Network"):
        Code().fit(x, y, loss=CrossEntropy(), optimizer=SGD(0.1), batch_size=8, progress=False)
