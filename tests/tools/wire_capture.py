#!/usr/bin/env python3
"""Captures what crosses a network interface and counts where a marker appears in it.

Usage: wire_capture.py IFACE STOP_FILE MARKER
Reads every frame on IFACE (an AF_PACKET socket: run it as root, in the interface's namespace)
until STOP_FILE exists, then prints one line: "captured <frames> frames, <bytes> bytes, marker
in <n> frames". A marker cut across two frames is not counted: the traffic it is used on
carries it thousands of times. Touches STOP_FILE.ready once it is capturing."""
import os
import select
import socket
import sys

ETH_P_ALL = 0x0003


def main():
    if len(sys.argv) != 4:
        print(__doc__, file=sys.stderr)
        return 2
    iface, stop, marker = sys.argv[1], sys.argv[2], sys.argv[3].encode()
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    s.bind((iface, 0))
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 << 20)
    open(stop + ".ready", "w").close()
    frames = total = hits = 0
    while not os.path.exists(stop):
        ready, _, _ = select.select([s], [], [], 0.1)
        if not ready:
            continue
        while True:
            try:
                data = s.recv(1 << 17, socket.MSG_DONTWAIT)
            except BlockingIOError:
                break
            frames += 1
            total += len(data)
            if marker in data:
                hits += 1
    print(f"captured {frames} frames, {total} bytes, marker in {hits} frames")
    return 0


if __name__ == "__main__":
    sys.exit(main())
