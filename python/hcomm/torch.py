"""hcomm as a torch.distributed backend: `import hcomm.torch` registers backend "hcomm".

    import torch.distributed as dist, hcomm.torch
    dist.init_process_group("hcomm")      # env:// (torchrun, or MASTER_ADDR/MASTER_PORT/RANK/
                                          # WORLD_SIZE), an explicit store=, or under hcomm-run
    dist.all_reduce(t)                    # CPU tensors, every dtype incl. bfloat16 and float16
    hcomm.torch.set_compression(hcomm.CompressionType.FP16)   # per process group (default: WORLD)
    hcomm.torch.set_qos(min_rate=30, priority=2, group=pg)    # QoS class of a process group
    hcomm.torch.failover_stats()                              # failovers, failbacks, link events

Each process group (new_group() too) is one hcomm communicator, met through the group's c10d
store. hcomm's own HCOMM_* variables apply (compression, QoS, failover, transports)."""

import os

import torch.distributed as dist

from . import CompressionType, _torch
from .config import compression_type

__all__ = ["set_compression", "set_qos", "failover_stats", "fp16_compress_hook"]


def _from_hcomm_run():
    """Under hcomm-run (HCOMM_RANK/HCOMM_WORLD_SIZE/HCOMM_ROOT_ADDR) env:// finds no RANK/
    MASTER_*: derive them, with the store one port above hcomm's rendezvous."""
    if "HCOMM_RANK" in os.environ and "RANK" not in os.environ:
        os.environ.setdefault("RANK", os.environ["HCOMM_RANK"])
        os.environ.setdefault("WORLD_SIZE", os.environ.get("HCOMM_WORLD_SIZE", "1"))
        host, _, port = os.environ.get("HCOMM_ROOT_ADDR", "127.0.0.1:29500").rpartition(":")
        os.environ.setdefault("MASTER_ADDR", host or "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", str(int(port) + 1))


def _create(store, rank, size, timeout):
    return _torch.create(store, rank, size, timeout)


if "hcomm" not in getattr(dist.Backend, "_plugins", {}) and not hasattr(dist.Backend, "HCOMM"):
    dist.Backend.register_backend("hcomm", _create)
_from_hcomm_run()


def _group(group):
    return group if group is not None else dist.distributed_c10d._get_default_group()


def set_compression(kind, group=None):
    """The codec of `group`'s frames from now on (default: the default group): a
    hcomm.CompressionType or its name ("none", "fp16", "bf16", "zstd", "delta", "auto")."""
    _torch.set_compression(_group(group), int(compression_type(kind).value))


def set_qos(min_rate=0, max_rate=100, priority=0, group=None):
    """`group`'s QoS class (README "QoS"): its guaranteed and capped share of each link in %,
    and its priority 0..7. Raises RuntimeError naming the field when one is out of range."""
    _torch.set_qos(_group(group), int(min_rate), int(max_rate), int(priority))


def failover_stats(group=None):
    """`group`'s failover counters and link events (as hcomm.failover_stats())."""
    return _torch.failover_stats(_group(group))


def fp16_compress_hook(state, bucket):
    """A DDP communication hook (model.register_comm_hook(None, hcomm.torch.fp16_compress_hook))
    for the hcomm backend: the bucket is averaged with hcomm's fp16 codec on the wire between
    hosts, reduced in float32 (unlike torch's fp16_compress_hook, which casts the whole bucket
    and sums in fp16). `state` may be a process group (None: the default one)."""
    group = _group(state)
    _torch.set_compression(group, int(CompressionType.FP16.value))
    fut = dist.all_reduce(bucket.buffer(), op=dist.ReduceOp.AVG, group=group,
                          async_op=True).get_future()
    return fut.then(lambda f: f.value()[0])
