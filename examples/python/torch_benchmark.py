"""The seeds' benchmark loop through torch.distributed: all_reduce time per size, backend
"hcomm" (or the one named: python3 torch_benchmark.py gloo). hcomm-run -n 2 python3 ..."""

import os
import sys
import time

import torch
import torch.distributed as dist

import hcomm.torch  # noqa: F401

backend = sys.argv[1] if len(sys.argv) > 1 else "hcomm"
iters = 3 if os.environ.get("HCOMM_BENCH_QUICK") else 20
dist.init_process_group(backend)


def benchmark_op(op, sizes):
    for size in sizes:
        x = torch.ones(max(1, size // 4))
        op(x)
        dist.barrier()
        times = []
        for _ in range(iters):
            t0 = time.perf_counter()
            op(x)
            times.append(time.perf_counter() - t0)
        if dist.get_rank() == 0:
            print(f"{backend} {size:>10} B  {sorted(times)[len(times) // 2] * 1e6:10.1f} us")


benchmark_op(lambda x: dist.all_reduce(x), [2**i for i in range(10, 25)])
dist.barrier()
dist.destroy_process_group()
