"""The seeds' overlap of communication and computation: an all_reduce on a Stream while Python
computes. hcomm-run -n 2 python3 examples/python/all_reduce_stream.py"""

import numpy as np

import hcomm

tensor = np.full(1 << 22, hcomm.get_rank() + 1, dtype=np.float32)
with hcomm.Stream() as stream:
    hcomm.all_reduce(tensor, stream=stream)
    busy = sum(i * i for i in range(200000))  # computation that overlaps
# leaving the block waited for the all_reduce
n = hcomm.get_world_size()
assert float(tensor[0]) == n * (n + 1) / 2
if hcomm.get_rank() == 0:
    print(f"all_reduce on a stream: {tensor[0]:.0f} on {n} ranks, computed {busy} meanwhile")
