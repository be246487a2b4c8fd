"""The torch.distributed side of bench/torch_vs_gloo.sh: every rank of one job runs this; backend
"hcomm" is the default group and a gloo group spans the same ranks, so both are measured side by
side in the same processes, alternating.

    python3 torch_backends.py allreduce ROUNDS   dist.all_reduce of float32, 8 B to 64 MiB
    python3 torch_backends.py ddp ROUNDS         DDP training steps of two ~10 M parameter models:
                                                 "mlp" (9.4 M, 8 samples per rank: compute-bound)
                                                 and "embedding" (an EmbeddingBag of 9.8 M with
                                                 dense gradients and a small MLP, 32 bags of 20
                                                 ids per rank: gradient-bound, as recommenders)

Within a round every (size, backend) runs once, the backend order flipping from round to round;
rank 0 prints one line per measurement ("allreduce SIZE BACKEND ROUND SECONDS", "ddp PARAMS
BACKEND ROUND SECONDS"), which the driver turns into medians and ratios."""

import sys
import time

import torch
import torch.distributed as dist

import hcomm.torch  # noqa: F401 - registers "hcomm"

torch.set_num_threads(1)  # one core per rank: the ranks share this machine's cores
dist.init_process_group("hcomm")
groups = {"hcomm": None, "gloo": dist.new_group(backend="gloo")}
rank = dist.get_rank()
mode, rounds = sys.argv[1], int(sys.argv[2])


def report(*fields):
    if rank == 0:
        print(*fields, flush=True)


def order(r):
    names = list(groups)
    return names if r % 2 == 0 else names[::-1]


def time_allreduce(x, group, iters):
    dist.all_reduce(x, group=group)  # warm-up (and the same start for every rank)
    dist.barrier(group=group)
    t0 = time.perf_counter()
    for _ in range(iters):
        dist.all_reduce(x, group=group)
    return (time.perf_counter() - t0) / iters


def allreduce():
    sizes = [8 << i for i in range(0, 24, 2)] + [64 << 20]  # 8 B, 32 B, ... 32 MiB, 64 MiB
    buffers = {s: torch.ones(s // 4) for s in sizes}
    for r in range(rounds):
        for s in sizes:
            iters = max(3, min(300, (32 << 20) // (s * 4)))
            for name in order(r):
                report("allreduce", s, name, r, time_allreduce(buffers[s], groups[name], iters))


class Embedding(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.bag = torch.nn.EmbeddingBag(98304, 100, mode="mean")
        self.head = torch.nn.Sequential(torch.nn.Linear(100, 256), torch.nn.ReLU(),
                                        torch.nn.Linear(256, 1))

    def forward(self, ids):
        return self.head(self.bag(ids))


def model(kind):
    torch.manual_seed(0)
    if kind == "embedding":
        return Embedding()
    return torch.nn.Sequential(torch.nn.Linear(1024, 4096), torch.nn.ReLU(),
                               torch.nn.Linear(4096, 1024), torch.nn.ReLU(),
                               torch.nn.Linear(1024, 1024))


def data(kind, gen):
    if kind == "embedding":
        return torch.randint(0, 98304, (32, 20), generator=gen), torch.randn(32, 1, generator=gen)
    return torch.randn(8, 1024, generator=gen), torch.randn(8, 1024, generator=gen)


def ddp():
    gen = torch.Generator().manual_seed(rank)
    for kind in ("mlp", "embedding"):
        nets = {name: torch.nn.parallel.DistributedDataParallel(model(kind), process_group=g)
                for name, g in groups.items()}
        opts = {name: torch.optim.SGD(net.parameters(), lr=1e-3) for name, net in nets.items()}
        params = sum(p.numel() for p in nets["hcomm"].parameters())
        x, y = data(kind, gen)

        def step(name):
            opts[name].zero_grad()
            torch.nn.functional.mse_loss(nets[name](x), y).backward()
            opts[name].step()

        for name in groups:  # warm-up: DDP's buckets form in the first steps
            for _ in range(3):
                step(name)
        steps = 5
        for r in range(rounds):
            for name in order(r):
                dist.barrier(group=groups[name])
                t0 = time.perf_counter()
                for _ in range(steps):
                    step(name)
                report("ddp", f"{kind}:{params}", name, r, (time.perf_counter() - t0) / steps)


{"allreduce": allreduce, "ddp": ddp}[mode]()
dist.barrier()
dist.destroy_process_group()
