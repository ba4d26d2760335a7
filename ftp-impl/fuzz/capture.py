"""Capture real control-connection traffic between ftpc and ftpd on loopback (TCP) as seed
inputs of the fuzz targets: a relay between the two records what each side sent.

    python3 fuzz/capture.py --build build --out /tmp/capture NAME -- ls get a.dat mget '*.dat'

writes NAME.client (the client's commands, a fuzz_session/fuzz_cmdio seed once a settings byte
is put in front) and NAME.server (the server's replies, a fuzz_reply seed likewise). Data
connections go straight from ftpc to ftpd and are not recorded.
"""
from __future__ import annotations

import argparse
import socket
import subprocess
import sys
import tempfile
import threading
from pathlib import Path


def pump(src: socket.socket, dst: socket.socket, log: bytearray) -> None:
    while True:
        chunk = src.recv(65536)
        if not chunk:
            dst.shutdown(socket.SHUT_WR)
            return
        log += chunk
        dst.sendall(chunk)


def relay(listener: socket.socket, server_port: int, to_server: bytearray,
          to_client: bytearray) -> None:
    client, _ = listener.accept()
    server = socket.create_connection(("127.0.0.1", server_port))
    up = threading.Thread(target=pump, args=(client, server, to_server))
    up.start()
    pump(server, client, to_client)
    up.join()
    client.close()
    server.close()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", type=Path, default=Path("build"))
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("name")
    ap.add_argument("commands", nargs=argparse.REMAINDER)
    args = ap.parse_args()
    words = [c for c in args.commands if c != "--"]
    options = [c for c in words if c.startswith("--")]
    commands = [c for c in words if not c.startswith("--")]
    build = args.build.resolve()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "root"
        (root / "sub").mkdir(parents=True)
        for name, size in (("a.dat", 10), ("b.dat", 3000), ("sub/c.txt", 1)):
            (root / name).write_bytes(bytes(i % 251 for i in range(size)))
        (Path(tmp) / "dl").mkdir()
        (Path(tmp) / "up.dat").write_bytes(b"uploaded bytes\n")
        ftpd = subprocess.Popen([str(build / "ftpd"), "--root", str(root), "--tcp",
                                 "127.0.0.1:0", "--once", "--allow-upload"],
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        assert ftpd.stdout is not None
        port = int(ftpd.stdout.readline().split(":")[-1])
        listener = socket.create_server(("127.0.0.1", 0))
        listener.settimeout(30)
        to_server, to_client = bytearray(), bytearray()
        thread = threading.Thread(target=relay, args=(listener, port, to_server, to_client))
        thread.start()
        client = subprocess.run([str(build / "ftpc"), "--variant", "tcp", "--out",
                                 str(Path(tmp) / "dl"), "--timeout", "10", *options,
                                 f"127.0.0.1:{listener.getsockname()[1]}", *commands],
                                cwd=tmp, capture_output=True, text=True, timeout=60)
        thread.join(timeout=30)
        ftpd.wait(timeout=30)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"{args.name}.client").write_bytes(bytes(to_server))
    (args.out / f"{args.name}.server").write_bytes(bytes(to_client))
    sys.stderr.write(client.stderr)
    print(f"{args.name}: ftpc exit {client.returncode}, {len(to_server)} bytes up, "
          f"{len(to_client)} bytes down")
    return client.returncode


if __name__ == "__main__":
    sys.exit(main())
