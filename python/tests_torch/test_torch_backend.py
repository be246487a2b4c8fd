"""The torch.distributed backend "hcomm", as every rank of a job (hcomm-run -n N python3 -m
pytest python/tests_torch): every operation x dtype against values each rank computes from all
ranks' inputs, sub-groups, and DDP against gloo on the same data."""

import os

import pytest
import torch
import torch.distributed as dist

import hcomm.torch  # noqa: F401 - registers the backend

DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int32, torch.int64,
          torch.int8, torch.uint8]


@pytest.fixture(scope="session", autouse=True)
def group():
    dist.init_process_group("hcomm")
    yield
    dist.barrier()
    dist.destroy_process_group()


def value(rank, n, dtype):
    v = (torch.arange(n) * 3 + rank * 7) % 11
    if dtype != torch.uint8:
        v = v - 5
    return v.to(dtype)


def world():
    return dist.get_rank(), dist.get_world_size()


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", ["SUM", "MIN", "MAX", "PRODUCT", "AVG"])
def test_all_reduce(dtype, op):
    rank, size = world()
    if op == "AVG" and not dtype.is_floating_point:
        pytest.skip("integer AVG truncates; covered by the C++ tests")
    n = 1001
    stack = torch.stack([value(r, n, dtype).double() for r in range(size)])
    if op == "PRODUCT":
        stack = torch.where(stack == 0, torch.ones_like(stack), stack.sign())
    want = {"SUM": stack.sum(0), "MIN": stack.min(0).values, "MAX": stack.max(0).values,
            "PRODUCT": stack.prod(0), "AVG": stack.mean(0)}[op]
    mine = stack[rank].to(dtype)
    dist.all_reduce(mine, op=getattr(dist.ReduceOp, op))
    tol = 1e-2 if dtype in (torch.float16, torch.bfloat16) and op == "AVG" else 0
    assert torch.allclose(mine.double(), want.to(dtype).double(), atol=tol, rtol=tol), op


@pytest.mark.parametrize("dtype", DTYPES)
def test_data_movement(dtype):
    rank, size = world()
    n = 37
    t = value(rank, n, dtype) if rank == 1 % size else torch.zeros(n, dtype=dtype)
    dist.broadcast(t, src=1 % size)
    assert torch.equal(t, value(1 % size, n, dtype))
    outs = [torch.empty(n, dtype=dtype) for _ in range(size)]
    dist.all_gather(outs, value(rank, n, dtype))
    for r in range(size):
        assert torch.equal(outs[r], value(r, n, dtype))
    flat = torch.empty(size * n, dtype=dtype)
    dist.all_gather_into_tensor(flat, value(rank, n, dtype))  # gloo 1.13 cannot
    assert torch.equal(flat, torch.cat([value(r, n, dtype) for r in range(size)]))
    got = [torch.empty(n, dtype=dtype) for _ in range(size)] if rank == 0 else None
    dist.gather(value(rank, n, dtype), got, dst=0)
    if rank == 0:
        for r in range(size):
            assert torch.equal(got[r], value(r, n, dtype))
    block = torch.empty(n, dtype=dtype)
    dist.scatter(block, [value(r, n, dtype) for r in range(size)] if rank == 0 else None, src=0)
    assert torch.equal(block, value(rank, n, dtype))


@pytest.mark.parametrize("dtype", DTYPES)
def test_reductions_to_blocks(dtype):
    rank, size = world()
    n = 5
    full = sum(value(r, n * size, dtype).double() for r in range(size))
    out = torch.empty(n, dtype=dtype)
    dist.reduce_scatter(out, list(value(rank, n * size, dtype).chunk(size)))
    assert torch.equal(out, full[rank * n:(rank + 1) * n].to(dtype))
    out2 = torch.empty(n, dtype=dtype)
    dist.reduce_scatter_tensor(out2, value(rank, n * size, dtype))
    assert torch.equal(out2, out)
    t = value(rank, n, dtype)
    dist.reduce(t, dst=0)
    if rank == 0:
        assert torch.equal(t, sum(value(r, n, dtype).double() for r in range(size)).to(dtype))


