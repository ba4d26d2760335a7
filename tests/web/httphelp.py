"""Starting httpd and the stock peers (lighttpd, nginx) on loopback for the host tests of
the HTTP programs; the pinned kernel's tests (SCTP) are in test_http_kernel.py."""
from __future__ import annotations

import json
import re
import signal
import socket
import struct
import subprocess
import time
import zlib
from pathlib import Path

from tests.ftp.ftphelp import fd_count, free_port

PAGE_OBJECTS = 7


def png_of_size(size: int, filler: bytes) -> bytes:
    """A valid 1x1 grey PNG of exactly `size` bytes, padded with a private ancillary chunk of
    `filler` bytes: a browser decodes it. (Random bytes named .png make Chromium cancel the
    rest of a load whose first bytes already failed to decode, closing the connection under
    the server's answer: a test of the server would then fail on the browser's doing.)"""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return (len(data).to_bytes(4, "big") + kind + data
                + zlib.crc32(kind + data).to_bytes(4, "big"))

    head = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 1, 1, 8, 0, 0, 0, 0))
    tail = chunk(b"IDAT", zlib.compress(b"\x00\x80")) + chunk(b"IEND", b"")
    pad = size - len(head) - len(tail) - 12
    if pad < 0 or len(filler) < pad:
        raise ValueError(f"cannot make a {size}-byte PNG from {len(filler)} filler bytes")
    return head + chunk(b"raNd", filler[:pad]) + tail


def make_site(root: Path, seed: int = 3) -> dict[str, bytes]:
    """The study's page: a 50 KB document naming 7 embedded 4 KB objects, plus what the
    hostile tests aim at (a subdirectory with an index, a file outside, links leaving)."""
    import random

    rng = random.Random(seed)
    root.mkdir(parents=True, exist_ok=True)
    files: dict[str, bytes] = {}
    images = "".join(f'<img src="o{i}.png">' for i in range(1, PAGE_OBJECTS + 1))
    doc = f"<!DOCTYPE html><html><body>{images}<p>".encode()
    files["page.html"] = doc + b"x" * (51_200 - len(doc) - 4) + b"</p>"
    for i in range(1, PAGE_OBJECTS + 1):
        files[f"o{i}.png"] = png_of_size(4096, rng.randbytes(4096))
    files["sub/index.html"] = b"inner\n"
    for name, data in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(data)
    outside = root.parent / "outside"
    outside.mkdir(exist_ok=True)
    (outside / "secret.txt").write_text("secret\n")
    (root / "outlink").symlink_to(outside)
    (root / "outfile").symlink_to(outside / "secret.txt")
    return files


def page_paths() -> list[str]:
    return ["/page.html"] + [f"/o{i}.png" for i in range(1, PAGE_OBJECTS + 1)]


class Httpd:
    """httpd on 127.0.0.1 with a free port, its log in the test's folder."""

    def __init__(self, bindir: Path, root: Path, *args: str, tmp: Path) -> None:
        tmp.mkdir(parents=True, exist_ok=True)
        self.log = tmp / "httpd.log"
        self.port = free_port()
        with open(tmp / "httpd.stderr", "w") as err:
            self.proc = subprocess.Popen(
                [str(bindir / "httpd"), "--root", str(root), "--listen",
                 f"127.0.0.1:{self.port}", "--log", str(self.log), *args],
                stdout=subprocess.PIPE, stderr=err, text=True)
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if line.strip() == "ready":
                break
        else:
            raise AssertionError(f"httpd did not start: {(tmp / 'httpd.stderr').read_text()}")
        self.url = f"http://127.0.0.1:{self.port}"
        self.idle_fds = self.fds()

    def alive(self) -> bool:
        return self.proc.poll() is None

    def fds(self) -> int:
        return fd_count(self.proc.pid)

    def children(self) -> list[int]:
        out = subprocess.run(["pgrep", "-P", str(self.proc.pid)], capture_output=True,
                             text=True).stdout
        return [int(p) for p in out.split()]

    def settle(self, timeout: float = 10.0) -> None:
        """Every connection has ended, in a process of its own or in the server's (the
        lingering close takes up to 2 s): no child left, the server's descriptors as idle."""
        deadline = time.monotonic() + timeout
        while ((self.children() or self.fds() > self.idle_fds)
               and time.monotonic() < deadline):
            time.sleep(0.05)
        assert not self.children(), "connection processes still running"
        assert self.fds() == self.idle_fds, "the server still holds connections"

    def logtext(self) -> str:
        return self.log.read_text() if self.log.exists() else ""

    def stop(self) -> None:
        if self.alive():
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def raw(port: int, data: bytes, timeout: float = 10.0, shut: bool = True,
        source: str | None = None) -> bytes:
    """Send bytes on a new connection (from the address `source`, if given), read until the
    server closes."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout,
                                  source_address=(source, 0) if source else None) as s:
        s.sendall(data)
        if shut:
            s.shutdown(socket.SHUT_WR)
        chunks = []
        while True:
            try:
                chunk = s.recv(1 << 16)
            except ConnectionResetError:
                break
            if not chunk:
                break
            chunks.append(chunk)
        return b"".join(chunks)


def statuses(reply: bytes) -> list[int]:
    return [int(m) for m in re.findall(rb"HTTP/1\.1 (\d{3}) ", reply)]


def run_httpc(bindir: Path, *args: str, timeout: float = 120) -> tuple[int, list[dict], str]:
    proc = subprocess.run([str(bindir / "httpc"), *args], capture_output=True, text=True,
                          timeout=timeout)
    events = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    return proc.returncode, events, proc.stderr


def stock_server(kind: str, root: Path, tmp: Path) -> tuple[subprocess.Popen, int]:
    """lighttpd or nginx serving root on 127.0.0.1 in the foreground, configured as
    `testbed bench http` configures it."""
    from experiments.benchmarks.http_servers import stock_server_argv, wait_listening

    port = free_port()
    tmp.mkdir(parents=True, exist_ok=True)
    with open(tmp / "stderr", "w") as err:
        proc = subprocess.Popen(stock_server_argv(kind, root, port, tmp),
                                stdout=subprocess.DEVNULL, stderr=err)
    if not wait_listening(port):
        proc.kill()
        raise AssertionError(f"{kind} did not start: {(tmp / 'stderr').read_text()}")
    return proc, port


def wait_gone(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()



