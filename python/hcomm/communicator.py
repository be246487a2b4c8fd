"""hcomm.Communicator: a group of ranks and its operations on Python buffers."""

from . import _hcomm
from ._hcomm import DataType, ReduceOp
from .stream import current


def _numpy():
    import numpy
    return numpy


def _empty(like, shape):
    """A new array of `shape` with `like`'s element type and kind (numpy, torch, bytearray)."""
    if hasattr(like, "data_ptr") and hasattr(like, "new_empty"):  # torch
        return like.new_empty(shape)
    if isinstance(like, (bytearray, bytes, memoryview)):
        n = 1
        for d in shape:
            n *= d
        return bytearray(n * (like.itemsize if isinstance(like, memoryview) else 1))
    np = _numpy()
    return np.empty(shape, dtype=np.asarray(like).dtype)


def _shape(x):
    if hasattr(x, "shape"):
        return tuple(x.shape)
    return (len(memoryview(x).cast("B")) // max(1, memoryview(x).itemsize),)


class Communicator:
    """Joins the world (collective over every rank): Config from the environment (HCOMM_*, or
    torchrun's, Open MPI's, Slurm's variables), then `options`: rank, world_size, root_addr,
    transport, socket_ifname, algo, compression, comp_threshold, error_feedback, timeout and
    connect_timeout (seconds), qos ("min=30,max=70,priority=2")."""

    def __init__(self, **options):
        options = {k: v for k, v in options.items() if v is not None}
        if options.get("compression") is not None:
            from .config import compression_type
            options["compression"] = compression_type(options["compression"])
        self._c = _hcomm._Comm(options)

    # ---- who
    @property
    def rank(self):
        return self._c.rank

    @property
    def size(self):
        return self._c.size

    @property
    def closed(self):
        return self._c.closed

    def close(self):
        """Destroys the communicator; operations still running fail with AbortedError."""
        self._c.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    # ---- collectives
    def all_reduce(self, tensor, op=ReduceOp.SUM, *, async_op=False, stream=None, out=None,
                   dtype=None):
        """In place (or into `out`); returns the result array (a Work with async_op)."""
        result = tensor if out is None else out
        if stream is None and current() is None:  # the fast path: no stream bookkeeping
            return self._c.allreduce(tensor, out, op, dtype, async_op)
        return self._streamed(lambda a: self._c.allreduce(tensor, out, op, dtype, a), result,
                              async_op, stream)

    def broadcast(self, tensor, root=0, *, async_op=False, stream=None, dtype=None):
        return self._streamed(lambda a: self._c.broadcast(tensor, root, dtype, a), tensor,
                              async_op, stream)

    def reduce(self, tensor, root=0, op=ReduceOp.SUM, *, async_op=False, stream=None, out=None,
               dtype=None):
        """The result lands in `tensor` (or `out`) on `root` only; returns it there, None
        elsewhere."""
        result = (tensor if out is None else out) if self.rank == root else None
        return self._streamed(lambda a: self._c.reduce(tensor, out, op, root, dtype, a), result,
                              async_op, stream)

    def all_gather(self, tensor, *, async_op=False, stream=None, out=None, dtype=None):
        """Returns a new array of shape (size, *tensor.shape) (or fills `out`)."""
        if out is None:
            out = _empty(tensor, (self.size,) + _shape(tensor))
        return self._streamed(lambda a: self._c.allgather(tensor, out, dtype, a), out, async_op,
                              stream)

    def reduce_scatter(self, tensor, op=ReduceOp.SUM, *, async_op=False, stream=None, out=None,
                       dtype=None):
        """`tensor` holds size blocks (along its first dimension, or flat); returns this rank's
        block reduced over all ranks, a new array (or `out`)."""
        if out is None:
            shape = _shape(tensor)
            if shape and shape[0] % self.size == 0:
                shape = (shape[0] // self.size,) + shape[1:]
            else:
                n = 1
                for d in shape:
                    n *= d
                shape = (n // self.size,)
            out = _empty(tensor, shape)
        return self._streamed(lambda a: self._c.reduce_scatter(tensor, out, op, dtype, a), out,
                              async_op, stream)

    def all_to_all(self, tensor, *, async_op=False, stream=None, out=None, dtype=None):
        """Block i of `tensor` (size equal blocks) goes to rank i; returns a new array whose block
        i came from rank i (or `out`)."""
        if out is None:
            out = _empty(tensor, _shape(tensor))
        return self._streamed(lambda a: self._c.alltoall(tensor, out, dtype, a), out, async_op,
                              stream)

    def gather(self, tensor, root=0, *, async_op=False, stream=None, out=None, dtype=None):
        """Returns, on `root`, a new array of shape (size, *tensor.shape) (or `out`); None
        elsewhere."""
        if self.rank == root and out is None:
            out = _empty(tensor, (self.size,) + _shape(tensor))
        return self._streamed(lambda a: self._c.gather(tensor, out, root, dtype, a),
                              out if self.rank == root else None, async_op, stream)

    def scatter(self, tensor=None, root=0, *, async_op=False, stream=None, out=None, dtype=None):
        """`tensor` on `root`: size blocks along its first dimension; every rank gets its block,
        a new array (or `out`; ranks other than root pass `out`, or a `tensor` of the root's
        shape to size it)."""
        if out is None:
            if tensor is None:
                raise ValueError("scatter: pass out= (this rank's block) where tensor is None")
            out = _empty(tensor, _shape(tensor)[1:] or (len(tensor) // self.size,))
        send = tensor if self.rank == root else None
        return self._streamed(lambda a: self._c.scatter(send, out, root, dtype, a), out,
                              async_op, stream)

    def barrier(self, *, async_op=False, stream=None):
        return self._streamed(lambda a: self._c.barrier(a), None, async_op, stream)

    # ---- point to point
    def send(self, tensor, dst=None, tag=0, *, async_op=False, stream=None, dtype=None):
        """To rank `dst` (None: the next rank, as the seeds' hcomm.send(tensor) on 2 ranks)."""
        dst = (self.rank + 1) % self.size if dst is None else dst
        return self._streamed(lambda a: self._c.send(tensor, dst, tag, dtype, a), None, async_op,
                              stream)

    def recv(self, tensor, src=None, tag=0, *, async_op=False, stream=None, dtype=None):
        """Into `tensor` from rank `src` (None: the previous rank; hcomm.ANY_SOURCE: the first
        message with `tag` from any rank, whose rank the async form's Work.source gives)."""
        src = (self.rank - 1) % self.size if src is None else src
        return self._streamed(lambda a: self._c.recv(tensor, src, tag, dtype, a), tensor,
                              async_op, stream)

    def _streamed(self, start, result, async_op, stream):
        stream = stream if stream is not None else current()
        if stream is None:
            return start(async_op)
        work = start(True)
        stream._add(work)
        return work if async_op else result

    # ---- configuration and state
    def set_compression(self, kind):
        from .config import compression_type
        self._c.set_compression(compression_type(kind))

    def compression(self):
        return self._c.compression()

    def compression_for(self, nbytes, dtype=DataType.float32, peer=None):
        peer = (self.rank + 1) % self.size if peer is None else peer
        return self._c.compression_for(nbytes, dtype, peer)

    def compression_stats(self):
        return self._c.compression_stats()

    def set_qos(self, min_rate=0, max_rate=100, priority=0):
        self._c.set_qos(min_rate, max_rate, priority)

    def qos(self):
        return dict(zip(("min_rate", "max_rate", "priority"), self._c.qos()))

    def failover_stats(self):
        return self._c.failover_stats()

    def ranks(self):
        return self._c.ranks()

    def lost_peers(self):
        return self._c.lost_peers()

    def algorithm_for(self, op, nbytes):
        return self._c.algorithm_for(op, nbytes)

    def abort(self, reason="the application aborted the communicator"):
        self._c.abort(reason)

    def config(self):
        return self._c.config()
