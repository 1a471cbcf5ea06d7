"""The CNN's first block's max, bias and relu (forward) and gradient routing (backward), numpy's
passes against the compiled four-candidate pass (deepsharp._kernels_pool.pool_of_four and
route_by_first), at one thread and in two halves at once (data_parallel(2, split="kernels")).

    .venv/bin/python benchmarks/pool_of_four.py

The candidates are the CNN benchmark's first block's (4 x 10816 x 32: batch 64, 28x28x1, conv
3x3 32, pool 2). `numpy` is the path without `compiled()` in the forward, and in the backward the
compiled routing by the candidates it had before (route_to_first_max, with numpy's relu mask);
`compiled` the new pass each way. Wall time, best of 5 x 20 calls, each after a pass over 32 MB
(the arrays out of cache, as in a step). The numbers are the same bits (tests/deepsharp/
test_compiled.py); this prints only times.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
REPEATS, CALLS = 5, 20


def _best_ms(fn) -> float:
    flush = np.ones(8 << 20, np.float32)
    best = float("inf")
    for _ in range(REPEATS):
        total = 0.0
        for _ in range(CALLS):
            np.add(flush, 1, out=flush)
            started = time.perf_counter()
            fn()
            total += time.perf_counter() - started
        best = min(best, total / CALLS)
    return best * 1e3


def main() -> None:
    sys.path.insert(0, str(HERE.parent))
    from threadpoolctl import threadpool_limits

    from deepsharp.compiled import compiled, kernel
    from deepsharp.parallel import data_parallel
    from deepsharp.tensors.ops import conv_pool
    from deepsharp.tensors.ops.two_threads import in_halves

    generator = np.random.default_rng(0)
    x = generator.standard_normal((64, 28, 28, 1)).astype(np.float32)
    w = generator.standard_normal((9, 32)).astype(np.float32)
    bias = generator.standard_normal(32).astype(np.float32)
    products = conv_pool._product(conv_pool._pool_ordered_cols(x, (3, 3), (2, 2), (13, 13)), w)
    grad = generator.standard_normal(products.shape[1:]).astype(np.float32)
    rows = len(grad)
    with compiled():
        old_route, new_route = kernel("route_to_first_max"), kernel("route_by_first")
    best, pre, _, _ = conv_pool._max_bias_relu(products, bias)
    with compiled():
        _, fused_pre, _, first = conv_pool._max_bias_relu(products, bias)

    def forward(on: bool):
        def run():
            with compiled(on):
                conv_pool._max_bias_relu(products, bias)
        return run

    def backward(on: bool):
        def run():
            g, routed = np.empty_like(grad), np.empty_like(products)
            if on:
                in_halves(lambda r: new_route(first, fused_pre, grad, g, routed, r.start, r.stop),
                          rows)
            else:
                def part(r):
                    np.multiply(grad[r], pre[r] > 0, out=g[r])
                    old_route(products, best, g, routed, r.start, r.stop)
                in_halves(part, rows)
        return run

    print(f"{'':28s}{'numpy':>8s}{'compiled':>10s}  (ms)")
    with threadpool_limits(limits=1, user_api="blas"):
        for threads, label in ((1, "one thread"), (2, "two halves at once")):
            with data_parallel(threads, split="kernels"):
                for name, make in (("forward", forward), ("backward", backward)):
                    print(f"{name + ', ' + label:28s}{_best_ms(make(False)):8.2f}"
                          f"{_best_ms(make(True)):10.2f}")


if __name__ == "__main__":
    main()
