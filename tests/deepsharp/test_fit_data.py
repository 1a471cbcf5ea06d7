"""fit's data: several inputs and outputs, sample and class weights as Keras defines them,
validation_split, sequences and iterators of batches, memmaps read a batch at a time, verbose."""

from __future__ import annotations

import math
import tracemalloc

import numpy as np
import pytest

from deepsharp import (
    SGD, Adam, BinaryCrossEntropy, CrossEntropy, MeanSquaredError, Module, RandomStream,
    Sequential, Shape, Tensor, functional,
)
from deepsharp.errors import SpecError, TargetError
from deepsharp.metrics import MAE
from tests.support import assert_gradients
from tests.support.fitting import rows, small_network


def _data(n=120, seed=0):
    return rows(n, seed)


def _network(seed=1):
    return small_network(8, seed)


class TwoHeads(Module):
    """Two inputs (a row of 4 and a row of 3), two outputs by name: three classes and a number."""

    def __init__(self, random, named=True):
        super().__init__()
        self.named = named
        self.left = Sequential().dense(8).relu().lower(Shape(4), random)
        self.right = Sequential().dense(8).relu().lower(Shape(3), random)
        self.kind = Sequential().dense(3).lower(Shape(16), random)
        self.size = Sequential().dense(1).lower(Shape(16), random)

    def forward(self, left, right):
        h = functional.concat([self.left(left), self.right(right)], axis=-1)
        if self.named:
            return {"kind": self.kind(h), "size": self.size(h)}
        return self.kind(h), self.size(h)


def _two_heads_data(n=90, seed=0):
    rng = np.random.default_rng(seed)
    left = rng.standard_normal((n, 4)).astype(np.float32)
    right = rng.standard_normal((n, 3)).astype(np.float32)
    kind = (left[:, 0] > 0).astype(np.int64) + (right[:, 0] > 0)
    size = (2 * left[:, 1:2] - right[:, 2:3]).astype(np.float32)
    return left, right, kind, size


LOSSES = {"kind": CrossEntropy(), "size": MeanSquaredError()}


# -- several inputs and outputs ---------------------------------------------------------------------
def test_several_inputs_and_named_outputs_train_with_a_loss_each():
    left, right, kind, size = _two_heads_data()
    module = TwoHeads(RandomStream(0))
    history = module.fit({"left": left, "right": right}, {"kind": kind, "size": size},
                         loss=LOSSES, loss_weights={"kind": 1.0, "size": 0.5},
                         metrics={"kind": ["accuracy"], "size": [MAE()]},
                         optimizer=Adam(1e-2), epochs=4, batch_size=15, verbose=0,
                         validation=((left[:30], right[:30]), {"kind": kind[:30], "size": size[:30]}))
    assert history.keys() == ["epoch", "loss", "kind_loss", "size_loss", "kind_accuracy",
                              "size_mae", "val_loss", "val_kind_loss", "val_size_loss",
                              "val_kind_accuracy", "val_size_mae", "lr", "seconds"]
    for logs in history:  # the total is the weighted sum, in training and in validation
        assert logs["loss"] == pytest.approx(logs["kind_loss"] + 0.5 * logs["size_loss"])
        assert logs["val_loss"] == pytest.approx(logs["val_kind_loss"] + 0.5 * logs["val_size_loss"])
    assert history["loss"][-1] < history["loss"][0]
    answers = module.predict((left[:7], right[:7]), LOSSES)
    assert set(answers) == {"kind", "size"} and answers["kind"].shape == (7, 3)
    np.testing.assert_allclose(answers["kind"].sum(axis=1), 1.0, rtol=1e-6)  # softmax applied


def test_validation_losses_are_the_outputs_losses_on_the_validation_data():
    left, right, kind, size = _two_heads_data()
    module = TwoHeads(RandomStream(0))
    history = module.fit((left, right), {"kind": kind, "size": size}, loss=LOSSES,
                         optimizer=SGD(0.0), epochs=1, verbose=0,
                         validation=((left[:40], right[:40]), {"kind": kind[:40], "size": size[:40]}))
    logits = module.predict((left[:40], right[:40]), {"kind": MeanSquaredError(),
                                                       "size": MeanSquaredError()})
    expected = float(CrossEntropy()(Tensor(logits["kind"]), kind[:40])._data)
    assert history["val_kind_loss"][0] == pytest.approx(expected, rel=1e-6)
    assert history["val_size_mae"][0] == pytest.approx(np.abs(logits["size"] - size[:40]).mean(),
                                                       rel=1e-6)


