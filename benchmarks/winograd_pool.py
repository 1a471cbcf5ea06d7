"""The CNN's second block's Winograd runs, inside `compiled()`: the output's transform and the
pool as separate passes (numpy's transform, numpy's max, bias and relu; back, numpy's relu mask,
the compiled routing by the candidates, the compiled candidates' gradients' transform: the path
`compiled()` took before 5 December) against the fused kernels (deepsharp._kernels_pool:
winograd_output_pool, winograd_routed_grad), each with the run's products made as in a step.

    .venv/bin/python benchmarks/winograd_pool.py

One run is the benchmark CNN's: 800 tiles (32 images of 5 x 5 tiles, 13 x 13 x 32 input, 64
output channels), two runs a step. Wall time at one BLAS thread, best of 5 x 20 calls, each
after a pass over 32 MB (`pool_of_four._best_ms`). The numbers are the same bits
(tests/deepsharp/test_compiled.py, test_winograd.py); this prints only times.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent


def main() -> None:
    sys.path[:0] = [str(HERE), str(HERE.parent)]
    from pool_of_four import _best_ms
    from threadpoolctl import threadpool_limits

    from deepsharp.compiled import compiled, kernel
    from deepsharp.tensors.ops import conv_pool, winograd

    generator = np.random.default_rng(0)
    tiles, runs, channels, out_channels = 800, 2, 32, 64
    v = generator.standard_normal((16, tiles, channels)).astype(np.float32)
    u = winograd.kernel_transform(
        generator.standard_normal((3, 3, channels, out_channels)).astype(np.float32))
    bias = generator.standard_normal(out_channels).astype(np.float32)
    grad = generator.standard_normal((tiles, out_channels)).astype(np.float32)
    rows = slice(0, tiles)
    best, pre, out, pool_rows = conv_pool._pooling((tiles, out_channels), np.float32, bias)
    candidates = np.empty((4, tiles, out_channels), np.float32)
    with compiled():
        first, fused = conv_pool._winograd_pool(best, pre, out, bias)
        route, transform = kernel("route_to_first_max"), kernel("winograd_output_grad")
        fused_grads = kernel("winograd_routed_grad")
    g, routed = np.empty_like(grad), np.empty_like(candidates)

    def forward_before() -> None:
        winograd.output_transform(np.matmul(v, u), candidates)
        pool_rows(candidates, rows)

    def forward_fused() -> None:
        fused(np.matmul(v, u), rows)

    forward_before()

    def backward_before() -> None:
        np.multiply(grad, pre > 0, out=g)
        route(candidates, best, g, routed, 0, tiles)
        np.matmul(v.transpose(0, 2, 1), transform(routed, 0, tiles))

    def backward_fused() -> None:
        np.matmul(v.transpose(0, 2, 1), fused_grads(first, pre, grad, g, 0, tiles))

    print(f"one run of {tiles} tiles, with its 16 products  before   fused  (ms; x{runs} a step)")
    with threadpool_limits(limits=1, user_api="blas"):
        for name, before, after in (("forward", forward_before, forward_fused),
                                    ("backward (kernel gradient's products)", backward_before,
                                     backward_fused)):
            print(f"{name:46s}{_best_ms(before):7.3f}{_best_ms(after):8.3f}")


if __name__ == "__main__":
    main()
