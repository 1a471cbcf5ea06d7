"""LSTM benchmark: 50 steps x 32 features -> LSTM 128 -> dense 1, mean squared error, Adam,
batches of 64: deepsharp and PyTorch (CPU, 2 threads) trained side by side in one run.

    .venv/bin/python benchmarks/bench_lstm.py

Each round trains one epoch of 20 batches with each framework in turn; the best round of each
is kept (the machine is shared, so the slower rounds measure the neighbours). The ratio is
deepsharp's steps per second over PyTorch's: 1.0 is as fast, 0.5 half as fast.
"""

from __future__ import annotations

import numpy as np

from side_by_side import (
    deepsharp_trainer, factories, report, series_data, torch_data, torch_recurrent, torch_trainer,
)

STEPS, FEATURES, UNITS, BATCH, BATCHES = 50, 32, 128, 64, 20


def _data() -> tuple[np.ndarray, np.ndarray]:
    return series_data(BATCH, BATCHES, STEPS, FEATURES)


def deepsharp_epoch(threads: int = 1):
    from deepsharp import MeanSquaredError, RandomStream, Sequential, Shape

    network = Sequential().lstm(UNITS).dense(1).lower(Shape(STEPS, FEATURES), RandomStream(0))
    return deepsharp_trainer(network, MeanSquaredError(), *_data(), BATCH, threads)


def torch_epoch(best: bool = False):
    torch, x, y = torch_data(_data())
    model = torch_recurrent(torch, torch.nn.LSTM(FEATURES, UNITS, batch_first=True), UNITS,
                            lambda outputs: outputs[1][0][-1])     # h_n of the last layer
    return torch_trainer(model, torch.nn.MSELoss(), x, y, BATCH, best)


def main() -> list[dict]:
    return report("lstm", factories(deepsharp_epoch, torch_epoch), BATCHES)


if __name__ == "__main__":
    main()
