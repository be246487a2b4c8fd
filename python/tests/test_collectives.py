"""Every operation x dtype x in place / out of place against numpy."""

import os

import numpy as np
import pytest

import hcomm
from conftest import DTYPES, value

COUNTS = [1, 7, 4099]


def reduced(op, size, n, dtype):
    stack = np.stack([value(r, n, dtype) for r in range(size)])
    if op == hcomm.ReduceOp.SUM:
        return stack.sum(axis=0, dtype=dtype)
    if op == hcomm.ReduceOp.MIN:
        return stack.min(axis=0)
    if op == hcomm.ReduceOp.MAX:
        return stack.max(axis=0)
    raise AssertionError(op)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", COUNTS)
@pytest.mark.parametrize("op", [hcomm.ReduceOp.SUM, hcomm.ReduceOp.MIN, hcomm.ReduceOp.MAX])
def test_all_reduce(comm, world, dtype, n, op):
    rank, size = world
    x = value(rank, n, dtype)
    assert hcomm.all_reduce(x, op) is x  # in place, returns the array
    np.testing.assert_array_equal(x, reduced(op, size, n, dtype))
    y = value(rank, n, dtype)
    out = np.empty_like(y)
    assert comm.all_reduce(y, op, out=out) is out
    np.testing.assert_array_equal(out, reduced(op, size, n, dtype))
    np.testing.assert_array_equal(y, value(rank, n, dtype))  # the input is left alone


@pytest.mark.parametrize("dtype", DTYPES)
def test_all_reduce_avg_and_2d(comm, world, dtype):
    rank, size = world
    x = value(rank, 12, dtype).reshape(3, 4)
    hcomm.all_reduce(x, hcomm.ReduceOp.SUM)
    assert x.shape == (3, 4)
    np.testing.assert_array_equal(x.reshape(-1), reduced(hcomm.ReduceOp.SUM, size, 12, dtype))
    if np.dtype(dtype).kind == "f":
        f = value(rank, 9, dtype)
        hcomm.all_reduce(f, hcomm.ReduceOp.AVG)
        want = np.stack([value(r, 9, np.float64) for r in range(size)]).mean(axis=0)
        np.testing.assert_allclose(f.astype(np.float64), want, rtol=1e-2, atol=1e-2)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", COUNTS)
def test_broadcast(comm, world, dtype, n):
    rank, size = world
    root = size - 1
    x = value(root, n, dtype) if rank == root else np.zeros(n, dtype)
    assert hcomm.broadcast(x, root) is x
    np.testing.assert_array_equal(x, value(root, n, dtype))


@pytest.mark.parametrize("dtype", DTYPES)
def test_reduce(comm, world, dtype):
    rank, size = world
    x = value(rank, 101, dtype)
    got = hcomm.reduce(x, 0)
    if rank == 0:
        assert got is x
        np.testing.assert_array_equal(x, reduced(hcomm.ReduceOp.SUM, size, 101, dtype))
    else:
        assert got is None
    out = np.empty(101, dtype)
    got = comm.reduce(value(rank, 101, dtype), 0, hcomm.ReduceOp.MAX, out=out)
    if rank == 0:
        np.testing.assert_array_equal(out, reduced(hcomm.ReduceOp.MAX, size, 101, dtype))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", COUNTS)
def test_all_gather(comm, world, dtype, n):
    rank, size = world
    got = hcomm.all_gather(value(rank, n, dtype))
    assert got.shape == (size, n) and got.dtype == np.dtype(dtype)
    for r in range(size):
        np.testing.assert_array_equal(got[r], value(r, n, dtype))
    out = np.empty((size, n), dtype)
    assert comm.all_gather(value(rank, n, dtype), out=out) is out
    np.testing.assert_array_equal(out, got)


@pytest.mark.parametrize("dtype", DTYPES)
def test_reduce_scatter(comm, world, dtype):
    rank, size = world
    n = 5 * size
    got = hcomm.reduce_scatter(value(rank, n, dtype))
    full = reduced(hcomm.ReduceOp.SUM, size, n, dtype)
    np.testing.assert_array_equal(got, full[rank * 5:(rank + 1) * 5])


@pytest.mark.parametrize("dtype", DTYPES)
def test_all_to_all(comm, world, dtype):
    rank, size = world
    n = 3 * size
    got = hcomm.all_to_all(value(rank, n, dtype))
    for r in range(size):
        np.testing.assert_array_equal(got[r * 3:(r + 1) * 3], value(r, n, dtype)[rank * 3:(rank + 1) * 3])


