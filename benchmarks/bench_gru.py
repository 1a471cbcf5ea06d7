"""Bidirectional GRU benchmark: 50 steps x 32 features -> bidirectional GRU 64 (last states of
both directions) -> dense 1, mean squared error, Adam, batches of 64: deepsharp and PyTorch side
by side in one run; each round is one epoch of 20 batches.

    .venv/bin/python benchmarks/run.py gru
"""

from __future__ import annotations

import numpy as np

from side_by_side import (
    deepsharp_trainer, factories, report, series_data, torch_data, torch_recurrent, torch_trainer,
)

STEPS, FEATURES, UNITS, BATCH, BATCHES = 50, 32, 64, 64, 20


def _data() -> tuple[np.ndarray, np.ndarray]:
    return series_data(BATCH, BATCHES, STEPS, FEATURES)


def deepsharp_epoch(threads: int = 1):
    from deepsharp import MeanSquaredError, RandomStream, Sequential, Shape

    network = (Sequential().gru(UNITS, bidirectional=True).dense(1)
               .lower(Shape(STEPS, FEATURES), RandomStream(0)))
    return deepsharp_trainer(network, MeanSquaredError(), *_data(), BATCH, threads)


def torch_epoch(best: bool = False):
    torch, x, y = torch_data(_data())
    gru = torch.nn.GRU(FEATURES, UNITS, batch_first=True, bidirectional=True)
    model = torch_recurrent(torch, gru, 2 * UNITS,   # h_n (2, batch, units): both directions
                            lambda outputs: torch.cat([outputs[1][0], outputs[1][1]], dim=1))
    return torch_trainer(model, torch.nn.MSELoss(), x, y, BATCH, best)


def main() -> list[dict]:
    return report("gru", factories(deepsharp_epoch, torch_epoch), BATCHES)


if __name__ == "__main__":
    main()
