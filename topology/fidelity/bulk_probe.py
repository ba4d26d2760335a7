"""Bulk transfers over TCP or SCTP, counted at the receiver: the goodput probe that also runs in
virtual time (iperf3 polls while it waits on its control connection, which freezes a
time-travel kernel's clock). Every wait blocks in the kernel (blocking sockets with timeouts),
and a transfer is capped by bytes, not duration.

    bulk_probe.py serve tcp|sctp BIND PORT --bytes N [--connections K] [--ready-file F]
    bulk_probe.py fetch tcp|sctp HOST PORT [--connections K] [--omit-s S] [--interval-s S]
                        [--mark DIR/PREFIX]

`serve` accepts K connections one after the other and sends N bytes on each, then closes it
(the direction of an FTP download). `fetch` opens the K connections one after the other, each
only after the previous one has ended (fresh connections, as FTP's data connections are), reads
each to its end and prints JSON: per connection its bytes and times (connect, first byte, last
byte, on the kernel's clock), the total time, and for the first connection the bytes counted per
interval and the steady goodput after `--omit-s` seconds of slow start. With `--mark`, it creates
the empty files PREFIX-start and PREFIX-end right before the first connection and right after
the last one, for a host watching that directory to stamp with its own wall clock."""
from __future__ import annotations

import argparse
import json
import os
import socket
import sys
import time
from typing import Any

PROTOCOLS = {"tcp": socket.IPPROTO_TCP, "sctp": 132}
# One SCTP message per full packet: a 1500-byte MTU carries a 1452-byte DATA chunk payload.
SCTP_MESSAGE = 1452
TCP_CHUNK = 65536
TIMEOUT_S = 600.0   # of the kernel's clock: a dead peer ends the probe, it never hangs it


def serve(proto: str, bind: str, port: int, size: int, connections: int,
          ready_file: str | None) -> None:
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM, PROTOCOLS[proto])
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind((bind, port))
    listener.listen(8)
    listener.settimeout(TIMEOUT_S)
    if ready_file:
        open(ready_file, "w").close()
    chunk = SCTP_MESSAGE if proto == "sctp" else TCP_CHUNK
    block = bytes(range(256)) * (chunk // 256 + 1)
    for _ in range(connections):
        conn, _ = listener.accept()
        conn.settimeout(TIMEOUT_S)
        sent = 0
        while sent < size:
            piece = min(chunk, size - sent)
            conn.sendall(block[:piece])
            sent += piece
        conn.close()
    listener.close()


def _connect(proto: str, host: str, port: int) -> socket.socket:
    """Connect, retrying while the server is not listening yet (sleeps, never spins)."""
    deadline = time.monotonic() + 60
    while True:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, PROTOCOLS[proto])
        sock.settimeout(TIMEOUT_S)
        try:
            sock.connect((host, port))
            return sock
        except ConnectionRefusedError:
            sock.close()
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def fetch_one(proto: str, host: str, port: int, keep_samples: bool) -> dict[str, Any]:
    started = time.monotonic()
    sock = _connect(proto, host, port)
    connected = time.monotonic()
    total, first, samples = 0, None, []
    while True:
        data = sock.recv(TCP_CHUNK)
        now = time.monotonic()
        if not data:
            break
        if first is None:
            first = now
        total += len(data)
        if keep_samples:
            samples.append((now, total))
    ended = time.monotonic()
    sock.close()
    return {"bytes": total, "started": started, "connected": connected,
            "first_byte": first if first is not None else ended, "ended": ended,
            "samples": samples}


def steady_goodput(samples: list[tuple[float, int]], omit_s: float) -> dict[str, float] | None:
    """Bits per second between the first arrival at least omit_s after the first byte and the
    last arrival: the bytes of every read after the first count, over the time between them."""
    if len(samples) < 2:
        return None
    start_at = samples[0][0] + omit_s
    begin = next((s for s in samples if s[0] >= start_at), None)
    end = samples[-1]
    if begin is None or end[0] <= begin[0]:
        return None
    seconds = end[0] - begin[0]
    return {"bps": 8 * (end[1] - begin[1]) / seconds, "bytes": end[1] - begin[1],
            "seconds": seconds}


def per_interval(samples: list[tuple[float, int]], interval_s: float) -> list[int]:
    """Bytes received in each whole interval after the first byte."""
    if not samples:
        return []
    origin, counts, previous = samples[0][0], [], 0
    for when, total in samples:
        slot = int((when - origin) / interval_s)
        while len(counts) <= slot:
            counts.append(0)
        counts[slot] += total - previous
        previous = total
    return counts


def fetch(proto: str, host: str, port: int, connections: int, omit_s: float,
          interval_s: float, mark: str | None = None) -> dict[str, Any]:
    if mark:
        os.close(os.open(f"{mark}-start", os.O_CREAT | os.O_WRONLY, 0o644))
    runs = [fetch_one(proto, host, port, keep_samples=(i == 0)) for i in range(connections)]
    if mark:
        os.close(os.open(f"{mark}-end", os.O_CREAT | os.O_WRONLY, 0o644))
    samples = runs[0].pop("samples")
    for run in runs[1:]:
        run.pop("samples")
    origin = runs[0]["started"]
    for run in runs:
        for key in ("started", "connected", "first_byte", "ended"):
            run[key] = round(run[key] - origin, 6)
    return {"protocol": proto, "connections": connections,
            "bytes": sum(r["bytes"] for r in runs),
            "total_s": runs[-1]["ended"],
            "per_connection": runs,
            "goodput": steady_goodput(samples, omit_s),
            "interval_s": interval_s,
            "interval_bytes": per_interval(samples, interval_s)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="role", required=True)
    s = sub.add_parser("serve")
    s.add_argument("proto", choices=sorted(PROTOCOLS))
    s.add_argument("bind")
    s.add_argument("port", type=int)
    s.add_argument("--bytes", type=int, required=True)
    s.add_argument("--connections", type=int, default=1)
    s.add_argument("--ready-file")
    f = sub.add_parser("fetch")
    f.add_argument("proto", choices=sorted(PROTOCOLS))
    f.add_argument("host")
    f.add_argument("port", type=int)
    f.add_argument("--connections", type=int, default=1)
    f.add_argument("--omit-s", type=float, default=0.0)
    f.add_argument("--interval-s", type=float, default=1.0)
    f.add_argument("--mark", help="DIR/PREFIX of the marker files (see above)")
    args = parser.parse_args(argv)
    if args.role == "serve":
        serve(args.proto, args.bind, args.port, args.bytes, args.connections, args.ready_file)
    else:
        print(json.dumps(fetch(args.proto, args.host, args.port, args.connections, args.omit_s,
                               args.interval_s, args.mark)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
