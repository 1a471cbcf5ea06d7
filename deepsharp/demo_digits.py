"""The second demonstration: handwritten digits (1,797 images of 8 x 8 pixels, ten classes).

A stratified fifth is held out; `fit` keeps the last fifth of the rest for validation
(`validation_split`), reports accuracy, macro F1 and top-2 accuracy, and a `ModelCheckpoint`
keeps the weights of the epoch with the best validation F1 (written to a file and put back at the
end). The held-out accuracy and macro F1 are printed, the graph is written and run in ONNX
Runtime, and the largest difference from `network.predict` is printed.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from deepsharp import (
    F1, Accuracy, Adam, Callback, CrossEntropy, ModelCheckpoint, RandomStream, Sequential, Shape,
    TopKAccuracy, load,
)
from deepsharp.datasets import load_digits, split
from deepsharp.metrics import Task, rows_of


class _Every(Callback):
    def __init__(self, every: int) -> None:
        self.every = every

    def on_epoch_end(self, epoch, logs, module) -> bool:
        if epoch == 0 or (epoch + 1) % self.every == 0:
            print(f"  epoch {logs['epoch']:>3}  loss {logs['loss']:.4f}  val_loss "
                  f"{logs['val_loss']:.4f}  val_accuracy {logs['val_accuracy']:.3f}  val_f1 "
                  f"{logs['val_f1']:.3f}  val_top_2_accuracy {logs['val_top_2_accuracy']:.3f}")
        return False


def run(out: Path, epochs: int = 30, seed: int = 7) -> tuple:
    """Train, report and export; returns (network, loss, held-out x) for the Runtime check."""
    data = load_digits()
    x = data.x / np.float32(16.0)  # pixel counts 0-16 as shares of full ink
    x_train, y_train, x_test, y_test = split(x, data.y, 0.2, RandomStream(seed))
    print(f"digits: {len(data.y)} images of 8 x 8 pixels, 10 classes; training on "
          f"{len(y_train)} (the last fifth of them validates), holding out {len(y_test)}")
    network = (Sequential().dense(64).relu().dropout(0.2).dense(10).softmax()
               .lower(Shape(64), RandomStream(seed)))
    loss = CrossEntropy()
    best_path = out.with_suffix(".best.ds")
    best = ModelCheckpoint(best_path, monitor="val_f1", save_best_only=True,
                           restore_best_weights=True)
    started = time.perf_counter()
    history = network.fit(x_train, y_train, loss=loss, optimizer=Adam(1e-2), epochs=epochs,
                          batch_size=32, validation_split=0.2, seed=seed, verbose=0,
                          metrics=[Accuracy(), F1(average="macro"), TopKAccuracy(k=2)],
                          callbacks=[_Every(10), best])
    print(f"trained {len(history)} epochs in {time.perf_counter() - started:.1f} s; the best "
          f"validation F1 {best.best:.3f} (epoch {best.best_epoch + 1}) was put back and kept in "
          f"{best_path.name}")
    answers = network.predict(x_test, loss)
    task = Task("multiclass", 10)
    scores = {}
    for metric in (Accuracy(), F1(average="macro")):
        kept = metric.fresh(task)
        kept.update(rows_of(task, answers, y_test))
        scores[metric.name] = kept.result()
    print(f"digits held-out accuracy: {scores['accuracy']:.3f}, macro F1: {scores['f1']:.3f} "
          f"({len(y_test)} images)")
    reloaded = load(best_path)
    same = np.array_equal(reloaded.predict(x_test, loss), answers)
    print(f"the checkpoint file answers as the restored network: {same}")
    return network, loss, x_test, same
