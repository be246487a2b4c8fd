"""hcomm for Python: collectives and point-to-point on numpy arrays, bytearray/memoryview and
torch CPU tensors, over hcomm's shared memory, TCP and RDMA (README "Python").

    import numpy as np, hcomm
    x = np.ones(1024, dtype=np.float32)
    hcomm.all_reduce(x)                  # in place, on the default communicator (from the
                                         # environment hcomm-run, torchrun, mpirun or srun set)
    with hcomm.Stream() as stream:       # asynchronous, in order; leaving waits
        hcomm.all_reduce(x, stream=stream)
        compute()                        # overlaps with the all_reduce

In place where the seeds are (all_reduce, broadcast, reduce, send/recv into the given array);
new arrays where Python expects them (all_gather, reduce_scatter, all_to_all, gather, scatter),
or into `out=`. `async_op=True` returns a Work (wait(timeout), is_completed(), exception()).
"""

import atexit
import threading

from . import _hcomm
from ._errors import (BY_CODE, AbortedError, Error, InternalError, InvalidArgumentError,
                      MmapError, NoDeviceError, OutOfMemoryError, PeerLostError, TimeoutError,
                      TransportError)
from ._hcomm import CompressionType, DataType, ReduceOp, Task, Work, __version__
from .channel import SharedMemoryChannel
from .communicator import Communicator
from .config import config
from .stream import Stream

_hcomm._set_error_classes(Error, BY_CODE)

#: numpy has no bfloat16: pass a uint16 view with dtype=hcomm.bfloat16 (torch.bfloat16 works as is)
bfloat16 = DataType.bfloat16

ANY_SOURCE = -1  # recv(src=ANY_SOURCE): the first message with its tag from any rank

__all__ = [
    "ANY_SOURCE", "AbortedError", "CompressionType", "Communicator", "DataType", "Error", "InternalError",
    "InvalidArgumentError", "MmapError", "NoDeviceError", "OutOfMemoryError", "PeerLostError",
    "ReduceOp", "Scheduler", "SharedMemoryChannel", "Stream", "Task", "TimeoutError",
    "TransportError", "Work", "algorithm_for", "all_gather", "all_reduce", "all_to_all",
    "barrier", "bfloat16", "broadcast", "compression_for", "config", "failover_stats", "finalize",
    "gather", "get_rank", "get_world_size", "init", "is_initialized", "ranks", "recv", "reduce",
    "reduce_scatter", "scatter", "send", "set_compression", "set_qos", "set_scheduler",
    "__version__",
]

_lock = threading.Lock()
_default = None


def init(**options):
    """Creates the default communicator (collective over every rank), from the environment and
    hcomm.config, overridden by `options` (rank, world_size, root_addr, transport, algo,
    compression, comp_threshold, error_feedback, timeout, connect_timeout, qos). Returns it."""
    global _default
    with _lock:
        if _default is not None and not _default.closed:
            raise InvalidArgumentError("hcomm.init(): the default communicator exists already "
                                       "(hcomm.finalize() first)")
        _default = Communicator(**{**config._options(), **options})
        return _default


def is_initialized():
    return _default is not None and not _default.closed


def default():
    """The default communicator, created on first use (hcomm.init() with no options)."""
    if _default is None or _default.closed:
        with _lock:
            if _default is None or _default.closed:
                return _init_locked()
    return _default


def _init_locked():
    global _default
    _default = Communicator(**config._options())
    return _default


def finalize():
    """Destroys the default communicator (its running operations fail with AbortedError)."""
    global _default
    with _lock:
        if _default is not None:
            _default.close()
        _default = None


def get_rank():
    return default().rank


def get_world_size():
    return default().size


# ---- the seeds' module-level API, on the default communicator --------------------------------

def all_reduce(tensor, op=ReduceOp.SUM, *, async_op=False, stream=None, out=None, dtype=None):
    return default().all_reduce(tensor, op, async_op=async_op, stream=stream, out=out, dtype=dtype)


