"""Time two trainers side by side: alternate rounds, report each one's best and median.

The machine is shared, so the slower rounds measure the neighbours; alternating the frameworks
round by round lets both see the same conditions. Each trainer factory returns a function that
trains one round of `steps` optimisation steps.
"""

from __future__ import annotations

import statistics
import time

ROUNDS = 7


def side_by_side(name: str, ours, theirs, steps: int, rounds: int = ROUNDS) -> list[dict]:
    """Alternate the two trainers `rounds` times (after one warm-up round each)."""
    trainers = {"deepsharp": ours(), "pytorch": theirs()}
    for train in trainers.values():
        train()  # warm up (allocations, BLAS threads)
    times: dict[str, list[float]] = {label: [] for label in trainers}
    for _ in range(rounds):
        for label, train in trainers.items():
            started = time.perf_counter()
            train()
            times[label].append(time.perf_counter() - started)
    rows = [{"benchmark": name, "framework": label, "seconds_per_step": min(t) / steps,
             "steps_per_second": steps / min(t),
             "median_steps_per_second": steps / statistics.median(t)}
            for label, t in times.items()]
    best = rows[0]["steps_per_second"] / rows[1]["steps_per_second"]
    median = rows[0]["median_steps_per_second"] / rows[1]["median_steps_per_second"]
    for row in rows:
        row["ratio_to_pytorch"] = best if row["framework"] == "deepsharp" else 1.0
        row["median_ratio_to_pytorch"] = median if row["framework"] == "deepsharp" else 1.0
    return rows


def report(name: str, ours, theirs, steps: int, rounds: int = ROUNDS) -> list[dict]:
    """`side_by_side`, printed as a table: each benchmark's `main`."""
    rows = side_by_side(name, ours, theirs, steps, rounds)
    print_table(rows)
    return rows


def torch_ready():
    """torch on 2 threads (as numpy's BLAS here), seeded: the same start for every run."""
    import torch

    torch.set_num_threads(2)
    torch.manual_seed(0)
    return torch


def print_table(rows: list[dict]) -> None:
    print(f"{'benchmark':<14}{'framework':<11}{'ms/step':>9}{'steps/s':>10}{'median':>9}"
          f"{'ratio':>8}{'median ratio':>14}")
    for row in rows:
        print(f"{row['benchmark']:<14}{row['framework']:<11}{row['seconds_per_step'] * 1e3:>9.2f}"
              f"{row['steps_per_second']:>10.1f}{row['median_steps_per_second']:>9.1f}"
              f"{row['ratio_to_pytorch']:>8.2f}{row['median_ratio_to_pytorch']:>14.2f}")


def deepsharp_trainer(network, loss, x, y, batch: int, lr: float = 1e-3):
    """One epoch of `network.fit` (Adam, a new order each epoch: the path a user takes)."""
    from deepsharp import Adam

    optimizer = Adam(lr)
    seeds = iter(range(1_000_000))

    def epoch() -> float:
        history = network.fit(x, y, loss=loss, optimizer=optimizer, batch_size=batch,
                              seed=next(seeds), progress=False)
        return history[-1]["loss"]

    return epoch


def torch_trainer(model, loss_fn, x, y, batch: int, lr: float = 1e-3):
    """One epoch of PyTorch's usual loop (Adam, a new order each epoch) as a function."""
    import torch

    optimizer = torch.optim.Adam(model.parameters(), lr)
    generator = torch.Generator().manual_seed(0)

    def epoch() -> float:
        order = torch.randperm(len(x), generator=generator)
        for start in range(0, len(x), batch):
            index = order[start:start + batch]
            optimizer.zero_grad()
            loss = loss_fn(model(x[index]), y[index])
            loss.backward()
            optimizer.step()
        return float(loss.detach())

    return epoch
