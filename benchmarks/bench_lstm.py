"""LSTM benchmark: 50 steps x 32 features -> LSTM 128 -> dense 1, mean squared error, Adam,
batches of 64: deepsharp and PyTorch (CPU, 2 threads) trained side by side in one run.

    .venv/bin/python benchmarks/bench_lstm.py

Each round trains one epoch of 20 batches with each framework in turn; the best round of each
is kept (the machine is shared, so the slower rounds measure the neighbours). The ratio is
deepsharp's steps per second over PyTorch's: 1.0 is as fast, 0.5 half as fast.
"""

from __future__ import annotations

import numpy as np

from side_by_side import deepsharp_trainer, factories, report, torch_ready, torch_trainer

STEPS, FEATURES, UNITS, BATCH, BATCHES = 50, 32, 128, 64, 20


def _data() -> tuple[np.ndarray, np.ndarray]:
    generator = np.random.default_rng(0)
    x = generator.standard_normal((BATCH * BATCHES, STEPS, FEATURES)).astype(np.float32)
    y = (x[:, -10:, :4].sum(axis=(1, 2)) / 10).astype(np.float32)[:, None]
    return x, y


def deepsharp_epoch(threads: int = 1):
    from deepsharp import MeanSquaredError, RandomStream, Sequential, Shape

    network = Sequential().lstm(UNITS).dense(1).lower(Shape(STEPS, FEATURES), RandomStream(0))
    return deepsharp_trainer(network, MeanSquaredError(), *_data(), BATCH, threads)


def torch_epoch(best: bool = False):
    torch = torch_ready()
    x, y = (torch.from_numpy(a) for a in _data())

    class Model(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lstm = torch.nn.LSTM(FEATURES, UNITS, batch_first=True)
            self.dense = torch.nn.Linear(UNITS, 1)

        def forward(self, inputs):
            _, (h, _) = self.lstm(inputs)
            return self.dense(h[-1])

    return torch_trainer(Model(), torch.nn.MSELoss(), x, y, BATCH, best)


def main() -> list[dict]:
    return report("lstm", factories(deepsharp_epoch, torch_epoch), BATCHES)


if __name__ == "__main__":
    main()
