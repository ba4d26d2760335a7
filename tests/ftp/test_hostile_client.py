"""ftpd against hostile clients, beyond test_bad_input.py: line ends and NUL bytes inside
arguments, 10^5 commands in one write, 200 sessions at once, a client that sends one byte at
a time, numbers that overflow. After each, ftpd's main process holds the fds it held before
and has no session process left."""
from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.ftp import ftphelp
from tests.ftp.ftphelp import Ctl


def settled(s: ftphelp.Ftpd, seconds: float = 10) -> tuple[int, int]:
    """(fds of the main process, session processes) once no session is left."""
    deadline = time.monotonic() + seconds
    while ftphelp.children(s.pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return ftphelp.fd_count(s.pid), len(ftphelp.children(s.pid))


@pytest.fixture
def guarded(ftpd) -> Iterator:
    """ftpd whose fd and process counts are checked after the test's hostile sessions."""
    started: list[tuple[ftphelp.Ftpd, tuple[int, int]]] = []

    def start(*args: str) -> ftphelp.Ftpd:
        s = ftpd(*args)
        started.append((s, settled(s)))
        return s

    yield start
    for s, before in started:
        assert settled(s) == before, "fds or session processes left behind"
        assert s.alive()


def raw_lines(c: Ctl, n: int) -> list[bytes]:
    """The next n reply lines as sent, line end included."""
    out = []
    while len(out) < n:
        while b"\n" not in c.buf:
            chunk = c.s.recv(65536)
            assert chunk, "closed"
            c.buf += chunk
        line, c.buf = c.buf.split(b"\n", 1)
        out.append(line + b"\n")
    return out


def test_line_ends_and_nul_inside_arguments(guarded, tree):
    s = guarded()
    c = Ctl(s.port)
    c.login()
    # a bare CR inside an argument stays in it (no such file), and is never echoed raw
    c.send(b"RETR s000.dat\rRETR s001.dat\r\n")
    # a bare LF ends a command: two commands
    c.send(b"NOOP\nSIZE s000.dat\r\n")
    c.send(b"SIZE s000\x00.dat\r\n")                          # NUL inside a path
    c.send(b"SIZE \r\n")                                      # CR LF right after the verb
    c.send(b"MKD a\r\nb\r\n")                                  # an argument cut by CR LF
    lines = raw_lines(c, 7)
    assert all(line.endswith(b"\r\n") and b"\r" not in line[:-2] for line in lines), lines
    codes = [int(line[:3]) for line in lines]
    # the last two: MKD (not implemented) and "b", the argument's rest, a command of its own
    assert codes == [550, 200, 213, 500, 501, 500, 500], lines
    assert c.cmd("SIZE s000.dat") == (213, "10000")
    c.close()
    assert "REFUSED command line with NUL bytes" in s.logtext()


def vm_kb(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise AssertionError(f"no {field} for {pid}")


def test_100000_pipelined_commands_in_one_write(guarded, tree):
    s = guarded()
    c = Ctl(s.port, timeout=60)
    c.login()
    (child,) = ftphelp.children(s.pid)
    assert c.cmd("NOOP")[0] == 200
    before = vm_kb(child, "VmHWM")
    n = 100_000
    burst = b"".join(b"SIZE s%03d.dat\r\n" % (i % 5) if i % 2 else b"NOOP\r\n"
                     for i in range(n))
    sender = threading.Thread(target=c.s.sendall, args=(burst,))
    sender.start()                                # one write; read the replies meanwhile
    lines = raw_lines(c, n)
    sender.join()
    for i, line in enumerate(lines):              # answered in order, each exactly once
        assert line == (b"213 10000\r\n" if i % 2 else b"200 NOOP ok.\r\n"), (i, line)
    grown = vm_kb(child, "VmHWM") - before
    assert grown < 8 * 1024, f"session grew by {grown} KB"   # its input buffer is bounded
    assert c.cmd("QUIT")[0] == 221
    c.close()


def test_200_sessions_at_once(guarded, tree):
    s = guarded("--max-clients", "150", "--max-per-ip", "1000")
    conns = [socket.create_connection(("127.0.0.1", s.port), timeout=30) for _ in range(200)]
    greetings = []
    for sock in conns:
        greetings.append(sock.makefile("rb").readline())
    served = [sock for sock, g in zip(conns, greetings, strict=True) if g.startswith(b"220")]
    refused = [g for g in greetings if g.startswith(b"421")]
    assert len(served) == 150 and len(refused) == 50
    for sock in served:
        sock.sendall(b"USER anonymous\r\n")
    for sock in served:
        f = sock.makefile("rb")
        assert f.readline().startswith(b"331")
    assert len(ftphelp.children(s.pid)) == 150
    for sock in conns:
        sock.close()
    assert s.logtext().count("REFUSED connection: 150 clients already") == 50


def test_one_byte_at_a_time_is_ended_by_the_timeout(guarded, tree):
    s = guarded("--idle-timeout", "2")
    c = Ctl(s.port)
    assert c.reply()[0] == 220
    t0 = time.monotonic()
    with pytest.raises(OSError):
        for byte in b"USER anonymous-and-a-very-long-name-that-never-ends" * 10:
            c.s.send(bytes([byte]))
            time.sleep(0.25)                      # progress, but never a whole line
    took = time.monotonic() - t0
    assert 1.5 < took < 4, took                   # trickling does not extend the limit
    assert b"421 Timeout." in c.buf + c.s.recv(100)
    c.close()
    assert "TIMEOUT after 2 s idle" in s.logtext()


@pytest.mark.parametrize("cmd,code", [
    ("REST 18446744073709551616", 501),           # 2^64
    ("REST 9223372036854775808", 501),            # 2^63: beyond off_t
    ("REST 99999999999999999999999999999999", 501),
    ("REST -1", 501),
    ("REST 1e3", 501),
    ("REST 9223372036854775807", 350),            # the largest offset, accepted ...
    ("ALLO 18446744073709551616", 202),           # ignored outside multistream mode
    ("SIZE 18446744073709551616", 550),
])
def test_numbers_that_overflow(guarded, tree, cmd: str, code: int):
    s = guarded()
    c = Ctl(s.port)
    c.login()
    assert c.cmd(cmd)[0] == code
    d = c.pasv()
    c.send("RETR s000.dat\r\n")                   # ... then refused by RETR if it was set
    got = c.reply()[0]
    assert got == (554 if code == 350 else 150), got
    if got == 150:
        while d.recv(65536):
            pass
        assert c.reply()[0] == 226
    d.close()
    assert c.cmd("NOOP")[0] == 200
    c.close()
