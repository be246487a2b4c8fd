#!/usr/bin/env python3
"""Writes the seed corpora of tests/fuzz (corpus/<target>/): a few valid and nearly valid inputs
per target, in the input format each *_fuzz.cpp documents. Run it from anywhere."""
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))


def put(target, name, data):
    d = os.path.join(HERE, "corpus", target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())


# store_wire: limit byte, then frames (u32 big-endian length, body).
def frame(body):
    return struct.pack(">I", len(body)) + body


def s(text):
    b = text.encode()
    return struct.pack(">I", len(b)) + b


hello = frame(b"\x00" + struct.pack(">II", 0x48435354, 1))
put("store_wire", "session", b"\xff" + hello + frame(b"\x01" + s("k") + s("v")) +
    frame(b"\x02" + struct.pack(">I", 0) + s("k")) + frame(b"\x03" + s("n") + struct.pack(">q", 5)) +
    frame(b"\x04" + struct.pack(">II", 0, 2) + s("k") + s("n")) + frame(b"\x05"))
put("store_wire", "bad_version", b"\x10" + frame(b"\x00" + struct.pack(">II", 0x48435354, 9)))
put("store_wire", "add_not_counter", b"\x40" + hello + frame(b"\x01" + s("c") + s("x1")) +
    frame(b"\x03" + s("c") + struct.pack(">q", 1)))
put("store_wire", "truncated_wait", b"\x40" + hello + frame(b"\x04" + struct.pack(">II", 0, 3) + s("a")))

# tcp_stream: chunks of (length byte - 1, bytes) holding 64-byte frame headers and payloads.
def header(kind=1, length=0, op_seq=1, step=0, chunk=0, magic=0x4348, version=2):
    return struct.pack("<HBBBBBBIiQIIQQQQ", magic, version, 0, kind, 0, 0, 0, 7, 1, op_seq, step,
                       chunk, 0, length, length, 0)


def chunks(stream, size=200):
    out = b""
    for i in range(0, len(stream), size):
        part = stream[i:i + size]
        out += bytes([len(part) - 1]) + part
    return out


put("tcp_stream", "data_frames", chunks(header(length=16) + b"x" * 16 + header(op_seq=2, length=100) +
                                        b"y" * 100))
put("tcp_stream", "abort", chunks(header(kind=2, length=5) + b"boom!"))
put("tcp_stream", "close", chunks(header(kind=3)))
put("tcp_stream", "channel", chunks(header(kind=4, length=8) + b"\x01" * 8))
put("tcp_stream", "bad_magic", chunks(header(magic=0x1234)))

# tcp_hello: mode byte (bit 0 keyed listener, bit 1 honest handshake first, bit 2 with another
# key), then chunks holding the 40-byte Hello (communicator 0x5eed of 4 ranks).
def tcp_hello(rank=1, uid=0x5eed, magic=0x484D4348, version=2):
    return struct.pack("<IIQiIIIII", magic, version, uid, rank, 0, 1, 4, 1, 0)


put("tcp_hello", "plain", b"\x00" + chunks(tcp_hello()))
put("tcp_hello", "keyed_honest", b"\x03" + chunks(tcp_hello(rank=2)))
put("tcp_hello", "keyed_other_key", b"\x07" + chunks(tcp_hello()))
put("tcp_hello", "keyed_no_handshake", b"\x01" + chunks(tcp_hello()))
put("tcp_hello", "rank_out_of_range", b"\x00" + chunks(tcp_hello(rank=9)))
put("tcp_hello", "other_communicator", b"\x00" + chunks(tcp_hello(uid=77)))
put("tcp_hello", "short", b"\x00" + chunks(tcp_hello()[:17]))

# shm_cells: see shm_cells_fuzz.cpp (header words, then cells).
put("shm_cells", "one_frame", b"\x00" * 8 + struct.pack("<Q", 1) + header(length=16) + b"z" * 16)
put("shm_cells", "two_frames", b"\x00" * 8 + struct.pack("<Q", 2) + header(length=0) +
    header(op_seq=2, length=40000))
put("shm_cells", "bad_layout", b"\x01\x02\x03\x04\x05\x06\x07\x08" + struct.pack("<Q", 1) + header())

# topology_file: the file's text.
put("topology_file", "racks", "# two racks\nhost node01 switch sw1 rack A\nhost node02 switch sw1\n"
    "host node03 rack B switch sw2\nhost node04 switch sw3   # own rack\n")
put("topology_file", "duplicate", "host a switch s\nhost a switch t\n")
put("topology_file", "two_racks", "host a switch s rack r1\nhost b switch s rack r2\n")
put("topology_file", "missing_value", "host a switch\n")

# config: parser byte, selector byte, text.
for i, (p, w, text) in enumerate([(0, 0, " -42 "), (1, 0, "2.5e3"), (2, 0, "64 KiB"), (3, 1, "100ms"),
                                  (4, 5, "4M"), (4, 19, "allreduce=ring"), (5, 0, "INIT,net"),
                                  (6, 0, "10.0.0.1:29500"), (8, 0, "allreduce=ring;broadcast=tree"),
                                  (9, 0, "HCOMM_NUM_QPS")]):
    put("config", "seed%d" % i, bytes([p, w]) + text.encode())
put("config", "launch_env", bytes([7, 0]) + b"\x00" + b"1\n\x01" + b"4\n\x04" + b"127.0.0.1:29500")
put("config", "launch_torchrun", bytes([7, 0]) + b"\x05" + b"3\n\x06" + b"2\n")

# auth_handshake: mode byte, then the peer's bytes (raw) or XOR masks (relayed).
greeting = struct.pack("<II", 0x55414348, 1) + bytes(range(32))
put("auth_handshake", "raw_connector", b"\x00" + b"\x27" + greeting + b"\x1f" + b"\x00" * 32)
put("auth_handshake", "raw_acceptor", b"\x01" + b"\x03" + greeting)
put("auth_handshake", "honest", b"\x02")
put("auth_handshake", "honest_acceptor", b"\x03")
put("auth_handshake", "wrong_key", b"\x06")
put("auth_handshake", "corrupt", b"\x02" + b"\x00" * 40 + b"\x01")
