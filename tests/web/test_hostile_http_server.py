"""httpc against a hostile or broken web server (a scripted server on loopback): answers cut
at every byte are read right; everything else is refused with a clear error and exit 1 within
a bounded time, nothing is written outside the output folder, and no object keeps its final
name unless it arrived whole."""
from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.web.httphelp import run_httpc

TIMEOUT_S = 2          # httpc --timeout: its longest wait without progress
BOUND_S = 8            # every hostile page is over within this


class Scripted:
    """A one-connection server: `script(conn)` is run on the accepted connection."""

    def __init__(self, script: Callable[[socket.socket], None]) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.thread = threading.Thread(target=self._serve, args=(script,), daemon=True)
        self.thread.start()

    def _serve(self, script: Callable[[socket.socket], None]) -> None:
        conn, _ = self.listener.accept()
        try:
            script(conn)
        except OSError:
            pass
        finally:
            conn.close()

    def close(self) -> None:
        self.listener.close()
        self.thread.join(10)


def read_request(conn: socket.socket) -> bytes:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(4096)
        if not chunk:
            break
        data += chunk
    return data


def answer(body: bytes, extra: str = "") -> bytes:
    return f"HTTP/1.1 200 OK\r\nContent-Length: {len(body)}\r\n{extra}\r\n".encode() + body


def fetch(bindir: Path, box: Path, script: Callable[[socket.socket], None],
          *paths: str) -> tuple[int, str, float, Path]:
    out = box / "out"
    out.mkdir(parents=True)
    server = Scripted(script)
    t0 = time.monotonic()
    rc, _, err = run_httpc(bindir, "--proto", "tcp", "--server", f"127.0.0.1:{server.port}",
                           "--timeout", str(TIMEOUT_S), "--out", str(out), *paths, timeout=60)
    took = time.monotonic() - t0
    server.close()
    return rc, err, took, out


def test_answers_split_at_every_byte_are_read_right(bindir, tmp_path):
    doc, obj = bytes(range(256)) * 8, b"o" * 3000

    def script(conn: socket.socket) -> None:
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        read_request(conn)
        for byte in answer(doc):
            conn.send(bytes([byte]))
        read_request(conn)
        for i in range(0, len(answer(obj)), 7):
            conn.send(answer(obj)[i:i + 7])
        time.sleep(0.5)

    rc, err, _, out = fetch(bindir, tmp_path, script, "/doc.html", "/obj.bin")
    assert rc == 0, err
    assert (out / "doc.html").read_bytes() == doc and (out / "obj.bin").read_bytes() == obj


