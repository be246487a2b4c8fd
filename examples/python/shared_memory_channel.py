"""The seeds' SharedMemoryChannel: one process writes model weights, another reads the newest
version (no communicator needed). python3 examples/python/shared_memory_channel.py"""

import os
import sys

import numpy as np

import hcomm

name = f"model_weights-{os.getpid()}"
channel = hcomm.SharedMemoryChannel(name=name, size=1024 * 1024, create=True)
weights = np.arange(256 * 256, dtype=np.float32).reshape(256, 256)
pid = os.fork()
if pid == 0:  # another process: the reader
    reader = hcomm.SharedMemoryChannel(name=name, create=False, timeout=5)
    got = reader.read(timeout=5)
    ok = got.shape == weights.shape and got.dtype == weights.dtype and (got == weights).all()
    os._exit(0 if ok else 1)
channel.write(weights)
_, status = os.waitpid(pid, 0)
channel.close()
print("SharedMemoryChannel: the reader got", weights.shape, weights.dtype,
      "OK" if os.WEXITSTATUS(status) == 0 else "WRONG")
sys.exit(os.WEXITSTATUS(status))
