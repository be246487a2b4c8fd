"""One rank's side of bench/python_overhead.sh: the median time of an 8-byte hcomm.all_reduce
through Python, timed per call as hcomm-bench times (warm-up, a barrier, then N calls), the
slowest rank's median printed by rank 0 in microseconds."""

import sys
import time

import numpy as np

import hcomm

iters = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
x = np.ones(2, dtype=np.float32)
for _ in range(200):
    hcomm.all_reduce(x)
hcomm.barrier()
times = np.empty(iters)
for i in range(iters):
    t0 = time.perf_counter()
    hcomm.all_reduce(x)
    times[i] = time.perf_counter() - t0
median = np.array([np.median(times) * 1e6])
hcomm.all_reduce(median, hcomm.ReduceOp.MAX)
if hcomm.get_rank() == 0:
    print(f"python_us {median[0]:.3f}")