def test_a_tuple_of_one_array_is_the_one_input():
    x, y = _data()
    history = _network().fit((x,), y, loss=BinaryCrossEntropy(), optimizer=SGD(0.1), verbose=0)
    assert np.isfinite(history["loss"][0])
    assert _network().predict((x[:3],), BinaryCrossEntropy()).shape == (3, 1)


def test_resuming_with_the_default_batch_size(tmp_path):
    x, y = _data()
    path = tmp_path / "run.ckpt"
    _network().fit(x, y, loss=BinaryCrossEntropy(), optimizer=SGD(0.1), epochs=1, verbose=0,
                   checkpoint=path)
    history = _network().fit(x, y, loss=BinaryCrossEntropy(), optimizer=SGD(0.1), epochs=2,
                             batch_size=32, verbose=0, checkpoint=path, resume=True)
    assert history["epoch"] == [1, 2]


def test_tuple_outputs_take_losses_by_position_and_one_loss_serves_all():
    left, right, kind, size = _two_heads_data()
    module = TwoHeads(RandomStream(0), named=False)
    history = module.fit((left, right), (kind, size), loss=[CrossEntropy(), MeanSquaredError()],
                         optimizer=Adam(1e-2), epochs=2, verbose=0)
    assert {"output_0_loss", "output_1_loss", "output_0_accuracy", "output_1_mae"} <= set(history.keys())
    answers = module.predict((left[:3], right[:3]), [CrossEntropy(), MeanSquaredError()])
    assert isinstance(answers, tuple) and answers[0].shape == (3, 3) and answers[1].shape == (3, 1)
    both_mse = module.fit((left, right), (np.eye(3, dtype=np.float32)[kind], size),
                          loss=MeanSquaredError(), optimizer=SGD(0.01), epochs=1, verbose=0)
    assert {"output_0_loss", "output_1_loss"} <= set(both_mse.keys())


@pytest.mark.parametrize("call, message", [
    (lambda m, d: m.fit((d[0], d[1]), {"kind": d[2]}, loss=LOSSES, optimizer=SGD()),
     "y has no answers for outputs \\['size'\\]"),
    (lambda m, d: m.fit((d[0], d[1]), (d[2], d[3]), loss=LOSSES, optimizer=SGD()),
     "the module's outputs are named \\['kind', 'size'\\]; y must be a dict"),
    (lambda m, d: m.fit((d[0], d[1]), {"kind": d[2], "size": d[3]},
                        loss={"kind": CrossEntropy(), "area": MeanSquaredError()}, optimizer=SGD()),
     "loss names outputs \\['area'\\] the module does not give; its outputs are \\['kind', 'size'\\]"),
    (lambda m, d: m.fit((d[0], d[1]), {"kind": d[2], "size": d[3]}, loss=LOSSES,
                        loss_weights={"kind": -1.0}, optimizer=SGD()),
     "loss_weights\\['kind'\\] must be a non-negative number, received -1.0"),
    (lambda m, d: m.fit((d[0], d[1]), {"kind": d[2], "size": d[3]}, loss=LOSSES,
                        metrics=["accuracy"], optimizer=SGD()),
     "give metrics per output, as a dict by name"),
    (lambda m, d: m.fit((d[0], d[1], d[1]), {"kind": d[2], "size": d[3]}, loss=LOSSES,
                        optimizer=SGD()),
     "x holds 3 arrays, but TwoHeads.forward takes 2 inputs \\(left, right\\)"),
    (lambda m, d: m.fit({"left": d[0], "up": d[1]}, {"kind": d[2], "size": d[3]}, loss=LOSSES,
                        optimizer=SGD()),
     "x names inputs \\['left', 'up'\\]; TwoHeads.forward takes \\['left', 'right'\\]"),
    (lambda m, d: m.fit((d[0], d[1]), {"kind": d[2], "size": d[3]}, loss=LOSSES,
                        class_weight={0: 2.0}, optimizer=SGD()),
     "class_weight is for a module with one output"),
])
def test_structures_that_do_not_match_are_named(call, message):
    module = TwoHeads(RandomStream(0))
    with pytest.raises((SpecError, TargetError), match=message):
        call(module, _two_heads_data())


