"""The CNN of issue 3, trained by deepsharp and by PyTorch side by side on this CPU.

28x28x1 -> conv 3x3 32 relu -> max pool 2 -> conv 3x3 64 relu -> max pool 2 -> flatten
-> dense 128 relu -> dense 10; batch 64, cross-entropy, Adam (lr 1e-3); float32 throughout.
deepsharp trains through `network.fit`, the path a user takes; PyTorch through the usual loop
(its best variant: fused Adam and channels_last). Each round is one epoch of 30 batches of the
same random images.

    .venv/bin/python benchmarks/bench_cnn.py
"""

from __future__ import annotations

import numpy as np

from side_by_side import deepsharp_trainer, factories, report, torch_ready, torch_trainer

BATCH, BATCHES = 64, 30


def _data() -> tuple[np.ndarray, np.ndarray]:
    generator = np.random.default_rng(0)
    x = generator.standard_normal((BATCHES * BATCH, 28, 28, 1)).astype(np.float32)
    return x, generator.integers(0, 10, BATCHES * BATCH)


def deepsharp_epoch(threads: int = 1):
    from deepsharp import CrossEntropy, RandomStream, Sequential, Shape

    network = (Sequential().conv2d(32, 3).relu().max_pool2d(2).conv2d(64, 3).relu().max_pool2d(2)
               .flatten().dense(128).relu().dense(10)).lower(Shape(28, 28, 1), RandomStream(0))
    # two threads: the conv blocks' own work split in two (the numbers of one thread)
    return deepsharp_trainer(network, CrossEntropy(), *_data(), BATCH, threads, split="kernels")


def torch_epoch(best: bool = False):
    torch = torch_ready(None)
    nn = torch.nn
    x, y = _data()
    model = nn.Sequential(nn.Conv2d(1, 32, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(32, 64, 3),
                          nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(1600, 128), nn.ReLU(),
                          nn.Linear(128, 10))
    images = torch.from_numpy(np.ascontiguousarray(x.transpose(0, 3, 1, 2)))
    if best:  # PyTorch's fastest layout on the CPU
        model = model.to(memory_format=torch.channels_last)
        images = images.contiguous(memory_format=torch.channels_last)
    return torch_trainer(model, nn.CrossEntropyLoss(), images, torch.from_numpy(y), BATCH, best)


def main() -> list[dict]:
    return report("cnn", factories(deepsharp_epoch, torch_epoch), BATCHES)


if __name__ == "__main__":
    main()
