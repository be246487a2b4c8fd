"""DDP over the hcomm backend for tests/python/torch_fabric_cut.sh: trains a small MLP for STEPS
steps (~20 ms apart, so that training spans a fault), then prints the digest of the final
parameters and this rank's failover counters. With FAULT_FILE AT FOR, rank 0 loads the nftables
file FAULT_FILE AT seconds into training and deletes its table ("inet chaos") FOR seconds later.

    python3 ddp_fabric.py STEPS [FAULT_FILE AT FOR]"""

import hashlib
import subprocess
import sys
import threading
import time

import torch
import torch.distributed as dist

import hcomm.torch

steps = int(sys.argv[1])
fault = sys.argv[2:5]
torch.set_num_threads(1)
dist.init_process_group("hcomm")
rank = dist.get_rank()
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 256),
                            torch.nn.ReLU(), torch.nn.Linear(256, 8))
ddp = torch.nn.parallel.DistributedDataParallel(model)
opt = torch.optim.SGD(ddp.parameters(), lr=0.01)
gen = torch.Generator().manual_seed(100 + rank)
errors = []


def inject(path, at, length):
    try:
        time.sleep(at)
        subprocess.run(["nft", "-f", path], check=True)
        print(f"rank {rank}: fabric cut at {time.monotonic() - start:.2f} s", flush=True)
        time.sleep(length)
        subprocess.run(["nft", "delete", "table", "inet", "chaos"], check=True)
        print(f"rank {rank}: fabric back at {time.monotonic() - start:.2f} s", flush=True)
    except Exception as e:  # reported by the main thread
        errors.append(e)


dist.barrier()
start = time.monotonic()
injector = None
if fault and rank == 0:
    injector = threading.Thread(target=inject, args=(fault[0], float(fault[1]), float(fault[2])))
    injector.start()
slowest = 0.0
for step in range(steps):
    t0 = time.monotonic()
    x = torch.randn(16, 64, generator=gen)
    y = torch.randn(16, 8, generator=gen)
    opt.zero_grad()
    torch.nn.functional.mse_loss(ddp(x), y).backward()
    opt.step()
    slowest = max(slowest, time.monotonic() - t0)
    time.sleep(0.02)
took = time.monotonic() - start
if injector is not None:
    injector.join()
    if errors:
        raise errors[0]
flat = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
digest = hashlib.sha256(flat.numpy().tobytes()).hexdigest()[:16]
stats = hcomm.torch.failover_stats()
print(f"rank {rank}: {steps} steps in {took:.1f} s (slowest {slowest:.2f} s), digest {digest}, "
      f"failovers {stats['failovers']}, failbacks {stats['failbacks']}, "
      f"peers lost {stats['peers_lost']}", flush=True)
dist.barrier()
dist.destroy_process_group()
