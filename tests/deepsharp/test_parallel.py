"""The two-thread training step (deepsharp.parallel) against one pass over the whole batch."""

from __future__ import annotations

import numpy as np
import pytest
from threadpoolctl import threadpool_info, threadpool_limits

from deepsharp import SGD, Adam, CrossEntropy, Module, RandomStream, Sequential, Shape, TrainingError
from deepsharp.errors import SpecError
from deepsharp.parallel import data_parallel, forward_backward, threads
from deepsharp.random import RandomStream as Stream
from deepsharp.run import current_run, running
from deepsharp.tensors import Tensor, apply
from deepsharp.tensors.ops import conv_pool, linalg, two_threads, winograd

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


@pytest.mark.parametrize("kind", ["lstm", "gru"])
def test_masked_recurrent_layers_on_two_threads_compiled_train_one_threads_parameters(kind):
    """Each share's series keep their own lengths: the whole-sequence kernels' masking inside
    the two shares gives one thread's numpy parameters, up to the shares' summation order."""
    from deepsharp import MeanSquaredError
    from deepsharp.compiled import compiled

    generator = np.random.default_rng(4)
    x = generator.standard_normal((24, 6, 3)).astype(np.float32)
    for row in range(24):
        x[row, row % 7:] = 0  # series of 0-6 steps, padded at the end
    y = x[:, :2, :1].sum(1)
    states = []
    for count, on in ((1, False), (2, True)):
        layers = getattr(Sequential().masking(0.0), kind)(5)
        network = layers.dense(1).lower(Shape(6, 3), RandomStream(0))
        with data_parallel(count), compiled(on):
            network.fit(x, y, loss=MeanSquaredError(), optimizer=SGD(0.05), batch_size=8,
                        epochs=2, progress=False)
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


def _cnn():
    """A first block of one input channel (the direct product) and a second of 24 (Winograd)."""
    return (Sequential().conv2d(24, 3).relu().max_pool2d(2).conv2d(8, 3).relu().max_pool2d(2)
            .flatten().dense(16).relu().dense(3)).lower(Shape(16, 16, 1), RandomStream(0))


def _blocks_rows_by_24() -> bool:
    """numpy's BLAS is OpenBLAS with its Haswell kernels (Zen takes them too) or its SkylakeX
    ones, whose float32 product rounds a row alike wherever a split at a multiple of 24 rows
    falls (on the same side of the small-matrix bound: conv_pool._splits_alike)."""
    return any(i.get("internal_api") == "openblas"
               and i.get("architecture") in ("Haswell", "Zen", "SkylakeX")
               for i in threadpool_info() if i.get("user_api") == "blas")


