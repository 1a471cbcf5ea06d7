"""Write tests/fixtures/metrics_sklearn.json: random answers and targets with the values
scikit-learn's metrics give for them, the outside reference tests/deepsharp/test_metrics.py holds
deepsharp.metrics to (beside its hand-computed cases).

Run once with scikit-learn installed (in the script's own environment; the suite never imports
it): `python scripts/make_metric_fixtures.py`.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import sklearn
from sklearn import metrics as m

OUT = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "metrics_sklearn.json"


def softmax(z: np.ndarray) -> np.ndarray:
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def counted(y_true, y_pred, averages) -> dict[str, float]:
    values = {}
    for average in averages:
        for name, fn in (("precision", m.precision_score), ("recall", m.recall_score),
                         ("f1", m.f1_score)):
            values[f"{name}/{average}"] = float(fn(y_true, y_pred, average=average,
                                                   zero_division=0))
    return values


def binary_case(rng, n: int, ties: bool) -> dict:
    true = rng.integers(0, 2, n)
    p = np.clip(0.5 + 0.3 * (true - 0.5) + 0.25 * rng.standard_normal(n), 0.001, 0.999)
    if ties:
        p = np.round(p, 1)
    pred = (p > 0.5).astype(int)
    return {"task": "binary", "answers": p.tolist(), "target": true.tolist(), "values": {
        "accuracy": float(m.accuracy_score(true, pred)),
        "auc": float(m.roc_auc_score(true, p)),
        **counted(true, pred, ("binary", "micro", "macro", "weighted"))}}


def multiclass_case(rng, n: int, classes: int, absent: int | None) -> dict:
    true = rng.integers(0, classes, n)
    if absent is not None:  # a class the answers never hold (the predictions may)
        true[true == absent] = (absent + 1) % classes
    p = softmax(rng.standard_normal((n, classes)) + 1.5 * np.eye(classes)[true])
    pred = p.argmax(axis=1)
    values = {"accuracy": float(m.accuracy_score(true, pred)),
              **counted(true, pred, ("micro", "macro", "weighted"))}
    if classes == 2:  # scikit-learn takes the positive class's score alone
        values["top_1_accuracy"] = float(m.top_k_accuracy_score(true, p[:, 1], k=1))
        values["auc/macro"] = float(m.roc_auc_score(true, p[:, 1]))
        values.update(counted(true, pred, ("binary",)))
    else:
        values["top_2_accuracy"] = float(m.top_k_accuracy_score(true, p, k=2,
                                                                labels=np.arange(classes)))
    if absent is None and classes > 2:
        for average in ("macro", "weighted"):
            values[f"auc/{average}"] = float(m.roc_auc_score(true, p, multi_class="ovr",
                                                             average=average))
    return {"task": "multiclass", "classes": classes, "answers": p.tolist(),
            "target": true.tolist(), "values": values}


def multilabel_case(rng, n: int, labels: int) -> dict:
    true = rng.integers(0, 2, (n, labels))
    p = np.clip(0.5 + 0.3 * (true - 0.5) + 0.3 * rng.standard_normal((n, labels)), 0.001, 0.999)
    pred = (p > 0.5).astype(int)
    values = {"accuracy": float(m.accuracy_score(true, pred)),
              **counted(true, pred, ("micro", "macro", "weighted"))}
    for average in ("macro", "weighted", "micro"):
        values[f"auc/{average}"] = float(m.roc_auc_score(true, p, average=average))
    return {"task": "multilabel", "answers": p.tolist(), "target": true.tolist(), "values": values}


def regression_case(rng, n: int, columns: int, constant: bool) -> dict:
    y = rng.standard_normal((n, columns)) * np.arange(1, columns + 1)
    if constant:
        y[:, 0] = 2.5
    answers = y + 0.4 * rng.standard_normal((n, columns))
    return {"task": "regression", "answers": answers.tolist(), "target": y.tolist(), "values": {
        "mae": float(m.mean_absolute_error(y, answers)),
        "r2": float(m.r2_score(y, answers))}}


def main() -> None:
    rng = np.random.default_rng(20240612)
    cases = [binary_case(rng, 57, ties=False), binary_case(rng, 40, ties=True),
             multiclass_case(rng, 90, 4, absent=None), multiclass_case(rng, 60, 5, absent=3),
             multiclass_case(rng, 50, 2, absent=None),
             multilabel_case(rng, 70, 3), regression_case(rng, 45, 2, constant=False),
             regression_case(rng, 30, 3, constant=True)]
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps({"scikit-learn": sklearn.__version__, "cases": cases}, indent=1))
    print(f"wrote {OUT} ({len(cases)} cases, scikit-learn {sklearn.__version__})")


if __name__ == "__main__":
    main()
