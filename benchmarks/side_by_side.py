"""Time two trainers side by side: alternate rounds, keep each one's best.

The machine is shared, so the slower rounds measure the neighbours; alternating the frameworks
round by round lets both see the same conditions.
"""

from __future__ import annotations

import time

ROUNDS = 7


def side_by_side(name: str, ours, theirs, steps: int, rounds: int = ROUNDS) -> list[dict]:
    """Alternate the two trainers `rounds` times; keep each one's best epoch."""
    trainers = {"deepsharp": ours(), "pytorch": theirs()}
    for train in trainers.values():
        train()  # warm up (allocations, BLAS threads)
    best = {label: float("inf") for label in trainers}
    for _ in range(rounds):
        for label, train in trainers.items():
            started = time.perf_counter()
            train()
            best[label] = min(best[label], time.perf_counter() - started)
    rows = [{"benchmark": name, "framework": label, "seconds_per_step": seconds / steps,
             "steps_per_second": steps / seconds} for label, seconds in best.items()]
    ratio = rows[1]["seconds_per_step"] / rows[0]["seconds_per_step"]
    for row in rows:
        row["ratio_to_pytorch"] = ratio if row["framework"] == "deepsharp" else 1.0
    return rows


def print_table(rows: list[dict]) -> None:
    print(f"{'benchmark':<14}{'framework':<11}{'ms/step':>9}{'steps/s':>10}{'ratio':>8}")
    for row in rows:
        print(f"{row['benchmark']:<14}{row['framework']:<11}{row['seconds_per_step'] * 1e3:>9.2f}"
              f"{row['steps_per_second']:>10.1f}{row['ratio_to_pytorch']:>8.2f}")
