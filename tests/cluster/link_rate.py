#!/usr/bin/env python3
"""A tiny iperf: measures TCP goodput between two cluster nodes.

  link_rate.py server ADDR PORT                  accept connections, sink their bytes, report each
  link_rate.py client ADDR PORT SECONDS [STREAMS] send for SECONDS over STREAMS connections, print Gbit/s

The client prints one line "goodput_gbps=<x> bytes=<n> seconds=<t>", measured by the receiver (the server
replies with the byte count and the monotonic times of the first and last byte; all namespaces share that
clock), so that data still sitting in socket buffers when the sender stops does not inflate the figure.
TCP goodput is at most 1448/1514 = 95.6% of the shaped rate (tbf counts the Ethernet header; MSS 1448 with
timestamps at MTU 1500).
"""
import socket
import struct
import sys
import threading
import time


def serve(addr, port):
    ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind((addr, port))
    ls.listen(64)
    print("listening", flush=True)

    def one(conn):
        with conn:
            total = 0
            first = None
            buf = bytearray(1 << 20)
            view = memoryview(buf)
            while True:
                n = conn.recv_into(view)
                if n == 0:
                    break
                if first is None:
                    first = time.monotonic()
                    n -= 1  # the first byte only starts the clock
                total += n
            last = time.monotonic()
            # The client half-closed; answer with what arrived.
            try:
                conn.sendall(struct.pack("!Qdd", total, first or last, last))
            except OSError:
                pass

    while True:
        conn, _ = ls.accept()
        threading.Thread(target=one, args=(conn,), daemon=True).start()


def client(addr, port, seconds, streams):
    results = [None] * streams

    def one(i):
        s = socket.create_connection((addr, port))
        payload = b"\0" * (1 << 20)
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            s.sendall(payload)
        s.shutdown(socket.SHUT_WR)
        data = b""
        while len(data) < 24:
            chunk = s.recv(24 - len(data))
            if not chunk:
                break
            data += chunk
        s.close()
        results[i] = struct.unpack("!Qdd", data)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(streams)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    # CLOCK_MONOTONIC is one clock for every namespace of the machine: the streams' union is first..last.
    total = sum(r[0] for r in results)
    span = max(r[2] for r in results) - min(r[1] for r in results)
    print(f"goodput_gbps={total * 8 / span / 1e9:.4f} bytes={total} seconds={span:.3f}", flush=True)


if __name__ == "__main__":
    if len(sys.argv) >= 4 and sys.argv[1] == "server":
        serve(sys.argv[2], int(sys.argv[3]))
    elif len(sys.argv) >= 5 and sys.argv[1] == "client":
        client(sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5]) if len(sys.argv) > 5 else 1)
    else:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
