"""A dense network trained by deepsharp and by PyTorch side by side on this CPU.

14 -> dense 256 relu -> dense 256 relu -> dense 1, binary cross-entropy, Adam, batch 128;
each round is one epoch of 40 batches.

    .venv/bin/python benchmarks/bench_mlp.py
"""

from __future__ import annotations

import numpy as np

from side_by_side import deepsharp_trainer, report, torch_ready, torch_trainer

BATCH, BATCHES = 128, 40


def _data() -> tuple[np.ndarray, np.ndarray]:
    generator = np.random.default_rng(0)
    x = generator.standard_normal((BATCH * BATCHES, 14)).astype(np.float32)
    return x, (x[:, :3].sum(axis=1, keepdims=True) > 0).astype(np.float32)


def deepsharp_epoch():
    from deepsharp import BinaryCrossEntropy, RandomStream, Sequential, Shape

    network = (Sequential().dense(256).relu().dense(256).relu().dense(1)
               .lower(Shape(14), RandomStream(0)))
    return deepsharp_trainer(network, BinaryCrossEntropy(), *_data(), BATCH)


def torch_epoch():
    torch = torch_ready()
    x, y = (torch.from_numpy(a) for a in _data())
    model = torch.nn.Sequential(torch.nn.Linear(14, 256), torch.nn.ReLU(), torch.nn.Linear(256, 256),
                                torch.nn.ReLU(), torch.nn.Linear(256, 1))
    return torch_trainer(model, torch.nn.functional.binary_cross_entropy_with_logits, x, y, BATCH)


def main() -> list[dict]:
    return report("mlp", deepsharp_epoch, torch_epoch, BATCHES)


if __name__ == "__main__":
    main()
