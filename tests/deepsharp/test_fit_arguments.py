"""Issue 11's findings about fit and predict, each a test: NaN in validation data, empty batches,
predict's batch_size, the caller's shape in errors, counts (numpy integers yes, bools no), and
arguments of the wrong type refused with the project's errors naming the argument and value."""

from __future__ import annotations

import numpy as np
import pytest

from deepsharp import (
    SGD, BinaryCrossEntropy, CrossEntropy, MeanSquaredError, Module, RandomStream, Sequential,
    Shape,
)
from deepsharp.errors import DataError, DeepsharpError, ShapeError, SpecError, TargetError


def _data(n=60, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, 6)).astype(np.float32)
    return x, (x[:, 0] > 0).astype(np.float32)


def _network(units=1):
    return Sequential().dense(8).relu().dense(units).lower(Shape(6), RandomStream(0))


def test_nan_in_validation_data_is_refused_by_name():
    x, y = _data()
    bad = x.copy()
    bad[17, 3] = np.nan
    network = _network()
    before = network.state_dict()
    with pytest.raises(DataError, match="validation data: x holds nan at example 17; validation "
                                        "needs finite numbers"):
        network.fit(x, y, loss=BinaryCrossEntropy(), optimizer=SGD(0.1), verbose=0,
                    validation=(bad, y))
    for key, value in network.state_dict().items():  # refused before training started
        np.testing.assert_array_equal(value, before[key])

    class Sequence:
        def __len__(self):
            return 2

        def __getitem__(self, i):
            return (bad[30 * i:30 * i + 30], y[30 * i:30 * i + 30])

    with pytest.raises(DataError, match="batch 0 of the sequence: x holds nan at example 17"):
        network.fit(x, y, loss=BinaryCrossEntropy(), optimizer=SGD(0.1), verbose=0,
                    validation=Sequence())


@pytest.mark.parametrize("loss, units, shape", [
    (MeanSquaredError(), 3, (0, 3)), (BinaryCrossEntropy(), 1, (0, 1)),
    (CrossEntropy(), 4, (0, 4)),
], ids=["mse", "bce", "ce"])
def test_predict_on_an_empty_batch_gives_empty_answers_of_the_right_shape(loss, units, shape):
    answers = _network(units).predict(np.zeros((0, 6), np.float32), loss)
    assert answers.shape == shape and answers.dtype == np.float32


def test_predict_honours_its_batch_size():
    sizes = []

    class Watched(Module):
        def __init__(self):
            super().__init__()
            self.inner = _network()

        def forward(self, x):
            sizes.append(x.shape[0])
            return self.inner(x)

    x, _ = _data(10)
    Watched().predict(x, MeanSquaredError(), batch_size=3)
    assert sizes[1:] == [3, 3, 3, 1]  # sizes[0]: the one-row probe of the outputs' shapes
    sizes.clear()
    Watched().predict(x, MeanSquaredError(), batch_size=np.int64(4))
    assert sizes[1:] == [4, 4, 2]


@pytest.mark.parametrize("call", [
    lambda n, x, y: n.fit(x, y, loss=BinaryCrossEntropy(), optimizer=SGD()),
    lambda n, x, y: n.predict(x, BinaryCrossEntropy()),
], ids=["fit", "predict"])
def test_a_wrong_width_is_reported_with_the_callers_shape(call):
    x, y = _data(50)
    wide = np.concatenate([x, x[:, :1]], axis=1)
    with pytest.raises(ShapeError, match="received an array of shape \\(50, 7\\)"):
        call(_network(), wide, y)

    class Code(Module):
        def __init__(self):
            super().__init__()
            self.inner = _network()

        def forward(self, x):
            return self.inner.logits(x)

    with pytest.raises(ShapeError, match="Code cannot take inputs of shape \\(50, 7\\)"):
        call(Code(), wide, y)