@pytest.mark.parametrize("dtype", DTYPES)
def test_all_to_all_every_dtype(dtype):
    rank, size = world()
    inp = value(rank, size * 3, dtype)
    out = torch.empty_like(inp)
    dist.all_to_all_single(out, inp)
    for r in range(size):
        assert torch.equal(out[3 * r:3 * r + 3], value(r, size * 3, dtype)[3 * rank:3 * rank + 3])


@pytest.mark.parametrize("op, want", [("SUM", "any"), ("MAX", "any"), ("PRODUCT", "all"),
                                      ("MIN", "all")])
def test_bool_reductions(op, want):
    rank, size = world()
    mine = torch.tensor([rank == 0, True, False, rank % 2 == 1])
    stack = torch.stack([torch.tensor([r == 0, True, False, r % 2 == 1]) for r in range(size)])
    dist.all_reduce(mine, op=getattr(dist.ReduceOp, op))
    expected = stack.any(0) if want == "any" else stack.all(0)
    assert torch.equal(mine, expected)
    assert mine.view(torch.uint8).max() <= 1  # a byte sum would leave 2s in a bool


def test_all_to_all():
    rank, size = world()
    inp = torch.arange(size * 2, dtype=torch.float32) + 100 * rank
    out = torch.empty_like(inp)
    dist.all_to_all_single(out, inp)
    for r in range(size):
        assert torch.equal(out[2 * r:2 * r + 2], torch.arange(2 * rank, 2 * rank + 2) + 100.0 * r)
    # uneven splits: rank r sends r + 1 rows to everyone
    rows = [rank + 1] * size
    inp = torch.full((sum(rows), 3), float(rank))
    out = torch.empty((sum(r + 1 for r in range(size)), 3))
    dist.all_to_all_single(out, inp, [r + 1 for r in range(size)], rows)
    at = 0
    for r in range(size):
        assert (out[at:at + r + 1] == r).all()
        at += r + 1
    outs = [torch.empty(2) for _ in range(size)]
    dist.all_to_all(outs, [torch.full((2,), float(rank * 10 + d)) for d in range(size)])
    for r in range(size):
        assert torch.equal(outs[r], torch.full((2,), float(r * 10 + rank)))


def test_send_recv_and_async_work():
    rank, size = world()
    if size < 2:
        pytest.skip("one rank")
    nxt, prv = (rank + 1) % size, (rank - 1) % size
    inbox = torch.empty(8)
    w = dist.irecv(inbox, src=prv)
    dist.send(torch.full((8,), float(rank)), dst=nxt)
    w.wait()
    assert torch.equal(inbox, torch.full((8,), float(prv)))
    t = torch.ones(4)
    fut = dist.all_reduce(t, async_op=True).get_future()
    assert torch.equal(fut.wait()[0], torch.full((4,), float(size)))


def test_recv_from_any_source():
    rank, size = world()
    if size < 2:
        pytest.skip("one rank")
    if rank == 0:
        got = set()
        for _ in range(size - 1):
            t = torch.empty(3)
            src = dist.recv(t)  # no src: ProcessGroup::recvAnysource
            assert torch.equal(t, torch.full((3,), float(src)))
            got.add(src)
        assert got == set(range(1, size))
    else:
        dist.send(torch.full((3,), float(rank)), dst=0)
    dist.barrier()


