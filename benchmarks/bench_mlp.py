"""A dense network trained by deepsharp and by PyTorch side by side on this CPU.

784 -> dense 256 relu -> dense 256 relu -> dense 10, cross-entropy, Adam, batch 128 (MNIST's
shape, random data); each round is one epoch of 40 batches.

    .venv/bin/python benchmarks/run.py mlp
"""

from __future__ import annotations

import numpy as np

from side_by_side import deepsharp_trainer, factories, report, torch_data, torch_trainer

FEATURES, CLASSES, BATCH, BATCHES = 784, 10, 128, 40


def _data() -> tuple[np.ndarray, np.ndarray]:
    generator = np.random.default_rng(0)
    x = generator.standard_normal((BATCH * BATCHES, FEATURES)).astype(np.float32)
    return x, generator.integers(0, CLASSES, BATCH * BATCHES)


def deepsharp_epoch(threads: int = 1):
    from deepsharp import CrossEntropy, RandomStream, Sequential, Shape

    network = (Sequential().dense(256).relu().dense(256).relu().dense(CLASSES)
               .lower(Shape(FEATURES), RandomStream(0)))
    return deepsharp_trainer(network, CrossEntropy(), *_data(), BATCH, threads)


def torch_epoch(best: bool = False):
    torch, x, y = torch_data(_data())
    nn = torch.nn
    model = nn.Sequential(nn.Linear(FEATURES, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(),
                          nn.Linear(256, CLASSES))
    return torch_trainer(model, nn.CrossEntropyLoss(), x, y, BATCH, best)


def main() -> list[dict]:
    return report("mlp", factories(deepsharp_epoch, torch_epoch), BATCHES)


if __name__ == "__main__":
    main()
