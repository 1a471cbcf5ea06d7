"""The CNN of issue 3, trained by deepsharp and by PyTorch side by side on this CPU.

28x28x1 -> conv 3x3 32 relu -> max pool 2 -> conv 3x3 64 relu -> max pool 2 -> flatten
-> dense 128 relu -> dense 10; batch 64, cross-entropy, Adam (lr 1e-3); float32 throughout.

Both train the same number of steps on the same random images, in alternating rounds (the
machine is shared, so each framework's best round is reported, and the median beside it).
deepsharp trains through `network.fit`, the path a user takes; PyTorch through the usual loop.

    .venv/bin/python benchmarks/bench_cnn.py
"""

from __future__ import annotations

import statistics
import time

import numpy as np

BATCH = 64
STEPS = 30
ROUNDS = 5
THREADS = 2


def _data(steps: int) -> tuple[np.ndarray, np.ndarray]:
    generator = np.random.default_rng(0)
    x = generator.standard_normal((steps * BATCH, 28, 28, 1)).astype(np.float32)
    y = generator.integers(0, 10, steps * BATCH)
    return x, y


def deepsharp_round(x: np.ndarray, y: np.ndarray) -> float:
    """Steps per second of one epoch of `fit` over x (after a warm-up step)."""
    from deepsharp import Adam, CrossEntropy, RandomStream, Sequential, Shape

    network = (Sequential().conv2d(32, 3).relu().max_pool2d(2).conv2d(64, 3).relu().max_pool2d(2)
               .flatten().dense(128).relu().dense(10)).lower(Shape(28, 28, 1), RandomStream(0))
    options = dict(loss=CrossEntropy(), batch_size=BATCH, progress=False)
    optimizer = Adam(lr=1e-3)
    network.fit(x[:BATCH], y[:BATCH], optimizer=optimizer, **options)
    started = time.perf_counter()
    network.fit(x, y, optimizer=optimizer, **options)
    return (len(x) // BATCH) / (time.perf_counter() - started)


def torch_round(x: np.ndarray, y: np.ndarray) -> float:
    import torch
    from torch import nn

    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(1, 32, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(32, 64, 3),
                          nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(1600, 128), nn.ReLU(),
                          nn.Linear(128, 10))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    loss = nn.CrossEntropyLoss()
    images = torch.from_numpy(np.ascontiguousarray(x.transpose(0, 3, 1, 2)))
    labels = torch.from_numpy(y)

    def epoch(count: int) -> None:
        order = torch.randperm(count * BATCH)
        for start in range(0, count * BATCH, BATCH):
            index = order[start:start + BATCH]
            optimizer.zero_grad()
            loss(model(images[index]), labels[index]).backward()
            optimizer.step()

    epoch(1)
    started = time.perf_counter()
    epoch(len(x) // BATCH)
    return (len(x) // BATCH) / (time.perf_counter() - started)


def main() -> list[dict]:
    import torch

    torch.set_num_threads(THREADS)
    x, y = _data(STEPS)
    rounds: dict[str, list[float]] = {"deepsharp": [], "pytorch": []}
    for _ in range(ROUNDS):
        rounds["deepsharp"].append(deepsharp_round(x, y))
        rounds["pytorch"].append(torch_round(x, y))
    rows = [{"benchmark": "cnn", "framework": name, "steps_per_second": max(values),
             "median_steps_per_second": statistics.median(values)}
            for name, values in rounds.items()]
    ratio = rows[0]["steps_per_second"] / rows[1]["steps_per_second"]
    median_ratio = rows[0]["median_steps_per_second"] / rows[1]["median_steps_per_second"]
    for row in rows:
        row["ratio_to_pytorch"] = ratio
        row["median_ratio_to_pytorch"] = median_ratio
    print(f"CNN (batch {BATCH}, {STEPS} steps x {ROUNDS} rounds, {THREADS} threads)")
    print(f"{'framework':<10} {'best steps/s':>13} {'median steps/s':>15}")
    for row in rows:
        print(f"{row['framework']:<10} {row['steps_per_second']:>13.1f} "
              f"{row['median_steps_per_second']:>15.1f}")
    print(f"deepsharp / pytorch: {ratio:.2f} (best rounds), {median_ratio:.2f} (medians)")
    return rows


if __name__ == "__main__":
    main()