def broadcast(tensor, root=0, *, async_op=False, stream=None, dtype=None):
    return default().broadcast(tensor, root, async_op=async_op, stream=stream, dtype=dtype)


def reduce(tensor, root=0, op=ReduceOp.SUM, *, async_op=False, stream=None, out=None, dtype=None):
    return default().reduce(tensor, root, op, async_op=async_op, stream=stream, out=out,
                            dtype=dtype)


def all_gather(tensor, *, async_op=False, stream=None, out=None, dtype=None):
    return default().all_gather(tensor, async_op=async_op, stream=stream, out=out, dtype=dtype)


def reduce_scatter(tensor, op=ReduceOp.SUM, *, async_op=False, stream=None, out=None, dtype=None):
    return default().reduce_scatter(tensor, op, async_op=async_op, stream=stream, out=out,
                                    dtype=dtype)


def all_to_all(tensor, *, async_op=False, stream=None, out=None, dtype=None):
    return default().all_to_all(tensor, async_op=async_op, stream=stream, out=out, dtype=dtype)


def gather(tensor, root=0, *, async_op=False, stream=None, out=None, dtype=None):
    return default().gather(tensor, root, async_op=async_op, stream=stream, out=out, dtype=dtype)


def scatter(tensor=None, root=0, *, async_op=False, stream=None, out=None, dtype=None):
    return default().scatter(tensor, root, async_op=async_op, stream=stream, out=out, dtype=dtype)


def send(tensor, dst=None, tag=0, *, async_op=False, stream=None, dtype=None):
    return default().send(tensor, dst, tag, async_op=async_op, stream=stream, dtype=dtype)


def recv(tensor, src=None, tag=0, *, async_op=False, stream=None, dtype=None):
    return default().recv(tensor, src, tag, async_op=async_op, stream=stream, dtype=dtype)


def barrier(*, async_op=False, stream=None):
    return default().barrier(async_op=async_op, stream=stream)


def set_compression(kind):
    """The default communicator's codec from now on (and that of communicators created later):
    a CompressionType or its name ("fp16", ...)."""
    config.compression = kind


def _apply_compression(kind):
    if is_initialized():
        _default.set_compression(kind)


def set_qos(min_rate=0, max_rate=100, priority=0):
    """The default communicator's QoS class (shares in % of the link, priority 0..7)."""
    default().set_qos(min_rate=min_rate, max_rate=max_rate, priority=priority)


def failover_stats():
    return default().failover_stats()


def ranks():
    return default().ranks()


def algorithm_for(op, nbytes):
    return default().algorithm_for(op, nbytes)


def compression_for(nbytes, dtype=DataType.float32, peer=None):
    return default().compression_for(nbytes, dtype, peer)


# ---- the scheduler hook ----------------------------------------------------------------------

class Scheduler:
    """Subclass and pass to hcomm.set_scheduler() to decide, when communicators of several QoS
    classes all have a frame ready, which goes first. schedule(tasks) gets a list of hcomm.Task
    (comm, priority, bytes, waited_us, index) and returns them in the order wanted (or reorders
    the list in place and returns None). It runs on hcomm's progress thread each time a paced
    frame is picked among two or more ready communicators: keep it short, call no hcomm
    function, raise nothing (an exception is reported once and the default order used)."""

    def schedule(self, tasks):  # the default: higher priority first, then the longest waiting
        tasks.sort(key=lambda t: (-t.priority, -t.waited_us))
        return tasks


def set_scheduler(scheduler):
    """Process-wide; None restores hcomm's default (no Python on the progress thread)."""
    if scheduler is not None and not callable(getattr(scheduler, "schedule", None)):
        raise TypeError("set_scheduler() needs an object with a schedule(tasks) method")
    _hcomm._set_scheduler(scheduler)


@atexit.register
def _shutdown():
    _hcomm._set_scheduler(None)  # no Python from the progress thread once the interpreter goes
    finalize()
