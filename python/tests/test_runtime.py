"""Streams, waiting, errors, compression, the channel and the scheduler hook."""

import os
import signal
import threading
import time

import numpy as np
import pytest

import hcomm


def test_stream_overlaps_python_work(comm, world):
    """Python computation goes on while a 64 MiB all_reduce runs on a stream: measured."""
    rank, size = world
    x = np.ones(16 << 20, dtype=np.float32)
    hcomm.barrier()
    with hcomm.Stream() as stream:
        t0 = time.perf_counter()
        assert hcomm.all_reduce(x, stream=stream) is x  # returns at once
        returned = time.perf_counter() - t0
        spins = 0
        while stream.pending():
            spins += 1  # Python work meanwhile
        ran = time.perf_counter() - t0
    np.testing.assert_array_equal(x[:5], np.full(5, size, np.float32))
    print(f"rank {rank}: all_reduce returned after {returned * 1e3:.2f} ms, ran {ran * 1e3:.1f} ms, "
          f"{spins} Python iterations meanwhile")
    if size > 1:
        assert spins > 0 and returned < ran


def test_stream_runs_in_order_and_raises_first_error(comm, world):
    rank, size = world
    a = np.full(1000, rank, dtype=np.int64)
    b = np.full(1000, rank + 1, dtype=np.int64)
    c = np.full(1000, rank, dtype=np.int64)
    s = hcomm.Stream()
    with s:
        hcomm.all_reduce(a)
        hcomm.all_reduce(b, stream=s)
        hcomm.broadcast(c, 0)
        assert s.pending() <= 3
        s.synchronize()  # what reads an earlier operation's result waits for it
        hcomm.broadcast(a, size - 1)
    assert int(a[0]) == size * (size - 1) // 2
    assert int(b[0]) == size * (size + 1) // 2
    assert int(c[0]) == 0
    if size > 1:
        bad = hcomm.Stream()
        with pytest.raises(hcomm.InvalidArgumentError):
            with bad:
                # every rank's count differs: the operation fails on every rank
                hcomm.all_reduce(np.ones(10 + rank, dtype=np.float32))


def test_work_wait_timeout_exception(comm, world):
    rank, size = world
    if size < 2:
        pytest.skip("one rank")
    inbox = np.zeros(4, dtype=np.float32)
    w = hcomm.recv(inbox, (rank - 1) % size, tag=77, async_op=True)
    with pytest.raises(hcomm.TimeoutError) as e:
        w.wait(0.05)
    assert e.value.code == 5 and isinstance(e.value, hcomm.Error)
    assert not w.is_completed() and w.exception() is None
    hcomm.barrier()  # nobody sends before every rank saw its timeout
    hcomm.send(np.arange(4, dtype=np.float32), (rank + 1) % size, tag=77)
    w.wait(30)
    np.testing.assert_array_equal(inbox, np.arange(4, dtype=np.float32))


def test_bad_buffers_raise_clear_errors(comm, world):
    x = np.ones((4, 4), dtype=np.float32)[:, ::2]
    with pytest.raises(ValueError, match="contiguous"):
        hcomm.all_reduce(x)
    with pytest.raises(TypeError, match="cannot reduce"):
        hcomm.all_reduce(np.ones(3, dtype=np.complex64))
    with pytest.raises(TypeError, match="numpy array"):
        hcomm.all_reduce([1, 2, 3])
    ro = np.ones(3, dtype=np.float32)
    ro.setflags(write=False)
    with pytest.raises(ValueError, match="read-only"):
        hcomm.all_reduce(ro)
    with pytest.raises(ValueError, match="elements"):
        hcomm.all_gather(np.ones(3, np.float32), out=np.empty(2, np.float32))


def test_other_threads_run_while_one_waits(comm, world):
    rank, size = world
    if size < 2:
        pytest.skip("one rank")
    counter = [0]
    done = threading.Event()

    def busy():
        while not done.is_set():
            counter[0] += 1

    t = threading.Thread(target=busy)
    t.start()
    inbox = np.zeros(1, dtype=np.int32)
    if rank == 0:
        before = counter[0]
        hcomm.recv(inbox, 1, tag=91)  # blocks until rank 1 sends, 200 ms later
        during = counter[0] - before
    else:
        time.sleep(0.2)
        hcomm.send(np.ones(1, dtype=np.int32), 0, tag=91)
        during = 1
    done.set()
    t.join()
    assert during > 0