# -- weights ------------------------------------------------------------------------------------------
def _one_batch_loss(network, x, y, loss, **weights) -> float:
    """The loss fit reports for one full batch with a zero rate (nothing moves)."""
    history = network.fit(x, y, loss=loss, optimizer=SGD(0.0), epochs=1, batch_size=len(x),
                          shuffle=False, verbose=0, **weights)
    return history["loss"][0]


def test_sample_weights_as_keras_reduces_them():
    """sum(w * loss per example) / number of examples ("sum over batch size"), not / sum(w)."""
    x, y = _data(40)
    w = np.linspace(0.0, 2.0, 40).astype(np.float32)
    network = _network()
    z = network.predict(x, MeanSquaredError())[:, 0].astype(np.float64)
    per = np.maximum(z, 0) - z * y + np.log1p(np.exp(-np.abs(z)))
    got = _one_batch_loss(network, x, y, BinaryCrossEntropy(), sample_weight=w)
    assert got == pytest.approx(float((w * per).sum() / len(per)), rel=1e-5)
    assert _one_batch_loss(network, x, y, BinaryCrossEntropy(), sample_weight=np.ones(40)) == \
        pytest.approx(float(per.mean()), rel=1e-5)


def test_class_weights_are_sample_weights_of_each_examples_class():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((30, 6)).astype(np.float32)
    ids = rng.integers(0, 3, 30)
    network = Sequential().dense(3).lower(Shape(6), RandomStream(0))
    by_class = _one_batch_loss(network, x, ids, CrossEntropy(), class_weight={0: 3.0, 2: 0.5})
    by_hand = np.array([{0: 3.0, 2: 0.5}.get(int(c), 1.0) for c in ids], np.float32)
    assert by_class == pytest.approx(_one_batch_loss(network, x, ids, CrossEntropy(),
                                                     sample_weight=by_hand), rel=1e-6)
    shares = np.eye(3, dtype=np.float32)[ids]   # one-hot answers: the class is the largest share
    assert by_class == pytest.approx(_one_batch_loss(network, x, shares, CrossEntropy(),
                                                     class_weight={0: 3.0, 2: 0.5}), rel=1e-6)
    with pytest.raises(SpecError, match="give sample_weight or class_weight, not both"):
        network.fit(x, ids, loss=CrossEntropy(), optimizer=SGD(), class_weight={0: 1.0},
                    sample_weight=by_hand)
    tagger = Sequential().dense(3).lower(Shape(4, 6), RandomStream(0))   # a class per step
    with pytest.raises(TargetError, match="class_weight needs one class per example; the answers "
                                          "have shape \\(30, 4\\)"):
        tagger.fit(np.zeros((30, 4, 6), np.float32), np.zeros((30, 4), np.int64),
                   loss=CrossEntropy(), optimizer=SGD(), class_weight={0: 1.0})
    with pytest.raises(SpecError, match="class_weight keys must be class indices"):
        network.fit(x, ids, loss=CrossEntropy(), optimizer=SGD(), class_weight={"a": 1.0})


@pytest.mark.parametrize("loss, target", [
    (MeanSquaredError(), lambda rng: rng.standard_normal((4, 5, 3))),
    (BinaryCrossEntropy(), lambda rng: (rng.random((4, 5, 3)) > 0.5).astype(float)),
    (CrossEntropy(), lambda rng: rng.integers(0, 3, (4, 5))),
    (CrossEntropy(), lambda rng: np.eye(3)[rng.integers(0, 3, (4, 5))]),
], ids=["mse", "bce", "ce-ids", "ce-shares"])
def test_weighted_losses_have_the_right_gradients(loss, target):
    rng = np.random.default_rng(0)
    y = target(rng)
    w = rng.random((4, 5))
    assert_gradients(lambda z: loss.weighted(z, y, w), [rng.standard_normal((4, 5, 3))])
    ones = loss.weighted(Tensor(np.ones((4, 5, 3), np.float32)), y, np.ones((4, 5)))
    assert float(ones._data) == pytest.approx(float(loss(Tensor(np.ones((4, 5, 3), np.float32)),
                                                         y.astype(np.float32) if y.dtype.kind == "f"
                                                         else y)._data), rel=1e-6)


