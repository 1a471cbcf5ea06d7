"""Bidirectional GRU benchmark: 50 steps x 32 features -> bidirectional GRU 64 (last states of
both directions) -> dense 1, mean squared error, Adam, batches of 64: deepsharp and PyTorch side
by side in one run; each round is one epoch of 20 batches.

    .venv/bin/python benchmarks/run.py gru
"""

from __future__ import annotations

import numpy as np

from side_by_side import deepsharp_trainer, factories, report, torch_ready, torch_trainer

STEPS, FEATURES, UNITS, BATCH, BATCHES = 50, 32, 64, 64, 20


def _data() -> tuple[np.ndarray, np.ndarray]:
    generator = np.random.default_rng(0)
    x = generator.standard_normal((BATCH * BATCHES, STEPS, FEATURES)).astype(np.float32)
    y = (x[:, -10:, :4].sum(axis=(1, 2)) / 10).astype(np.float32)[:, None]
    return x, y


def deepsharp_epoch(threads: int = 1):
    from deepsharp import MeanSquaredError, RandomStream, Sequential, Shape

    network = (Sequential().gru(UNITS, bidirectional=True).dense(1)
               .lower(Shape(STEPS, FEATURES), RandomStream(0)))
    return deepsharp_trainer(network, MeanSquaredError(), *_data(), BATCH, threads)


def torch_epoch(best: bool = False):
    torch = torch_ready()
    x, y = (torch.from_numpy(a) for a in _data())

    class Model(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.gru = torch.nn.GRU(FEATURES, UNITS, batch_first=True, bidirectional=True)
            self.dense = torch.nn.Linear(2 * UNITS, 1)

        def forward(self, inputs):
            _, h = self.gru(inputs)                 # (2, batch, units): forward, backward
            return self.dense(torch.cat([h[0], h[1]], dim=1))

    return torch_trainer(Model(), torch.nn.MSELoss(), x, y, BATCH, best)


def main() -> list[dict]:
    return report("gru", factories(deepsharp_epoch, torch_epoch), BATCHES)


if __name__ == "__main__":
    main()