@pytest.mark.parametrize("dtype", DTYPES)
def test_gather_scatter(comm, world, dtype):
    rank, size = world
    root = 1 % size
    got = hcomm.gather(value(rank, 6, dtype), root)
    if rank == root:
        assert got.shape == (size, 6)
        for r in range(size):
            np.testing.assert_array_equal(got[r], value(r, 6, dtype))
    else:
        assert got is None
    src = np.stack([value(r, 6, dtype) for r in range(size)])
    block = hcomm.scatter(src if rank == root else None, root, out=np.empty(6, dtype))
    np.testing.assert_array_equal(block, value(rank, 6, dtype))


@pytest.mark.parametrize("dtype", DTYPES)
def test_send_recv(comm, world, dtype):
    rank, size = world
    if size < 2:
        pytest.skip("one rank")
    nxt, prv = (rank + 1) % size, (rank - 1) % size
    inbox = np.zeros(33, dtype)
    w = hcomm.recv(inbox, prv, tag=4, async_op=True)
    hcomm.send(value(rank, 33, dtype), nxt, tag=4)
    assert w.wait(30) is inbox
    np.testing.assert_array_equal(inbox, value(prv, 33, dtype))
    assert w.is_completed() and w.exception() is None


def test_recv_from_any_source(comm, world):
    rank, size = world
    if size < 2:
        pytest.skip("one rank")
    if rank == 0:
        inboxes = [np.zeros(9, np.int32) for _ in range(size - 1)]
        works = [hcomm.recv(b, hcomm.ANY_SOURCE, tag=6, async_op=True) for b in inboxes]
        hcomm.barrier()
        sources = []
        for b, w in zip(inboxes, works):
            w.wait(30)
            sources.append(w.source)
            np.testing.assert_array_equal(b, value(w.source, 9, np.int32))
        assert sorted(sources) == list(range(1, size))
    else:
        hcomm.barrier()
        hcomm.send(value(rank, 9, np.int32), 0, tag=6)
    hcomm.barrier()


def test_bfloat16_view_and_buffers(comm, world):
    rank, size = world
    # numpy has no bfloat16: a uint16 view with dtype=hcomm.bfloat16; 1.0 is 0x3f80
    x = np.full(8, 0x3F80, dtype=np.uint16)
    hcomm.all_reduce(x, dtype=hcomm.bfloat16)
    f = (x.astype(np.uint32) << 16).view(np.float32)
    np.testing.assert_array_equal(f, np.full(8, float(size), np.float32))
    # bytearray and memoryview as uint8 buffers
    b = bytearray([rank + 1] * 5)
    hcomm.all_reduce(b)
    assert list(b) == [sum(range(1, size + 1))] * 5
    m = memoryview(bytearray([2] * 4))
    hcomm.all_reduce(m, hcomm.ReduceOp.MAX)
    assert list(m) == [2] * 4


def test_torch_tensors(comm, world):
    try:
        import torch
    except ImportError:
        if os.environ.get("CI"):  # CI has every facility: a skip there means something broke
            pytest.fail("torch is not importable (python3-torch; scripts/setup.sh installs it)")
        pytest.skip("torch is not installed (python3-torch)")
    rank, size = world
    t = torch.full((4, 3), float(rank + 1))
    hcomm.all_reduce(t)
    assert torch.equal(t, torch.full((4, 3), float(sum(range(1, size + 1)))))
    b = torch.ones(5, dtype=torch.bfloat16)
    hcomm.all_reduce(b)
    assert torch.equal(b, torch.full((5,), float(size), dtype=torch.bfloat16))
    g = hcomm.all_gather(torch.arange(3, dtype=torch.int64) + rank)
    assert tuple(g.shape) == (size, 3) and int(g[size - 1][0]) == size - 1


def test_barrier_and_queries(comm, world):
    rank, size = world
    hcomm.barrier()
    assert hcomm.get_rank() == rank and hcomm.get_world_size() == size
    assert [r["rank"] for r in hcomm.ranks()] == list(range(size))
    assert hcomm.algorithm_for("allreduce", 1 << 20) != ""
    stats = hcomm.failover_stats()
    assert stats["failovers"] == 0 and "events" in stats
    assert isinstance(hcomm.__version__, str)