def test_counts_take_numpy_integers_and_refuse_bools():
    x, y = _data()
    history = _network().fit(x, y, loss=BinaryCrossEntropy(), optimizer=SGD(), verbose=0,
                             epochs=np.int64(2), batch_size=np.int32(16), seed=np.uint8(3))
    assert len(history) == 2
    for name in ("epochs", "batch_size"):
        with pytest.raises(SpecError, match=f"fit: {name} must be a positive integer.*received True"):
            _network().fit(x, y, loss=BinaryCrossEntropy(), optimizer=SGD(), **{name: True})
    with pytest.raises(SpecError, match="fit: seed must be an integer >= 0, received False"):
        _network().fit(x, y, loss=BinaryCrossEntropy(), optimizer=SGD(), seed=False)
    with pytest.raises(SpecError, match="predict: batch_size must be a positive integer or None, "
                                        "received True"):
        _network().predict(x, BinaryCrossEntropy(), batch_size=True)


@pytest.mark.parametrize("options, message", [
    ({"x": "rows.csv"}, "fit: x must be an array, received 'rows.csv'"),
    ({"x": None}, "fit: x must be an array, received None"),
    ({"x": [["a", "b"]]}, "fit: x must be an array of numbers, received a list read as dtype <U1"),
    ({"y": {"a": np.ones(60)}}, "the module gives one output; y must be one array, received a dict"),
    ({"optimizer": "sgd"}, "fit: optimizer must be a deepsharp Optimizer, received 'sgd'"),
    ({"loss": None}, "fit: loss must be a deepsharp Loss, received None"),
    ({"callbacks": 5}, "fit: callbacks must be a list of callbacks, received 5"),
    ({"callbacks": [print]}, "fit: callbacks\\[0\\] \\(<built-in function print>\\) has no "
                             "on_epoch_end method"),
    ({"validation": 5}, "fit: validation must be \\(x, y\\), \\(x, y, sample_weight\\) or a "
                        "sequence of batches, received int"),
    ({"shuffle": "yes"}, "fit: shuffle must be True or False, received 'yes'"),
    ({"early_stopping": "soon"}, "fit: early_stopping must be an EarlyStopping or a patience, "
                                 "received 'soon'"),
    ({"class_weight": [1, 2]}, "fit: class_weight must be a dict class -> weight, received "
                               "\\[1, 2\\]"),
    ({"metrics": 5}, "fit: metrics must be Metric objects or names among .* received 5"),
    ({"x": {}}, "fit: x holds no arrays \\(received \\{\\}\\)"),
    ({"y": {}}, "fit: y holds no arrays"),
    ({"checkpoint": 5}, "fit: checkpoint must be a path, received 5"),
    ({"verbose": np.array([1, 2])}, "fit: verbose must be 0, 1, 2 or 'auto'"),
    ({"epoch": 3}, "fit: no option 'epoch'; the options are loss, optimizer, epochs"),
    ({"workers": 4}, "fit: no option 'workers'"),
])
def test_arguments_of_the_wrong_type_are_the_projects_errors(options, message):
    x, y = _data()
    call = {"x": x, "y": y, "loss": BinaryCrossEntropy(), "optimizer": SGD(), "verbose": 0,
            **options}
    with pytest.raises(DeepsharpError, match=message):
        _network().fit(call.pop("x"), call.pop("y"), **call)


def test_missing_loss_and_optimizer_are_named():
    x, y = _data()
    with pytest.raises(SpecError, match="fit: needs loss, optimizer"):
        _network().fit(x, y)
    with pytest.raises(SpecError, match="predict: needs the loss"):
        _network().predict(x)
    with pytest.raises(SpecError, match="predict: x must be an array, received None"):
        _network().predict(None, MeanSquaredError())
    with pytest.raises(SpecError, match="predict: loss must be a deepsharp Loss, received 'mse'"):
        _network().predict(x, "mse")
    with pytest.raises(TargetError, match="training data has no answers: give y"):
        _network().fit(x, loss=BinaryCrossEntropy(), optimizer=SGD())