def test_bad_sample_weights_are_named():
    x, y = _data()
    with pytest.raises(TargetError, match="120 examples \\(x\\) but sample_weight has 7"):
        _network().fit(x, y, loss=BinaryCrossEntropy(), optimizer=SGD(), sample_weight=np.ones(7))
    with pytest.raises(TargetError, match="sample_weight of shape \\(120, 2\\) fits neither the "
                                          "examples \\(120,\\) nor the losses \\(120,\\)"):
        _network().fit(x, y, loss=BinaryCrossEntropy(), optimizer=SGD(),
                       sample_weight=np.ones((120, 2)))
    with pytest.raises(TargetError, match="sample_weight must be finite and >= 0, received nan"):
        w = np.ones(120)
        w[5] = np.nan
        _network().fit(x, y, loss=BinaryCrossEntropy(), optimizer=SGD(), sample_weight=w)


# -- validation_split ---------------------------------------------------------------------------------
def test_validation_split_holds_out_the_last_examples_before_shuffling():
    x, y = _data(50)
    network = _network()
    history = network.fit(x, y, loss=BinaryCrossEntropy(), optimizer=SGD(0.1), epochs=2,
                          batch_size=8, validation_split=0.3, verbose=0)
    held = math.ceil(50 * 0.7)   # Keras' cut: ceil(n * (1 - split)) examples train
    z = network.predict(x[held:], MeanSquaredError())
    expected = float(BinaryCrossEntropy()(Tensor(z), y[held:, None])._data)
    assert history["val_loss"][-1] == pytest.approx(expected, rel=1e-6)
    trained_on_first = _network()
    trained_on_first.fit(x[:held], y[:held], loss=BinaryCrossEntropy(), optimizer=SGD(0.1),
                         epochs=2, batch_size=8, verbose=0)
    for key, value in trained_on_first.state_dict().items():
        np.testing.assert_array_equal(network.state_dict()[key], value)


def test_validation_split_refusals():
    x, y = _data()
    with pytest.raises(SpecError, match="validation_split must be a number from 0 up to"):
        _network().fit(x, y, loss=BinaryCrossEntropy(), optimizer=SGD(), validation_split=1.0)
    with pytest.raises(SpecError, match="give validation data or a validation_split, not both"):
        _network().fit(x, y, loss=BinaryCrossEntropy(), optimizer=SGD(), validation_split=0.2,
                       validation=(x, y))


# -- sequences and iterators ----------------------------------------------------------------------------
class Batches:
    """A sequence of batches, as a Keras PyDataset: batch i is rows [10 i, 10 i + 10)."""

    def __init__(self, x, y, w=None):
        self.x, self.y, self.w, self.epochs_ended = x, y, w, 0

    def __len__(self):
        return math.ceil(len(self.x) / 10)

    def __getitem__(self, i):
        part = slice(10 * i, 10 * i + 10)
        if self.w is None:
            return self.x[part], self.y[part]
        return self.x[part], self.y[part], self.w[part]

    def on_epoch_end(self):
        self.epochs_ended += 1


def test_a_sequence_of_batches_trains_as_the_same_arrays_do():
    x, y = _data()
    w = np.linspace(0.5, 1.5, 120).astype(np.float32)
    options = dict(loss=BinaryCrossEntropy(), optimizer=None, epochs=3, shuffle=False, verbose=0)
    arrays, batches = _network(), _network()
    arrays.fit(x, y, sample_weight=w, batch_size=10, **{**options, "optimizer": SGD(0.1)})
    sequence = Batches(x, y, w)
    history = batches.fit(sequence, **{**options, "optimizer": SGD(0.1)},
                          validation=Batches(x[:30], y[:30]))
    for key, value in arrays.state_dict().items():
        np.testing.assert_allclose(batches.state_dict()[key], value, rtol=1e-6)
    assert sequence.epochs_ended == 3 and "val_loss" in history.keys()


def test_a_shuffled_sequence_reorders_its_batches_from_the_seed():
    x, y = _data()
    seen = []

    class Watched(Batches):
        def __getitem__(self, i):
            seen.append(i)
            return super().__getitem__(i)

    _network().fit(Watched(x, y), loss=BinaryCrossEntropy(), optimizer=SGD(), epochs=1, seed=5,
                   verbose=0)
    order = RandomStream(5).generator("shuffle:0").permutation(12).tolist()
    assert seen[1:] == order and sorted(seen[1:]) == list(range(12))  # seen[0]: the probe


