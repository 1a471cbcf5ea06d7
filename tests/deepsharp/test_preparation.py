"""Preparation steps in numpy: each held to its definition (scikit-learn's for the scalers, the
imputer and the encoders), with NaN and unknown categories, and one test per refusal."""

from __future__ import annotations

from functools import partial

import numpy as np
import pytest

from deepsharp import PreparationError
from deepsharp.datasets import Standardizer as FromDatasets
from deepsharp.preparation import (
    Chain, Column, Columns, FillMissing, IndexEncoder, MinMaxScaler, OneHot, SelectColumns,
    Standardizer,
)

RNG = np.random.default_rng(0)
X = RNG.normal(3.0, 2.0, (50, 4)).astype(np.float32)
X[4, 1] = np.nan


def test_standardizer_is_the_one_datasets_gives():
    assert FromDatasets is Standardizer


def test_standardizer_leaves_nan_out_when_fitting_and_keeps_it():
    scale = Standardizer.fit(X)
    rows = X.astype(np.float64)
    np.testing.assert_allclose(scale.mean, np.nanmean(rows, axis=0), rtol=1e-6)
    np.testing.assert_allclose(scale.std, np.nanstd(rows, axis=0), rtol=1e-6)
    out = scale(X)
    assert out.dtype == np.float32 and np.isnan(out[4, 1]) and np.isnan(out).sum() == 1
    np.testing.assert_allclose(out[:, 0], (X[:, 0] - scale.mean[0]) / scale.std[0], rtol=1e-6)


def test_a_constant_column_scales_by_one():
    x = np.c_[np.full(5, 7.0), np.arange(5.0)]
    assert Standardizer.fit(x).std[0] == 1 and (Standardizer.fit(x)(x)[:, 0] == 0).all()
    scaler = MinMaxScaler.fit(x)
    assert scaler.scale[0] == 1 and (scaler(x)[:, 0] == -7 + 7).all()


def test_min_max_maps_the_training_range_onto_the_feature_range():
    scaler = MinMaxScaler.fit(X, feature_range=(-1, 1))
    out = scaler(X)
    np.testing.assert_allclose(np.nanmin(out, axis=0), -1, atol=1e-6)
    np.testing.assert_allclose(np.nanmax(out, axis=0), 1, atol=1e-6)
    assert np.isnan(out[4, 1])
    beyond = scaler(np.nanmax(X, axis=0, keepdims=True) + 1)
    assert (beyond > 1).all()  # no clipping, as scikit-learn's default


@pytest.mark.parametrize("strategy, expected", [
    ("mean", lambda c: np.nanmean(c)), ("median", lambda c: np.nanmedian(c)),
])
def test_fill_missing_strategies(strategy, expected):
    fill = FillMissing.fit(X, strategy=strategy)
    np.testing.assert_allclose(fill.values[1], expected(X[:, 1].astype(np.float64)), rtol=1e-6)
    out = fill(X)
    assert not np.isnan(out).any() and out[4, 1] == fill.values[1]
    assert (out[np.arange(50) != 4] == X[np.arange(50) != 4]).all()


def test_fill_most_frequent_takes_the_least_of_equally_frequent_and_keeps_infinities():
    x = np.array([[2.0], [1.0], [2.0], [1.0], [np.nan], [np.inf]])
    fill = FillMissing.fit(x, strategy="most_frequent")
    assert fill.values.tolist() == [1.0]
    assert fill(x).ravel().tolist() == [2, 1, 2, 1, 1, np.inf]
    assert FillMissing.fit(x, strategy="constant", fill_value=-5)(x)[4, 0] == -5


def test_one_hot_sorts_categories_and_zeros_the_unknown():
    encode = OneHot.fit(np.array([["red"], ["green"], ["red"]]))
    assert encode.categories[0].tolist() == ["green", "red"]
    assert encode(np.array([["red"], ["blue"], ["green"]])).tolist() == [[0, 1], [0, 0], [1, 0]]
    ints = OneHot.fit(np.array([[3, 1], [1, 1], [2, 5]]))
    assert ints.width_out == 3 + 2
    assert ints(np.array([[2, 5], [9, 1]])).tolist() == [[0, 1, 0, 0, 1], [0, 0, 0, 1, 0]]


def test_index_encoder_gives_positions_and_unknown():
    encode = IndexEncoder.fit(np.array([[3], [7], [3]]))
    assert encode(np.array([[7], [5], [3]])).ravel().tolist() == [1, -1, 0]
    assert IndexEncoder.fit(np.array([["b"], ["a"]]), unknown=99)(
        np.array([["a"], ["z"]])).ravel().tolist() == [0, 99]
    objects = np.array(["b", "a"], dtype=object).reshape(-1, 1)
    assert IndexEncoder.fit(objects)(objects).ravel().tolist() == [1, 0]