HOSTILE = {
    "fewer bytes than announced, then close": (
        lambda c: (read_request(c), c.sendall(answer(b"x" * 100)[:-40])),
        "closed the connection"),
    "fewer bytes than announced, then silence": (
        lambda c: (read_request(c), c.sendall(answer(b"x" * 100)[:-40]), time.sleep(5)),
        "no answer for 2 s"),
    "bytes beyond the last answer": (
        lambda c: (read_request(c), c.sendall(answer(b"x" * 10) + b"GARBAGE"),
                   time.sleep(1)),
        "beyond the last answer"),
    "an endless head": (
        lambda c: (read_request(c), c.sendall(b"HTTP/1.1 200 OK\r\n" + b"X-A: b\r\n" * 5000),
                   time.sleep(2)),
        "head too long"),
    "a NUL byte in the head": (
        lambda c: (read_request(c), c.sendall(b"HTTP/1.1 200 OK\r\nX\x00: 1\r\n"
                                              b"Content-Length: 1\r\n\r\nx"), time.sleep(1)),
        "NUL byte"),
    "a bare LF in the head": (
        lambda c: (read_request(c), c.sendall(b"HTTP/1.1 200 OK\nContent-Length: 1\n\nx"),
                   time.sleep(1)),
        "bare CR or LF"),
    "no status line": (
        lambda c: (read_request(c), c.sendall(b"SSH-2.0-OpenSSH\r\n\r\n"), time.sleep(1)),
        "malformed status line"),
    "two different lengths": (
        lambda c: (read_request(c), c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\n"
                                              b"Content-Length: 2\r\n\r\nxx"), time.sleep(1)),
        "malformed header field"),
    "a length past 2^62": (
        lambda c: (read_request(c), c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: "
                                              b"99999999999999999999\r\n\r\n"), time.sleep(1)),
        "malformed header field"),
    "chunked": (
        lambda c: (read_request(c), c.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked"
                                              b"\r\n\r\n1\r\nx\r\n0\r\n\r\n"), time.sleep(1)),
        "chunked transfer coding is not supported"),
    "no length": (
        lambda c: (read_request(c), c.sendall(b"HTTP/1.1 200 OK\r\n\r\nxxxx"), time.sleep(1)),
        "no Content-Length"),
    "silence": (lambda c: (read_request(c), time.sleep(5)), "no answer for 2 s"),
    "a 101 nobody asked for": (
        lambda c: (read_request(c), c.sendall(b"HTTP/1.1 101 Switching Protocols\r\n"
                                              b"Upgrade: h2c\r\nConnection: Upgrade\r\n\r\n"),
                   time.sleep(1)),
        "101 Switching Protocols"),
    "a 404": (lambda c: (read_request(c), c.sendall(b"HTTP/1.1 404 Not Found\r\n"
                                                    b"Content-Length: 0\r\n\r\n"),
                         time.sleep(1)), "status 404"),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_a_hostile_server_is_refused_cleanly(bindir, tmp_path, case):
    script, said = HOSTILE[case]
    rc, err, took, out = fetch(bindir, tmp_path, script, "/doc.html")
    assert rc == 1 and said in err, err
    assert took < BOUND_S
    assert [p.name for p in tmp_path.iterdir()] == ["out"]
    if case == "bytes beyond the last answer":     # the object itself came whole
        assert (out / "doc.html").read_bytes() == b"x" * 10
    else:
        assert not (out / "doc.html").exists()
    assert {p.name for p in out.iterdir()} <= {"doc.html", "doc.html.part"}


def test_a_server_that_answers_early_closes_is_refused_for_the_rest(bindir, tmp_path):
    def script(conn: socket.socket) -> None:
        read_request(conn)
        conn.sendall(answer(b"d" * 10, "Connection: close\r\n"))

    rc, err, _, out = fetch(bindir, tmp_path, script, "/doc.html", "/o1.png")
    assert rc == 1 and "closed the connection after /doc.html" in err
    assert (out / "doc.html").read_bytes() == b"d" * 10 and not (out / "o1.png").exists()


def test_interim_answers_before_the_final_one_are_skipped(bindir, tmp_path):
    """RFC 9110 15.2: a client parses and skips 1xx answers (101 aside) before the final one,
    whole or cut anywhere, several in a row, with fields of their own."""
    doc, obj = b"d" * 3000, b"o" * 500

    def script(conn: socket.socket) -> None:
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        read_request(conn)
        conn.sendall(b"HTTP/1.1 100 Continue\r\n\r\n" + answer(doc))
        read_request(conn)
        for byte in b"HTTP/1.1 103 Early Hints\r\nLink: </obj.bin>; rel=preload\r\n\r\n":
            conn.send(bytes([byte]))
        conn.sendall(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 102 Processing\r\n\r\n"
                     + answer(obj))
        time.sleep(0.5)

    rc, err, _, out = fetch(bindir, tmp_path, script, "/doc.html", "/obj.bin")
    assert rc == 0, err
    assert (out / "doc.html").read_bytes() == doc and (out / "obj.bin").read_bytes() == obj


def trickled_lines(conn: socket.socket) -> None:
    read_request(conn)
    conn.sendall(b"HTTP/1.1 200 OK\r\n")
    for i in range(40):                 # 20 s of a line each 0.5 s, far below the head limit
        conn.sendall(b"X-Line-%d: y\r\n" % i)
        time.sleep(0.5)


def trickled_interim_answers(conn: socket.socket) -> None:
    read_request(conn)
    for _ in range(40):
        conn.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")
        time.sleep(0.5)


@pytest.mark.parametrize("script", [trickled_lines, trickled_interim_answers])
def test_a_head_that_trickles_in_is_cut_off_at_the_timeout(bindir, tmp_path, script):
    rc, err, took, out = fetch(bindir, tmp_path, script, "/doc.html")
    assert rc == 1 and f"within {TIMEOUT_S} s" in err, err
    assert took < TIMEOUT_S + 1.5, took
    assert not (out / "doc.html").exists()
