"""What numba's own parallel loops (`parallel=True`, `prange`, numba's thread pool) would give
the kernel split of `data_parallel(2, split="kernels")`, against its Python worker thread (wall
time, best of several rounds, microseconds a call):

1. one elementwise pass over 400k float32 values (a few operations a value, about the size of the
   CNN's largest pooling and routing passes) as a plain loop and as a `prange`, alone and right
   after a 512 x 512 product by numpy's BLAS at one and at two threads;
2. the benchmarks' products split in two row ranges (at a multiple of 144 rows, as
   `conv_pool._product` splits) at one BLAS thread: whole, by deepsharp's worker thread
   (`two_threads.on_worker`), and by a `prange` whose two halves call numpy's own cblas_sgemm
   (`deepsharp._blas`), with whether each gives the whole product's bits;
3. what a hand-off costs after 2 ms of the caller's own work: an empty job on the worker thread,
   and a `prange` region over 64 values;
4. the 2304 x 288 x 64 product split by the worker thread right after a numba region, against
   alone (numba's idle worker spins between regions, on the core the worker thread then needs).

    .venv/bin/python benchmarks/numba_parallel.py
    NUMBA_THREADING_LAYER=workqueue .venv/bin/python benchmarks/numba_parallel.py   # or omp

What it says: whether a second core can take half of the kernels' work through numba's thread
pool (no Python hand-off, no GIL) for less than a hand-off to the worker thread costs, and whether
that pool and OpenBLAS's (whose idle workers spin after each product at two threads) can share the
machine. deepsharp's kernels run serial loops and split through its worker thread; this is the
measurement for the choice (docs/performance.md, "Not met, and why").
"""

from __future__ import annotations

import time

import numba
import numpy as np
from numba import njit, prange
from threadpoolctl import threadpool_limits

from blas_kernels import best_seconds
from deepsharp import _blas
from deepsharp._blas import sgemm
from deepsharp.tensors.ops import two_threads

VALUES = 400_000
_ONE, _HALF, _QUARTER = np.float32(1.0), np.float32(0.5), np.float32(0.25)


@njit(nogil=True, cache=False)
def serial(a: np.ndarray, out: np.ndarray) -> None:
    for i in range(a.shape[0]):
        x = a[i]
        out[i] = x * x * _HALF + x * _QUARTER + _ONE


@njit(parallel=True, nogil=True, cache=False)
def halves(a: np.ndarray, out: np.ndarray) -> None:
    for i in prange(a.shape[0]):  # numba's pool takes a share of the range a thread
        x = a[i]
        out[i] = x * x * _HALF + x * _QUARTER + _ONE


@njit(parallel=True, nogil=True, cache=False)
def product_halves(blas: int, a: np.ndarray, b: np.ndarray, out: np.ndarray, split: int) -> None:
    for part in prange(2):  # each half by numpy's cblas_sgemm, on one of numba's two threads
        lo, hi = (0, split) if part == 0 else (split, a.shape[0])
        sgemm(blas, a[lo:hi], b, out[lo:hi])


@njit(parallel=True, nogil=True, cache=False)
def touch(x: np.ndarray) -> None:
    for i in prange(x.shape[0]):
        x[i] += _ONE


def best_us(run, repeats: int = 300, rounds: int = 5) -> float:
    """Wall time (the second core's work counts), microseconds a call, best round."""
    return best_seconds(run, repeats, rounds, time.perf_counter) * 1e6


def main() -> None:
    numba.set_num_threads(2)
    generator = np.random.default_rng(0)
    a = generator.standard_normal(VALUES, dtype=np.float32)
    out = np.empty_like(a)
    square = generator.standard_normal((512, 512), dtype=np.float32)
    product = np.empty_like(square)

    def square_product() -> None:  # the caller's own work: 2 ms of BLAS
        np.matmul(square, square, out=product)
    serial(a, out)
    halves(a, out)  # compile, and start numba's pool
    print(f"numba {numba.__version__}, threading layer {numba.threading_layer()}; "
          f"{VALUES} values a pass")
    for blas in (1, 2):
        with threadpool_limits(blas, user_api="blas"):
            alone = best_us(square_product)
            then_serial = best_us(lambda: (square_product(), serial(a, out)))
            then_halves = best_us(lambda: (square_product(), halves(a, out)))
            print(f"BLAS at {blas} thread(s): the pass alone {best_us(lambda: serial(a, out)):.0f}"
                  f" us serial, {best_us(lambda: halves(a, out)):.0f} in two halves; the product "
                  f"{alone:.0f}, then the pass serial {then_serial:.0f}, in two halves "
                  f"{then_halves:.0f}")
    blas = _blas.address()
    with threadpool_limits(1, user_api="blas"):
        if blas:
            for m, k, n in ((43264, 9, 32), (6400, 288, 64), (2304, 288, 64)):
                _split_product(generator, blas, m, k, n)
        caller = best_us(square_product, 100)
        region = best_us(lambda: (square_product(), touch(a[:64])), 100) - caller
        handoff = best_us(lambda: (square_product(),
                                   two_threads.on_worker(lambda: None).result()), 100) - caller
        print(f"after {caller:.0f} us of the caller's work: a hand-off to the worker thread and "
              f"back {handoff:.0f} us, a numba region {region:.0f} us")
        _after_region(generator, a)


def _after_region(generator, values: np.ndarray) -> None:
    a = generator.standard_normal((2304, 288), dtype=np.float32)
    b = generator.standard_normal((288, 64), dtype=np.float32)
    out = np.empty((2304, 64), np.float32)

    def on_threads() -> None:
        job = two_threads.on_worker(lambda: np.matmul(a[1152:], b, out=out[1152:]))
        np.matmul(a[:1152], b, out=out[:1152])
        job.result()

    region = best_us(lambda: touch(values[:100_000]), 200, 7)
    alone = best_us(on_threads, 200, 7)
    after = best_us(lambda: (touch(values[:100_000]), on_threads()), 200, 7)
    print(f"a product split by the worker thread: {alone:.0f} us alone, {after:.0f} right after a "
          f"numba region ({region:.0f} us)")


def _split_product(generator, blas: int, m: int, k: int, n: int) -> None:
    a = generator.standard_normal((m, k), dtype=np.float32)
    b = generator.standard_normal((k, n), dtype=np.float32)
    whole, by_thread, by_numba = (np.empty((m, n), np.float32) for _ in range(3))
    split = m // 2 // 144 * 144

    def on_threads() -> None:
        job = two_threads.on_worker(lambda: np.matmul(a[split:], b, out=by_thread[split:]))
        np.matmul(a[:split], b, out=by_thread[:split])
        job.result()

    alone = best_us(lambda: np.matmul(a, b, out=whole), 50, 7)
    threads = best_us(on_threads, 50, 7)
    numba_halves = best_us(lambda: product_halves(blas, a, b, by_numba, split), 50, 7)
    same = np.array_equal(whole, by_thread), np.array_equal(whole, by_numba)
    print(f"{m} x {k} x {n} split at {split}: whole {alone:.0f} us, worker thread {threads:.0f}, "
          f"numba {numba_halves:.0f}; the whole's bits: {same[0]}, {same[1]}")


if __name__ == "__main__":
    main()
