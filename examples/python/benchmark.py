"""The seeds' benchmark loop: all_reduce time per size, 1 KiB to 16 MiB.
hcomm-run -n 2 python3 examples/python/benchmark.py [ITERS]"""

import os
import sys
import time

import numpy as np

import hcomm

iters = int(sys.argv[1]) if len(sys.argv) > 1 else (3 if os.environ.get("HCOMM_BENCH_QUICK") else 20)


def benchmark_op(op, sizes):
    for size in sizes:
        x = np.ones(size // 4, dtype=np.float32)
        op(x)  # warm-up
        hcomm.barrier()
        times = []
        for _ in range(iters):
            t0 = time.perf_counter()
            op(x)
            times.append(time.perf_counter() - t0)
        if hcomm.get_rank() == 0:
            print(f"{size:>10} B  {np.median(times) * 1e6:10.1f} us")


benchmark_op(lambda x: hcomm.all_reduce(x), [2**i for i in range(10, 25)])