def test_an_iterator_gives_steps_per_epoch_batches_and_goes_on():
    x, y = _data()
    drawn = []

    def batches():
        i = 0
        while i < 11:
            drawn.append(i)
            yield x[10 * i:10 * i + 10], y[10 * i:10 * i + 10]
            i += 1

    network = _network()
    history = network.fit(batches(), loss=BinaryCrossEntropy(), optimizer=SGD(0.1), epochs=2,
                          steps_per_epoch=4, verbose=0)
    assert len(history) == 2 and drawn == list(range(8))
    with pytest.warns(RuntimeWarning, match="iterator ran out after 11 batches \\(epoch 3 of 4\\)"):
        history = network.fit(batches(), loss=BinaryCrossEntropy(), optimizer=SGD(0.1), epochs=4,
                              steps_per_epoch=4, verbose=0)
    assert len(history) == 2
    with pytest.raises(SpecError, match="an iterator: give steps_per_epoch"):
        network.fit(batches(), loss=BinaryCrossEntropy(), optimizer=SGD())
    with pytest.raises(SpecError, match="do not give y, batch_size"):
        network.fit(Batches(x, y), y, loss=BinaryCrossEntropy(), optimizer=SGD(), batch_size=4)
    with pytest.raises(SpecError, match="batch 0 of the sequence must be a tuple \\(x, y\\)"):
        network.fit(_Bad(), loss=BinaryCrossEntropy(), optimizer=SGD())


class _Bad:
    def __len__(self):
        return 2

    def __getitem__(self, i):
        return [1, 2, 3]


# -- memmaps --------------------------------------------------------------------------------------------
def test_a_memmap_is_read_a_batch_at_a_time(tmp_path):
    """A float64 memmap of 16 MB trains, shuffled, and validates, and the whole array is never
    held in memory (numpy reports its allocations to tracemalloc)."""
    rows, width = 8000, 256
    x = np.lib.format.open_memmap(tmp_path / "x.npy", mode="w+", dtype=np.float64,
                                  shape=(rows, width))
    rng = np.random.default_rng(0)
    for start in range(0, rows, 1000):
        x[start:start + 1000] = rng.standard_normal((1000, width))
    x.flush()
    x = np.load(tmp_path / "x.npy", mmap_mode="r")
    y = np.lib.format.open_memmap(tmp_path / "y.npy", mode="w+", dtype=np.float32, shape=(rows,))
    y[:] = (np.asarray(x[:, 0]) > 0)
    network = Sequential().dense(4).relu().dense(1).lower(Shape(width), RandomStream(0))
    tracemalloc.start()
    try:
        history = network.fit(x, y, loss=BinaryCrossEntropy(), optimizer=SGD(0.05), epochs=1,
                              batch_size=64, validation_split=0.25, verbose=0)
        answers = network.predict(x, BinaryCrossEntropy(), batch_size=500)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    whole = x.nbytes  # 16 MB as float64 (8 MB as float32)
    assert peak < whole / 3, f"peak {peak / 1e6:.1f} MB for a {whole / 1e6:.1f} MB memmap"
    assert np.isfinite(history["val_loss"][0]) and answers.shape == (rows, 1)


# -- verbose ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("verbose, out, err", [(0, False, False), (1, False, True), (2, True, False),
                                               ("auto", True, False)])
def test_verbose_as_keras(verbose, out, err, capsys):
    x, y = _data()
    _network().fit(x, y, loss=BinaryCrossEntropy(), optimizer=SGD(), epochs=2, verbose=verbose)
    captured = capsys.readouterr()
    assert ("epoch 2/2" in captured.out) is out and ("epoch 2/2" in captured.err) is err


@pytest.mark.parametrize("verbose", [True, 3, "yes"])
def test_bad_verbose_is_named(verbose):
    x, y = _data()
    with pytest.raises(SpecError, match=f"verbose must be 0, 1, 2 or 'auto', received {verbose!r}"):
        _network().fit(x, y, loss=BinaryCrossEntropy(), optimizer=SGD(), verbose=verbose)
