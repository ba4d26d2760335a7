"""Counts one-way loss: a sender of numbered UDP datagrams at a fixed pace and a receiver that
counts the distinct ones that arrive, and the runs of consecutive ones that did not. Blocks in
the kernel (sleep, socket timeouts) and never spins, so it also runs where time only advances
when every process waits."""
from __future__ import annotations

import argparse
import json
import socket
import struct
import sys
import time

HEADER = struct.Struct("!I")


def send(host: str, port: int, count: int, payload: int, rate_pps: float) -> None:
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    padding = b"\0" * max(0, payload - HEADER.size)
    start = time.monotonic()
    for seq in range(count):
        due = start + seq / rate_pps
        pause = due - time.monotonic()
        if pause > 0:
            time.sleep(pause)
        sock.sendto(HEADER.pack(seq) + padding, (host, port))
    print(json.dumps({"sent": count, "seconds": time.monotonic() - start}))


def receive(bind: str, port: int, count: int, quiet_s: float, ready_file: str | None) -> None:
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    # Forced past rmem_max (we run as root): a stalled reader must not drop datagrams.
    sock.setsockopt(socket.SOL_SOCKET, getattr(socket, "SO_RCVBUFFORCE", 33), 16 << 20)
    sock.bind((bind, port))
    if ready_file:
        open(ready_file, "w").close()
    seen: set[int] = set()
    sock.settimeout(60.0)  # until the first datagram
    while len(seen) < count:
        try:
            data = sock.recv(65536)
        except TimeoutError:
            break
        if len(data) >= HEADER.size:
            seen.add(HEADER.unpack_from(data)[0])
        sock.settimeout(quiet_s)
    print(json.dumps({"received": len(seen), "expected": count,
                      "loss_runs": loss_runs(seen, count)}))


def loss_runs(seen: set[int], count: int) -> int:
    """How many unbroken runs of missing datagrams the numbers 0..count-1 hold: the lost
    datagrams over this is the mean burst (1/(1-p) for Bernoulli loss p)."""
    return sum(1 for seq in range(count) if seq not in seen and (seq == 0 or seq - 1 in seen))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    sub = parser.add_subparsers(dest="role", required=True)
    s = sub.add_parser("send")
    s.add_argument("host")
    s.add_argument("port", type=int)
    s.add_argument("--count", type=int, default=10_000)
    s.add_argument("--payload", type=int, default=100)
    s.add_argument("--rate-pps", type=float, default=1000.0)
    r = sub.add_parser("receive")
    r.add_argument("bind")
    r.add_argument("port", type=int)
    r.add_argument("--count", type=int, default=10_000)
    r.add_argument("--quiet-s", type=float, default=2.0)
    r.add_argument("--ready-file")
    args = parser.parse_args(argv)
    if args.role == "send":
        send(args.host, args.port, args.count, args.payload, args.rate_pps)
    else:
        receive(args.bind, args.port, args.count, args.quiet_s, args.ready_file)
    return 0


if __name__ == "__main__":
    sys.exit(main())
