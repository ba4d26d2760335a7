"""A byte stream over TCP or SCTP between two nodes, with a digest at both ends, for tests.

    transfer.py serve tcp|sctp ADDR PORT [--ready FILE]      prints {"bytes": n, "sha256": h}
    transfer.py send tcp|sctp ADDR PORT --bytes N [--chunk C] [--interval S]"""
from __future__ import annotations

import argparse
import hashlib
import json
import random
import socket
import time

PROTOCOLS = {"tcp": socket.IPPROTO_TCP, "sctp": 132}


def serve(proto: str, addr: str, port: int, ready: str | None) -> None:
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM, PROTOCOLS[proto])
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind((addr, port))
    listener.listen(1)
    if ready:
        open(ready, "w").close()
    listener.settimeout(120)
    conn, _ = listener.accept()
    conn.settimeout(120)
    digest, total = hashlib.sha256(), 0
    while True:
        data = conn.recv(65536)
        if not data:
            break
        digest.update(data)
        total += len(data)
    print(json.dumps({"bytes": total, "sha256": digest.hexdigest()}))


def send(proto: str, addr: str, port: int, size: int, chunk: int, interval: float) -> None:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, PROTOCOLS[proto])
    sock.settimeout(120)
    sock.connect((addr, port))
    rng = random.Random(size)
    digest, sent = hashlib.sha256(), 0
    while sent < size:
        data = rng.randbytes(min(chunk, size - sent))
        sock.sendall(data)
        digest.update(data)
        sent += len(data)
        if interval:
            time.sleep(interval)
    sock.close()
    print(json.dumps({"bytes": sent, "sha256": digest.hexdigest()}))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("role", choices=("serve", "send"))
    parser.add_argument("proto", choices=sorted(PROTOCOLS))
    parser.add_argument("addr")
    parser.add_argument("port", type=int)
    parser.add_argument("--ready")
    parser.add_argument("--bytes", type=int, default=100_000)
    parser.add_argument("--chunk", type=int, default=16_384)
    parser.add_argument("--interval", type=float, default=0.0)
    args = parser.parse_args()
    if args.role == "serve":
        serve(args.proto, args.addr, args.port, args.ready)
    else:
        send(args.proto, args.addr, args.port, args.bytes, args.chunk, args.interval)


if __name__ == "__main__":
    main()
