"""Dense network training steps: deepsharp vs PyTorch on the CPU, in one run.

14 -> dense 256 relu -> dense 256 relu -> dense 1, binary cross-entropy, Adam, batch 128.
"""

from __future__ import annotations

import time

import numpy as np


def _time(step, warmup: int = 5, seconds: float = 3.0) -> float:
    for _ in range(warmup):
        step()
    count, started = 0, time.perf_counter()
    while time.perf_counter() - started < seconds:
        step()
        count += 1
    return count / (time.perf_counter() - started)


def main() -> list[dict]:
    import torch

    from deepsharp import Adam, BinaryCrossEntropy, RandomStream, Sequential, Shape, Tensor

    torch.set_num_threads(2)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((128, 14)).astype(np.float32)
    y = (rng.random((128, 1)) > 0.5).astype(np.float32)

    network = Sequential().dense(256).relu().dense(256).relu().dense(1).lower(Shape(14), RandomStream(0))
    loss, optimizer = BinaryCrossEntropy(), Adam(1e-3)
    optimizer.bind(network.trainable_parameters())

    def ours():
        value = loss(network.logits(Tensor(x), loss), y)
        optimizer.zero_grad()
        value.backward()
        optimizer.step()

    model = torch.nn.Sequential(torch.nn.Linear(14, 256), torch.nn.ReLU(), torch.nn.Linear(256, 256),
                                torch.nn.ReLU(), torch.nn.Linear(256, 1))
    topt = torch.optim.Adam(model.parameters(), 1e-3)
    tx, ty = torch.from_numpy(x), torch.from_numpy(y)

    def theirs():
        topt.zero_grad()
        torch.nn.functional.binary_cross_entropy_with_logits(model(tx), ty).backward()
        topt.step()

    a, b = _time(ours), _time(theirs)
    print(f"mlp training steps/s: deepsharp {a:.0f}, torch {b:.0f}, ratio {a / b:.2f}")
    return [{"benchmark": "mlp", "deepsharp_steps_s": a, "torch_steps_s": b, "ratio": a / b}]