def test_compression_api(comm, world):
    rank, size = world
    assert hcomm.config.comp_threshold is None or hcomm.config.comp_threshold >= 0
    hcomm.config.enable_fp16_compress = True
    assert hcomm.config.enable_fp16_compress
    assert comm.compression() == hcomm.CompressionType.FP16
    x = np.linspace(0, 1, 5000, dtype=np.float32) + rank
    hcomm.all_reduce(x)
    want = np.linspace(0, 1, 5000) * size + size * (size - 1) / 2
    np.testing.assert_allclose(x, want, rtol=size * 2.0 ** -10, atol=size * 2.0 ** -10)
    hcomm.set_compression(hcomm.CompressionType.DELTA)
    assert comm.compression() == hcomm.CompressionType.DELTA
    hcomm.set_compression("none")
    assert comm.compression() == hcomm.CompressionType.NONE
    assert "none" in hcomm.compression_for(1 << 20)
    with pytest.raises(ValueError):
        hcomm.set_compression("lz4")
    with pytest.raises(AttributeError):
        hcomm.config.no_such_field = 1


def test_qos_and_scheduler(comm, world):
    hcomm.set_qos(min_rate=0, max_rate=100, priority=2)
    assert comm.qos() == {"min_rate": 0, "max_rate": 100, "priority": 2}
    with pytest.raises(hcomm.InvalidArgumentError):
        hcomm.set_qos(min_rate=80, max_rate=70)

    class Reverse(hcomm.Scheduler):
        def schedule(self, tasks):
            return list(reversed(tasks))

    hcomm.set_scheduler(Reverse())
    x = np.ones(100000, dtype=np.float32)
    hcomm.all_reduce(x)  # paced frames go through the hook when classes compete
    hcomm.set_scheduler(None)
    with pytest.raises(TypeError):
        hcomm.set_scheduler(object())
    hcomm.set_qos()  # back to the default class


def test_shared_memory_channel_across_processes(comm, world):
    rank, size = world
    name = f"pytest-{os.getpid()}"
    writer = hcomm.SharedMemoryChannel(name, size=1 << 20, create=True)
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the reader: another process
        os.close(w)
        code = 0
        try:
            reader = hcomm.SharedMemoryChannel(name, create=False, timeout=5)
            os.read(r, 1)
            seen = 0
            while seen < 20:
                a = reader.read(newer_than=reader.version, timeout=5)
                assert a.shape == (64, 128) and a.dtype == np.float64
                assert (a == a.flat[0]).all()  # one version whole, never a mix
                seen += 1
        except BaseException:  # noqa: BLE001 - reported through the exit code
            import traceback
            traceback.print_exc()
            code = 1
        os._exit(code)
    os.close(r)
    for v in range(400):
        writer.write(np.full((64, 128), float(v)))
        if v == 0:
            os.write(w, b"x")
        time.sleep(0.001)
    _, status = os.waitpid(pid, 0)
    writer.close()
    assert os.WEXITSTATUS(status) == 0
    assert writer.version == 400


def test_ctrl_c_interrupts_a_blocked_recv(world):
    """Ctrl-C during a blocked recv raises KeyboardInterrupt within 100 ms and leaves the
    communicator clearly aborted (its peers' operations fail too)."""
    rank, size = world
    if size < 2:
        pytest.skip("one rank")
    c = hcomm.Communicator()
    try:
        if rank == 0:
            sent = []
            timer = threading.Timer(0.3, lambda: (sent.append(time.perf_counter()),
                                                  os.kill(os.getpid(), signal.SIGINT)))
            timer.start()
            with pytest.raises(KeyboardInterrupt):
                c.recv(np.zeros(1, np.float32), 1, tag=5)
            latency = time.perf_counter() - sent[0]
            print(f"KeyboardInterrupt {latency * 1e3:.1f} ms after SIGINT")
            assert latency < 0.1
            with pytest.raises(hcomm.AbortedError):
                c.barrier()
        else:
            with pytest.raises(hcomm.Error):  # rank 0's abort reaches the peers
                c.barrier()
    finally:
        c.close()
