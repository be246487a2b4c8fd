"""A rank killed mid-training (SIGKILL, rank 2 of 3): the others' next collective raises
RuntimeError naming it within HCOMM_PEER_TIMEOUT_MS + 1 s, never hangs. Run by
tests/python/torch_kill_rank.sh under hcomm-run; prints 'rank R: raised after S s: MESSAGE'."""

import os
import signal
import sys
import time

import torch
import torch.distributed as dist

import hcomm.torch  # noqa: F401

dist.init_process_group("hcomm")
rank = dist.get_rank()
model = torch.nn.Linear(64, 64)
ddp = torch.nn.parallel.DistributedDataParallel(model)
opt = torch.optim.SGD(ddp.parameters(), lr=0.01)
limit = float(os.environ.get("HCOMM_PEER_TIMEOUT_MS", "5000")) / 1000 + 1
for step in range(1000):
    if step == 20 and rank == 2:
        os.kill(os.getpid(), signal.SIGKILL)
    if step == 20:
        killed_at = time.monotonic()
    try:
        opt.zero_grad()
        ddp(torch.randn(16, 64)).sum().backward()
        opt.step()
    except RuntimeError as e:
        waited = time.monotonic() - killed_at
        print(f"rank {rank}: raised after {waited:.2f} s: {str(e).splitlines()[0][:200]}", flush=True)
        ok = "rank 2" in str(e) and waited <= limit
        os._exit(0 if ok else 1)
print(f"rank {rank}: no error after the kill", flush=True)
os._exit(1)
