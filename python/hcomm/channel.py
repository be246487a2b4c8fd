"""hcomm.SharedMemoryChannel: one writer publishes versions of an array, readers in other
processes of the host read the newest one whole (dtype and shape travel with the data)."""

import json
import struct

from . import _hcomm

_HEADER_ROOM = 4096  # bytes per version for dtype and shape, besides `size`
_PREFIX = struct.Struct("<I")


def _describe(array):
    """(header bytes, buffer) of what write() publishes."""
    if hasattr(array, "data_ptr") and hasattr(array, "numpy"):  # torch: through numpy
        array = array.detach().cpu().numpy()
    if isinstance(array, (bytes, bytearray, memoryview)):
        head = {"kind": "bytes"}
        data = memoryview(array).cast("B")
    else:
        import numpy as np
        a = np.ascontiguousarray(array)
        head = {"kind": "numpy", "dtype": a.dtype.str, "shape": list(a.shape)}
        data = memoryview(a.reshape(-1).view(np.uint8))
    text = json.dumps(head).encode()
    if len(text) + _PREFIX.size > _HEADER_ROOM:
        raise ValueError("the array's shape is too long to describe")
    return _PREFIX.pack(len(text)) + text, data


def _rebuild(payload):
    (n,) = _PREFIX.unpack_from(payload, 0)
    head = json.loads(bytes(payload[_PREFIX.size:_PREFIX.size + n]))
    data = memoryview(payload)[_PREFIX.size + n:]
    if head["kind"] == "bytes":
        return bytearray(data)
    import numpy as np
    return np.frombuffer(data, dtype=np.dtype(head["dtype"])).reshape(head["shape"])


class SharedMemoryChannel:
    """SharedMemoryChannel(name, size, create=True) makes the writer (size: the largest array
    in bytes); create=False opens a reader, waiting up to `timeout` seconds for the writer.
    write(array) publishes a version; read() returns the newest version (a new array),
    read(newer_than=v, timeout=s) waits for one newer than v (hcomm.TimeoutError otherwise;
    hcomm.PeerLostError once the writer is gone); `version` is the last one read or written."""

    def __init__(self, name, size=0, create=False, timeout=0.0):
        self._native = _hcomm._Channel(name, size + _HEADER_ROOM if (create or size) else 0,
                                       bool(create), float(timeout))
        self._size = size
        self.version = 0

    @property
    def name(self):
        return self._native.name

    @property
    def size(self):
        return self._native.size - _HEADER_ROOM

    def write(self, array):
        head, data = _describe(array)
        if data.nbytes > self.size:
            raise ValueError(f"{data.nbytes} bytes do not fit the channel's {self.size}")
        self._native.write(head, data)
        self.version += 1
        return self.version

    def read(self, newer_than=None, timeout=0.0):
        version, payload = self._native.read(0 if newer_than is None else int(newer_than),
                                             float(timeout))
        self.version = version
        return _rebuild(payload)

    def close(self):
        """The writer removes the channel (readers then get PeerLostError); a reader unmaps."""
        self._native.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False