@pytest.mark.parametrize("rows", [1152, 2304, 3360, 4608])  # whole and halves: 0.55/0.28,
def test_the_split_product_keeps_one_products_numbers(rows):  # 1.1/0.55, 1.6/0.8, 2.2/1.1 M
    """A product split in halves only where both halves take OpenBLAS's kernel for the whole
    (its small-matrix kernels take products of at most 1e6 multiply-adds and round a 60-tap,
    8-column product's rows otherwise): the numbers of one product, bit for bit."""
    generator = np.random.default_rng(rows)
    cols = generator.standard_normal((4, rows // 4, 60)).astype(np.float32)
    w = generator.standard_normal((60, 8)).astype(np.float32)
    calls = []
    work = two_threads.on_worker
    with threadpool_limits(1, "blas"):
        whole = np.matmul(cols.reshape(rows, 60), w).reshape(4, rows // 4, 8)
        with data_parallel(2, split="kernels"), pytest.MonkeyPatch.context() as patch:
            patch.setattr(two_threads, "on_worker", lambda *a: calls.append(1) or work(*a))
            split = conv_pool._product(cols, w)
    assert bool(calls) == conv_pool._splits_alike(rows, 60, 8) == (rows != 2304 and rows != 3360)
    if _blocks_rows_by_24():
        np.testing.assert_array_equal(split, whole)
    else:
        np.testing.assert_allclose(split, whole, rtol=1e-6, atol=1e-6)


def test_split_kernels_trains_the_parameters_of_one_thread_bit_for_bit(monkeypatch):
    """data_parallel(2, split="kernels"): the products, the Winograd runs (each with its max, bias
    and relu; the input's finiteness summed beside the kernel's transform), the routing, the dense
    layers' two gradient products and Adam's update in two halves at once, the numbers of one
    thread exactly (the runs' sums added in order; the direct product split at multiples of 144
    rows, where OpenBLAS's Haswell and SkylakeX blocks of rows meet). Another BLAS may round the
    split product's rows otherwise: there the parameters are held to 1e-6 relative."""
    monkeypatch.setattr(winograd, "CHUNK_TILES", 16)  # four images a run: several runs to split
    monkeypatch.setattr(conv_pool, "SPLIT_VALUES", 1)  # the max, bias and relu split too
    monkeypatch.setattr(linalg, "SPLIT_PRODUCT", 1)  # and the dense layers' two products
    monkeypatch.setattr(winograd, "SUM_ON_WORKER", 1)  # the input's finiteness on the worker
    generator = np.random.default_rng(4)
    x = generator.standard_normal((30, 16, 16, 1)).astype(np.float32)
    y = generator.integers(0, 3, 30)
    calls = []
    work = two_threads.on_worker
    monkeypatch.setattr(two_threads, "on_worker", lambda *a: calls.append(1) or work(*a))
    states = []
    for count in (1, 2):  # one thread: BLAS's too, as data_parallel(2) holds it
        network = _cnn()
        with threadpool_limits(1, "blas"), data_parallel(count, split="kernels"):
            network.fit(x, y, loss=CrossEntropy(), optimizer=Adam(1e-2), batch_size=20,
                        epochs=2, seed=5, progress=False)
        states.append(network.state_dict())
    assert calls  # the worker took its halves
    for name, value in states[0].items():
        if _blocks_rows_by_24():
            assert np.array_equal(states[1][name], value), name
        else:
            np.testing.assert_allclose(states[1][name], value, rtol=1e-6, atol=1e-7, err_msg=name)


def test_a_share_runs_winograd_in_runs_sized_for_one_core_within_1e_6(monkeypatch):
    """Inside a share of data_parallel(2) the Winograd runs are SHARE_TILES long: the products
    round a row otherwise at another row count and the kernel's gradient sums the runs in other
    groups, so values and gradients agree with the one-thread path to float rounding."""
    generator = np.random.default_rng(2)
    x = generator.standard_normal((40, 13, 13, 32)).astype(np.float32)
    w = (generator.standard_normal((3, 3, 32, 16)) * 0.1).astype(np.float32)
    b = (generator.standard_normal(16) * 0.1).astype(np.float32)
    grad = generator.standard_normal((40, 5, 5, 16)).astype(np.float32)
    runs = []
    transform = winograd.output_transform
    monkeypatch.setattr(winograd, "output_transform", lambda m, o: runs.append(len(o[0]))
                        or transform(m, o))

    def run():
        tensors = [Tensor(a, requires_grad=True) for a in (x, w, b)]
        out = apply("conv_relu_max_pool", *tensors, pads=(0,) * 4, pool=(2, 2))
        (out * Tensor(grad)).sum().backward()
        return [out._data] + [t.grad for t in tensors]

    one = run()
    assert runs == [800, 200]
    runs.clear()
    with data_parallel(2):
        token = two_threads.in_share.set(True)
        try:
            two = run()
        finally:
            two_threads.in_share.reset(token)
    assert runs == [200] * 5
    for name, e, g in zip(("y", "x", "w", "b"), one, two):
        np.testing.assert_allclose(g, e, rtol=1e-6, atol=1e-6 * np.abs(e).max(), err_msg=name)


def test_merged_gradients_land_in_adams_buffer_with_the_same_numbers():
    """Two shares' sums written into the optimizer's gradient buffer (`_grad_home`): the same
    parameters as sums kept apart and gathered by the step."""
    x, y = _batch(40)
    states = []
    for home in (True, False):
        network = _network()
        optimizer = Adam(1e-2)
        if not home:  # no place offered: the merge makes new arrays, the step gathers them
            optimizer.zero_grad = lambda: [setattr(p, "grad", None)
                                           for _, p in network.named_parameters()]
        with data_parallel(2):
            network.fit(x, y, loss=CrossEntropy(), optimizer=optimizer, batch_size=10,
                        epochs=2, seed=5, progress=False)
        states.append(network.state_dict())
    for name, value in states[0].items():
        assert np.array_equal(states[1][name], value), name


def test_split_must_be_named():
    with pytest.raises(SpecError, match="split must be one of batch, kernels, received 'rows'"):
        with data_parallel(2, split="rows"):
            pass


def test_kernels_split_their_work_only_where_the_user_asked_for_two_threads():
    """No thread outside data_parallel(2); none inside a batch's share (both threads are busy);
    a half never splits again; split_work's results come back in the items' order."""
    seen = []

    def work(part):
        nested = two_threads.split_work(lambda inner: list(inner), part)
        seen.append((part, len(nested)))
        return list(part)

    assert two_threads.split_work(work, [1, 2, 3]) == [[1, 2, 3]]
    with data_parallel(2):  # batches split: kernels keep their work whole
        assert two_threads.split_work(work, [1, 2, 3]) == [[1, 2, 3]]
        rows = []
        two_threads.in_halves(rows.append, 10)  # the worker is idle here: elementwise halves
        assert sorted(r.start for r in rows) == [0, 5] and {r.stop for r in rows} == {5, 10}
        token = two_threads.in_share.set(True)
        try:
            rows.clear()
            two_threads.in_halves(rows.append, 10)
            assert rows == [slice(0, 10)]
        finally:
            two_threads.in_share.reset(token)
    seen.clear()
    with data_parallel(2, split="kernels"):
        assert two_threads.split_work(work, [1, 2, 3]) == [[1], [2, 3]]  # the worker the more
        rows = []
        two_threads.in_halves(rows.append, 300, align=144)
        assert sorted((r.start, r.stop) for r in rows) == [(0, 144), (144, 300)]
    assert sorted(seen) == [([1], 1), ([2, 3], 1)]  # each half ran whole: no nested split


def test_split_kernels_takes_batch_norm_and_modules_written_as_code():
    """The kernel split never divides a batch, so a layer mixing the examples (batch norm) and a
    module written as code train as at one thread, with one thread's numbers."""
    x, y = _batch(8)

    class Code(Module):
        def __init__(self):
            super().__init__()
            self.inner = (Sequential().flatten().dense(4).batch_norm().dense(3)
                          .lower(Shape(8, 8, 1), RandomStream(0)))

        def forward(self, x):
            return self.inner(x)

    states = []
    for count in (1, 2):
        module = Code()
        with threadpool_limits(1, "blas"), data_parallel(count, split="kernels"):
            module.fit(x, y, loss=CrossEntropy(), optimizer=Adam(1e-2), batch_size=8, epochs=2,
                       progress=False)
        states.append(module.state_dict())
    for name, value in states[0].items():
        assert np.array_equal(states[1][name], value), name


def test_the_worker_runs_its_jobs_in_order_in_the_callers_modes_and_hands_back_their_errors():
    """on_worker's jobs (a queue, one lock each): their values in order, the caller's context
    (the modes a kernel reads) copied in, and an error raised on the worker raised again by
    result(), the worker going on with the next job."""
    mode = two_threads._in_half
    token = mode.set(True)
    try:
        jobs = [two_threads.on_worker(lambda i: (i, mode.get()), i) for i in range(5)]
    finally:
        mode.reset(token)

    def fails():
        raise ValueError("on the worker")

    failing = two_threads.on_worker(fails)
    after = two_threads.on_worker(lambda: mode.get())
    assert [job.result() for job in jobs] == [(i, True) for i in range(5)]
    with pytest.raises(ValueError, match="on the worker"):
        failing.result()
    assert after.result() is False
