"""A small model trained with DistributedDataParallel over the "hcomm" backend.
hcomm-run -n 2 python3 examples/python/ddp_train.py   (or torchrun, see README "Python")"""

import torch
import torch.distributed as dist

import hcomm.torch  # noqa: F401 - registers backend "hcomm"

dist.init_process_group("hcomm")
rank = dist.get_rank()
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1))
ddp = torch.nn.parallel.DistributedDataParallel(model)
opt = torch.optim.SGD(ddp.parameters(), lr=0.05)
gen = torch.Generator().manual_seed(100 + rank)
w = torch.randn(32, 1, generator=torch.Generator().manual_seed(7))
for step in range(50):
    x = torch.randn(64, 32, generator=gen)
    loss = torch.nn.functional.mse_loss(ddp(x), x @ w)
    opt.zero_grad()
    loss.backward()
    opt.step()
# every rank holds the same parameters
flat = torch.cat([p.detach().view(-1) for p in model.parameters()])
copies = [torch.empty_like(flat) for _ in range(dist.get_world_size())]
dist.all_gather(copies, flat)
assert all(torch.equal(c, flat) for c in copies)
if rank == 0:
    print(f"DDP over hcomm: 50 steps, final loss {loss.item():.4f}, parameters equal on all ranks")
dist.barrier()
dist.destroy_process_group()
