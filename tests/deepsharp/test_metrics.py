"""Every metric held to scikit-learn's definition: small cases worked out by hand (the working in
the comments), random cases against the values scikit-learn gave (tests/fixtures/
metrics_sklearn.json, made by scripts/make_metric_fixtures.py), batches accumulated as one, and
the refusals."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from deepsharp import Adam, BinaryCrossEntropy, CrossEntropy, RandomStream, Sequential, Shape
from deepsharp.errors import SpecError, TargetError
from deepsharp.metrics import (
    AUC, F1, MAE, R2, Accuracy, Precision, Recall, Task, TopKAccuracy, metrics_of, rows_of,
)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "metrics_sklearn.json"
BINARY, MULTILABEL, REGRESSION = Task("binary", 1), Task("multilabel", 2), Task("regression", 1)
THREE = Task("multiclass", 3)


def score(metric, task, answers, target, batches: int = 1) -> float:
    m = metric.fresh(task)
    answers, target = np.asarray(answers, np.float64), np.asarray(target)
    for part in np.array_split(np.arange(len(answers)), batches):
        m.update(rows_of(task, answers[part], target[part]))
    return m.result()


# binary: true 1 0 1 1 0 0, p .9 .4 .35 .8 .6 .7 -> predicted 1 0 0 1 1 1
# label 1: tp 2 (rows 0, 3), fp 2 (rows 4, 5), fn 1 (row 2); label 0: tp 1, fp 1, fn 2
P_BIN = np.array([[0.9], [0.4], [0.35], [0.8], [0.6], [0.7]])
Y_BIN = np.array([1, 0, 1, 1, 0, 0], np.float32)

# three classes, true 0 1 2 2 1; predicted 0 2 2 0 1
# class 0: tp 1 fp 1 fn 0 (P 1/2, R 1, F 2/3); class 1: tp 1 fp 0 fn 1 (P 1, R 1/2, F 2/3);
# class 2: tp 1 fp 1 fn 1 (P 1/2, R 1/2, F 1/2); supports 1, 2, 2
P_THREE = np.array([[0.7, 0.2, 0.1], [0.1, 0.3, 0.6], [0.2, 0.2, 0.6], [0.5, 0.4, 0.1],
                    [0.3, 0.6, 0.1]])
Y_THREE = np.array([0, 1, 2, 2, 1])

HAND = [
    (Accuracy(), BINARY, P_BIN, Y_BIN, 3 / 6),
    (Precision(), BINARY, P_BIN, Y_BIN, 2 / 4),
    (Recall(), BINARY, P_BIN, Y_BIN, 2 / 3),
    (F1(), BINARY, P_BIN, Y_BIN, 4 / 7),                    # 2 tp / (2 tp + fp + fn)
    (Precision("macro"), BINARY, P_BIN, Y_BIN, (1 / 2 + 2 / 4) / 2),
    (Recall("macro"), BINARY, P_BIN, Y_BIN, (1 / 3 + 2 / 3) / 2),
    (F1("macro"), BINARY, P_BIN, Y_BIN, (2 / 5 + 4 / 7) / 2),
    (F1("micro"), BINARY, P_BIN, Y_BIN, 3 / 6),
    # positives .9 .35 .8 against negatives .4 .6 .7: .9 and .8 beat all three -> 6 of 9 pairs
    (AUC(), BINARY, P_BIN, Y_BIN, 6 / 9),
    (TopKAccuracy(k=1), BINARY, P_BIN, Y_BIN, 3 / 6),
    (Accuracy(), THREE, P_THREE, Y_THREE, 3 / 5),
    # the top two hold the class in rows 0, 1, 2, 4 (row 3's class 2 is third)
    (TopKAccuracy(k=2), THREE, P_THREE, Y_THREE, 4 / 5),
    (Precision("macro"), THREE, P_THREE, Y_THREE, (1 / 2 + 1 + 1 / 2) / 3),
    (Recall("macro"), THREE, P_THREE, Y_THREE, (1 + 1 / 2 + 1 / 2) / 3),
    (F1("macro"), THREE, P_THREE, Y_THREE, (2 / 3 + 2 / 3 + 1 / 2) / 3),
    (Precision("weighted"), THREE, P_THREE, Y_THREE, (1 / 2 * 1 + 1 * 2 + 1 / 2 * 2) / 5),
    (F1("weighted"), THREE, P_THREE, Y_THREE, (2 / 3 * 1 + 2 / 3 * 2 + 1 / 2 * 2) / 5),
    (Precision("micro"), THREE, P_THREE, Y_THREE, 3 / 5),
    # one against the rest: class 0 1; class 1 (.3 beats .2 .2, .6 beats all) 5/6; class 2
    # (.6 beats .1 .1 and ties .6; .1 ties .1 twice) 3.5/6
    (AUC("macro"), THREE, P_THREE, Y_THREE, (1 + 5 / 6 + 7 / 12) / 3),
    (AUC("weighted"), THREE, P_THREE, Y_THREE, (1 * 1 + 5 / 6 * 2 + 7 / 12 * 2) / 5),
    # multi-label: true [1 0] [1 1] [0 0], predicted [1 1] [1 0] [0 0]: only row 2 all right;
    # label 0 tp 2; label 1 tp 0 fp 1 fn 1
    (Accuracy(), MULTILABEL, [[0.8, 0.6], [0.7, 0.2], [0.3, 0.1]], [[1, 0], [1, 1], [0, 0]], 1 / 3),
    (F1("macro"), MULTILABEL, [[0.8, 0.6], [0.7, 0.2], [0.3, 0.1]], [[1, 0], [1, 1], [0, 0]], 1 / 2),
    (Precision("micro"), MULTILABEL, [[0.8, 0.6], [0.7, 0.2], [0.3, 0.1]], [[1, 0], [1, 1], [0, 0]],
     2 / 3),
    (Recall("weighted"), MULTILABEL, [[0.8, 0.6], [0.7, 0.2], [0.3, 0.1]], [[1, 0], [1, 1], [0, 0]],
     (1 * 2 + 0 * 1) / 3),
    # |errors| .5 0 1 1 -> .625; mean 2.5, total spread 5, residual 2.25 -> 1 - 2.25/5
    (MAE(), REGRESSION, [[1.5], [2], [2], [5]], [[1], [2], [3], [4]], 0.625),
    (R2(), REGRESSION, [[1.5], [2], [2], [5]], [[1], [2], [3], [4]], 0.55),
    # a constant column answered exactly scores 1; the other 1 - 1/2
    (R2(), Task("regression", 2), [[3, 0], [3, 1], [3, 1]], [[3, 0], [3, 1], [3, 2]], 0.75),
    (R2(), Task("regression", 2), [[3, 0], [2, 1], [3, 1]], [[3, 0], [3, 1], [3, 2]], 0.25),
]


@pytest.mark.parametrize("metric, task, answers, target, expected", HAND,
                         ids=[f"{case[0]!r}-{case[1].kind}-{i}" for i, case in enumerate(HAND)])
def test_hand_computed(metric, task, answers, target, expected):
    assert score(metric, task, answers, target) == pytest.approx(expected, abs=1e-12)
    # accumulated over batches, the value on all rows at once (not a mean of batch values)
    assert score(metric, task, answers, target, batches=3) == pytest.approx(expected, abs=1e-12)


def _from_fixture(case: dict, key: str):
    name, _, average = key.partition("/")
    kinds = {"accuracy": Accuracy, "precision": Precision, "recall": Recall, "f1": F1,
             "auc": AUC, "mae": MAE, "r2": R2}
    if name.startswith("top_"):
        return TopKAccuracy(k=int(name.split("_")[1]))
    return kinds[name](average) if average else kinds[name]()


def _fixture_cases():
    data = json.loads(FIXTURES.read_text())
    for i, case in enumerate(data["cases"]):
        for key, value in case["values"].items():
            yield pytest.param(case, key, value, id=f"{i}-{case['task']}-{key}")


@pytest.mark.parametrize("case, key, expected", list(_fixture_cases()))
def test_agrees_with_scikit_learn(case, key, expected):
    answers = np.asarray(case["answers"], np.float64)
    target = np.asarray(case["target"])
    kind = case["task"]
    if kind == "binary":
        answers, target, task = answers[:, None], target.astype(np.float32), BINARY
    elif kind == "multiclass":
        task = Task("multiclass", case["classes"])
    elif kind == "multilabel":
        task = Task("multilabel", answers.shape[1])
    else:
        task = Task("regression", answers.shape[1])
    assert score(_from_fixture(case, key), task, answers, target, batches=4) == \
        pytest.approx(expected, abs=1e-9)


def test_auc_is_nan_without_both_classes():
    assert np.isnan(score(AUC(), BINARY, [[0.2], [0.9]], np.array([1.0, 1.0])))


@pytest.mark.parametrize("metric, task, message", [
    (Precision(), THREE, "average='binary' needs two classes; this output is multiclass with 3"),
    (F1(), MULTILABEL, "average='binary' needs two classes"),
    (R2(), THREE, "metric r2: defined for regression answers; this output's loss makes them "
                  "multiclass"),
    (Accuracy(), REGRESSION, "metric accuracy: defined for binary, multilabel, multiclass"),
    (AUC("micro"), THREE, "average='micro' is for multi-label answers"),
])
def test_a_metric_refuses_a_task_it_has_no_definition_for(metric, task, message):
    with pytest.raises(SpecError, match=message.replace("(", "\\(").replace(")", "\\)")):
        metric.fresh(task)


def test_mae_refuses_class_ids():
    m = MAE().fresh(THREE)
    with pytest.raises(TargetError, match="metric mae compares answers"):
        m.update(rows_of(THREE, P_THREE, Y_THREE))


def test_names_and_refusals_of_the_metrics_argument():
    assert [m.name for m in metrics_of(["accuracy", "auc", TopKAccuracy(3), F1("macro")])] == \
        ["accuracy", "auc", "top_3_accuracy", "f1"]
    with pytest.raises(SpecError, match="metrics named twice: accuracy"):
        metrics_of(["accuracy", Accuracy()])
    with pytest.raises(SpecError, match="names among .*received 'acuracy'"):
        metrics_of(["acuracy"])
    with pytest.raises(SpecError, match="average must be one of binary, micro, macro, weighted"):
        Precision("samples")
    with pytest.raises(SpecError, match="k must be a positive integer, received True"):
        TopKAccuracy(True)


def test_fit_reports_metrics_over_the_whole_validation_set():
    """val_* metrics equal the metric of network.predict on the validation data."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((160, 5)).astype(np.float32)
    y = (x[:, 0] + 0.5 * rng.standard_normal(160) > 0).astype(np.float32)
    network = Sequential().dense(8).relu().dense(1).lower(Shape(5), RandomStream(0))
    loss = BinaryCrossEntropy()
    history = network.fit(x[:100], y[:100], loss=loss, optimizer=Adam(1e-2), epochs=3,
                          batch_size=16, validation=(x[100:], y[100:]), verbose=0,
                          metrics=["accuracy", "auc", F1(), Precision(), Recall()])
    answers = network.predict(x[100:], loss)
    for metric in (Accuracy(), AUC(), F1(), Precision(), Recall()):
        assert history[f"val_{metric.name}"][-1] == pytest.approx(
            score(metric, BINARY, answers, y[100:]), abs=1e-9)


def test_multiclass_metrics_in_fit():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((120, 4)).astype(np.float32)
    ids = np.argmax(x[:, :3], axis=1)
    network = Sequential().dense(12).relu().dense(3).softmax().lower(Shape(4), RandomStream(0))
    history = network.fit(x, ids, loss=CrossEntropy(), optimizer=Adam(3e-2), epochs=2,
                          validation=(x[:40], ids[:40]), verbose=0,
                          metrics=[TopKAccuracy(2), AUC("weighted"), F1("macro")])
    answers = network.predict(x[:40], CrossEntropy())
    assert history["val_top_2_accuracy"][-1] == score(TopKAccuracy(2), THREE, answers, ids[:40])
    assert history["val_auc"][-1] == pytest.approx(score(AUC("weighted"), THREE, answers, ids[:40]))
    with pytest.raises(SpecError, match="average='binary' needs two classes"):
        network.fit(x, ids, loss=CrossEntropy(), optimizer=Adam(), metrics=["precision"])
