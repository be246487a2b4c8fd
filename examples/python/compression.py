"""The seeds' compression: FP16 for gradients (half the bandwidth, summed in full precision),
DELTA for frames that change little between sends, and hcomm.config's fields.
hcomm-run -n 2 python3 examples/python/compression.py"""

import numpy as np

import hcomm

rank, size = hcomm.get_rank(), hcomm.get_world_size()

hcomm.config.enable_fp16_compress = True
hcomm.config.comp_threshold = 1024  # smaller frames go raw (for communicators made after this)
gradients = np.random.default_rng(rank).normal(size=1 << 20).astype(np.float32)
want = sum(np.random.default_rng(r).normal(size=1 << 20).astype(np.float64) for r in range(size))
hcomm.all_reduce(gradients)
err = float(np.max(np.abs(gradients - want)))

hcomm.set_compression(hcomm.CompressionType.DELTA)
frame = np.zeros(1 << 20, dtype=np.uint8)
if size > 1:
    for step in range(10):  # a video frame of which a little changes each time
        frame[step * 1000:(step + 1) * 1000] = step + 1
        if rank == 0:
            hcomm.send(frame, 1)
        elif rank == 1:
            got = hcomm.recv(np.empty_like(frame), 0)
            assert (got == frame).all()
stats = hcomm.default().compression_stats()
hcomm.set_compression(hcomm.CompressionType.NONE)
if rank == 0:
    print(f"fp16 all_reduce: largest error {err:.3g}; delta sends: wire "
          f"{stats['wire_bytes'] / max(1, stats['payload_bytes']):.1%} of the payload")