def test_new_group_and_bf16():
    rank, size = world()
    g = dist.new_group(list(range(0, size, 2)))
    if rank % 2 == 0:
        t = torch.ones(3, dtype=torch.bfloat16)
        dist.all_reduce(t, group=g)
        assert torch.equal(t, torch.full((3,), float((size + 1) // 2), dtype=torch.bfloat16))
    dist.barrier()


def _train(group, seed_data, steps, dtype=torch.float32):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(),
                                torch.nn.Linear(32, 4)).to(dtype)
    ddp = torch.nn.parallel.DistributedDataParallel(model, process_group=group)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.05)
    gen = torch.Generator().manual_seed(seed_data + dist.get_rank())
    for _ in range(steps):
        x = torch.randn(8, 16, generator=gen).to(dtype)
        y = torch.randn(8, 4, generator=gen).to(dtype)
        opt.zero_grad()
        torch.nn.functional.mse_loss(ddp(x).float(), y.float()).backward()
        opt.step()
    return [p.detach().clone() for p in model.parameters()]


def test_ddp_matches_gloo():
    rank, size = world()
    gloo = dist.new_group(backend="gloo")
    ours = _train(None, 1, 50)
    theirs = _train(gloo, 1, 50)
    for a, b in zip(ours, theirs):
        if size == 2:
            assert torch.equal(a, b)  # bitwise: both add the two ranks' gradients once
        else:
            assert torch.allclose(a, b, rtol=1e-6, atol=1e-7)


def test_ddp_bfloat16():
    params = _train(None, 2, 5, torch.bfloat16)  # gloo 1.13: "Invalid scalar type"
    assert all(torch.isfinite(p.float()).all() for p in params)


def test_compression_per_group():
    rank, size = world()
    hcomm.torch.set_compression("fp16")
    t = torch.linspace(0, 1, 4096) + rank
    dist.all_reduce(t)
    want = torch.linspace(0, 1, 4096) * size + size * (size - 1) / 2
    assert torch.allclose(t, want, rtol=size * 2.0 ** -10, atol=size * 2.0 ** -10)
    hcomm.torch.set_compression("none")


@pytest.mark.parametrize("dtype", [torch.int8, torch.uint8, torch.int32, torch.int64, torch.bool])
@pytest.mark.parametrize("op", ["BAND", "BOR", "BXOR"])
def test_bitwise(dtype, op):
    rank, size = world()
    gen = torch.Generator().manual_seed(42)
    bits = [torch.randint(0, 256, (999,), generator=gen, dtype=torch.int64) for _ in range(size)]
    fold = {"BAND": torch.bitwise_and, "BOR": torch.bitwise_or, "BXOR": torch.bitwise_xor}[op]
    want = bits[0].to(dtype)
    for b in bits[1:]:
        want = fold(want, b.to(dtype))
    mine = bits[rank].to(dtype)
    dist.all_reduce(mine, op=getattr(dist.ReduceOp, op))
    assert torch.equal(mine, want)


def test_bitwise_refuses_floats():
    with pytest.raises(RuntimeError, match="integer types only"):
        dist.all_reduce(torch.ones(4), op=dist.ReduceOp.BXOR)
    dist.barrier()


@pytest.mark.filterwarnings("ignore:torch.distributed.all_gather_coalesced")
def test_all_gather_coalesced():
    rank, size = world()
    inputs = [torch.full((2, 2), float(rank)), torch.tensor([rank * 10.0]), torch.arange(3.0) + rank]
    outputs = [[torch.empty_like(t) for t in inputs] for _ in range(size)]
    dist.all_gather_coalesced(outputs, inputs)
    for r in range(size):
        assert torch.equal(outputs[r][0], torch.full((2, 2), float(r)))
        assert torch.equal(outputs[r][1], torch.tensor([r * 10.0]))
        assert torch.equal(outputs[r][2], torch.arange(3.0) + r)


def test_wait_honours_its_timeout():
    import datetime
    import time
    rank, size = world()
    if size < 2:
        pytest.skip("one rank")
    if rank == 0:
        inbox = torch.zeros(4)
        w = dist.irecv(inbox, src=1, tag=77)
        start = time.monotonic()
        with pytest.raises(RuntimeError, match="did not complete within 200 ms"):
            w.wait(datetime.timedelta(milliseconds=200))
        took = time.monotonic() - start
        assert 0.19 < took < 1.5, took
    dist.barrier()
    if rank == 1:
        dist.send(torch.full((4,), 5.0), dst=0, tag=77)
    if rank == 0:
        w.wait()  # the receive went on: it completes once the message comes
        assert torch.equal(inbox, torch.full((4,), 5.0))
    dist.barrier()


def test_qos_and_failover_stats():
    hcomm.torch.set_qos(min_rate=30, max_rate=90, priority=2)
    t = torch.ones(1000)
    dist.all_reduce(t)
    assert torch.equal(t, torch.full((1000,), float(dist.get_world_size())))
    with pytest.raises(RuntimeError, match="min"):
        hcomm.torch.set_qos(min_rate=200)
    hcomm.torch.set_qos()
    stats = hcomm.torch.failover_stats()
    assert stats["failovers"] == 0 and stats["peers_lost"] == 0 and "events" in stats
    with pytest.raises(RuntimeError, match="not an hcomm process group"):
        hcomm.torch.failover_stats(dist.new_group(backend="gloo"))
