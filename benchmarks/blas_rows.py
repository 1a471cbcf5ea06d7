"""How numpy's OpenBLAS rounds the rows of a float32 product, the reason a compiled pass cannot
make the same numbers as `np.matmul` (benchmarks/RESULTS.md, "Not done", the CNN): a row's bits
depend on its place among OpenBLAS's blocks of 24 rows, and inside a block some tiles sum the
taps in one chain of fused multiply-adds, others in two (the even taps and the odd) added.

    .venv/bin/python benchmarks/blas_rows.py

Prints, for products of 4,800 rows x 32 columns over several numbers of taps (BLAS at 1 thread):
whether a run of rows cut out of the matrix gets the whole product's bits, by where it starts;
then, for each tile of 6 rows (by place in the block of 24) and 8 columns, the share of values
equal to each model (one chain, two chains). Needs numba (the `speed` or `bench` extra).
"""

from __future__ import annotations

import numpy as np

ROWS, COLUMNS = 4800, 32


def _models():
    from llvmlite import ir
    from numba import njit, types
    from numba.core import cgutils
    from numba.extending import intrinsic

    @intrinsic
    def fma32(typingctx, a, b, c):  # one rounding: a * b + c, as the CPU's FMA instruction
        def codegen(context, builder, signature, args):
            fn = cgutils.get_or_insert_function(
                builder.module, ir.FunctionType(ir.FloatType(), [ir.FloatType()] * 3),
                "llvm.fma.f32")
            return builder.call(fn, args)
        return types.float32(types.float32, types.float32, types.float32), codegen

    @njit
    def chains(a, b, out, count):
        """out = a @ b with the taps summed in `count` chains (tap k in chain k % count) from
        zero, the chains then added in order."""
        for i in range(a.shape[0]):
            for j in range(b.shape[1]):
                acc = np.zeros(count, np.float32)
                for k in range(a.shape[1]):
                    acc[k % count] = fma32(a[i, k], b[k, j], acc[k % count])
                total = acc[0]
                for c in range(1, count):
                    total = total + acc[c]
                out[i, j] = total

    return chains


def main() -> None:
    from threadpoolctl import threadpool_limits

    chains = _models()
    generator = np.random.default_rng(2)
    with threadpool_limits(limits=1, user_api="blas"):
        for taps in (4, 9, 10, 16, 288):
            a = generator.standard_normal((ROWS, taps)).astype(np.float32)
            b = generator.standard_normal((taps, COLUMNS)).astype(np.float32)
            whole = a @ b
            same = {start: all(np.array_equal(a[start:start + size] @ b,
                                              whole[start:start + size])
                               for size in (24, 48, 144))
                    for start in (0, 24, 144, 8, 16, 7)}
            print(f"{taps} taps: a run of rows has the whole product's bits, by its first row: "
                  + ", ".join(f"{s}: {'yes' if ok else 'no'}" for s, ok in same.items()))
            models = {}
            for count in (1, 2):
                out = np.empty_like(whole)
                chains(a, b, out, count)
                models[count] = out == whole
            print(f"  {'rows of the block':18s}" + "".join(f"  cols {c:2d}-{c + 7:2d}"
                                                      for c in range(0, COLUMNS, 8)))
            for first in range(0, 24, 6):
                rows = np.arange(ROWS) % 24 // 6 == first // 6
                cells = [" ".join(f"{models[n][rows, c:c + 8].mean():.2f}" for n in (1, 2))
                         for c in range(0, COLUMNS, 8)]
                print(f"  {first:2d}-{first + 5:2d} (1 chain, 2)" + "".join(f"  {x:>10s}"
                                                                        for x in cells))


if __name__ == "__main__":
    main()