def test_select_and_chain():
    pick = SelectColumns([3, 0, 0], width=4)
    assert (pick(X) == X[:, [3, 0, 0]]).all()
    fill = FillMissing.fit(X)
    chain = Chain((fill, Standardizer.fit(fill(X)), pick))
    np.testing.assert_array_equal(chain(X), pick(Standardizer.fit(fill(X))(fill(X))))
    assert chain.width_in == 4 and chain.width_out == 3


def _table():
    return {"age": np.array([30.0, np.nan, 50.0, 41.0]), "sex": np.array(["f", "m", "f", "f"]),
            "port": np.array([1, 2, 1, 3]), "block": X[:4], "ignored": np.zeros(4)}


def test_columns_fit_each_column_in_order_and_join_them():
    table = _table()
    prepare = Columns.fit(table, {"age": [FillMissing, Standardizer], "sex": OneHot,
                                  "port": [IndexEncoder],
                                  "block": [partial(FillMissing.fit, strategy="median"),
                                            MinMaxScaler]})
    out = prepare(table)
    assert out.shape == (4, 1 + 2 + 1 + 4) and out.dtype == np.float32
    age = prepare.columns[0].prepare
    assert isinstance(age, Chain) and age.steps[0].values.tolist() == [np.float32(121 / 3)]
    assert out[:, 1:3].tolist() == [[1, 0], [0, 1], [1, 0], [1, 0]]
    assert out[:, 3].tolist() == [0, 1, 0, 2]
    assert [c.vector for c in prepare.columns] == [True, True, True, False]
    feeds = prepare.inputs(table)
    assert set(feeds) == {"age", "sex", "port", "block"}
    assert feeds["age"].dtype == np.float32 and feeds["port"].dtype == np.int64
    assert feeds["sex"].dtype.kind == "U" and feeds["block"].shape == (4, 4)


def test_equal_steps_compare_equal_and_fitted_arrays_cannot_change():
    a, b = Standardizer.fit(X), Standardizer.fit(X.copy())
    assert a == b and a != Standardizer.fit(X[:10]) and a != MinMaxScaler.fit(X)
    with pytest.raises(ValueError):
        a.mean[0] = 1.0
    assert OneHot.fit(np.array([["x"]])) == OneHot((np.array(["x"]),))


@pytest.mark.parametrize("make, message", [
    (lambda: Standardizer.fit(np.array([["a"]])), "Standardizer.fit: expects numbers"),
    (lambda: Standardizer.fit(X)(X[:, :3]), "Standardizer: expects a block of shape (rows, 4)"),
    (lambda: Standardizer([0.0], [0.0]), "std must be positive"),
    (lambda: FillMissing.fit(np.array([[np.nan, 1.0]])), "column(s) [0] hold no value"),
    (lambda: FillMissing.fit(X, strategy="mode"), "strategy must be one of"),
    (lambda: FillMissing.fit(X, strategy="constant"), "needs fill_value"),
    (lambda: MinMaxScaler.fit(X, feature_range=(1, 0)), "low < high"),
    (lambda: OneHot.fit(np.array([[1.5]])), "categories must be strings or integers, received an "
                                            "array of float64"),
    (lambda: OneHot.fit(np.array([[None]], dtype=object)), "holds None"),
    (lambda: OneHot.fit(np.array([["a"]]))(np.array([[1]])), "the categories are strings, "
                                                              "received an array of int64"),
    (lambda: OneHot((np.array(["a", "a"]),)), "names a category twice"),
    (lambda: IndexEncoder((np.array([1, 2]),), unknown=1), "unknown must be an integer that is "
                                                          "no category's position"),
    (lambda: SelectColumns([4], width=4), "indices must be one or more column positions"),
    (lambda: Chain((Standardizer.fit(X), OneHot.fit(np.array([["a"]])))), "step 1 (OneHot) "
                                                                          "takes categories"),
    (lambda: Chain((Standardizer.fit(X), Standardizer.fit(X[:, :2]))), "step 0 (Standardizer) "
                                                                       "gives 4 columns"),
    (lambda: Columns.fit(_table(), {"weight": Standardizer}), "the table has no column 'weight'"),
    (lambda: Columns((Column("a", Standardizer.fit(X), True),)), "comes as one column"),
    (lambda: Columns.fit(_table(), {"age": Standardizer})({"age": X}), "was fitted 1-D"),
])
def test_refusals_name_the_step_and_what_came(make, message):
    with pytest.raises(PreparationError) as refused:
        make()
    assert message in str(refused.value)
