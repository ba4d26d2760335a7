"""httpd's event loop (--write-size 0): TCP connections served in the server's own process,
a connection that asks for a file larger than 16 KB handed to a process of its own, and
neither a client that stops reading nor a slow one holding up anyone else."""
from __future__ import annotations

import re
import socket
import subprocess
import time

import pytest

from tests.web.httphelp import page_paths


@pytest.fixture(params=["whole"])
def answers(request) -> tuple[str, ...]:
    """Only the event loop's way of serving (see conftest.answers)."""
    return ("--write-size", "0")


def read_answers(sock: socket.socket, heads_only: list[bool]) -> list[tuple[int, bytes]]:
    """(status, body) of as many answers as heads_only has entries, read in order."""
    data, out = b"", []
    for head_only in heads_only:
        while b"\r\n\r\n" not in data:
            chunk = sock.recv(1 << 16)
            assert chunk, f"closed after {len(out)} answers"
            data += chunk
        head, data = data.split(b"\r\n\r\n", 1)
        status = int(head.split(b" ", 2)[1])
        length = 0 if head_only else int(re.search(rb"Content-Length: (\d+)", head)[1])
        while len(data) < length:
            chunk = sock.recv(1 << 16)
            assert chunk, "closed in a body"
            data += chunk
        out.append((status, data[:length]))
        data = data[length:]
    return out


def get(path: str, close: bool = False, method: str = "GET") -> bytes:
    return (f"{method} {path} HTTP/1.1\r\nHost: x\r\n"
            f"{'Connection: close' + chr(13) + chr(10) if close else ''}\r\n").encode()


def unsent_bytes(client_port: int) -> int:
    """The server's send queue towards the client at client_port (ss)."""
    out = subprocess.run(["ss", "-Htn", "dst", f"127.0.0.1:{client_port}"],
                         capture_output=True, text=True, check=True).stdout.split()
    return int(out[2])                              # State Recv-Q Send-Q ...


def connection_pids(log: str) -> dict[str, set[int]]:
    """Which processes logged each peer's lines."""
    pids: dict[str, set[int]] = {}
    for pid, peer in re.findall(r"\[pid (\d+)\] \[([^\]]+)\]", log):
        pids.setdefault(peer, set()).add(int(pid))
    return pids


def test_keep_alive_connections_are_served_by_the_server_s_own_process(httpd, site):
    s = httpd()
    conns = [socket.create_connection(("127.0.0.1", s.port), timeout=10) for _ in range(8)]
    for _ in range(3):
        for c in conns:
            c.sendall(get("/o1.png"))
        for c in conns:
            assert read_answers(c, [False]) == [(200, site[1]["o1.png"])]
    assert s.children() == []                       # no process per connection
    assert s.fds() > s.idle_fds                     # the server holds them itself
    for c in conns:
        c.close()
    s.settle()
    pids = connection_pids(s.logtext())
    served = [peer for peer in pids if peer not in ("-",)]
    assert len(served) == 8 and all(pids[p] == {s.proc.pid} for p in served)


def test_a_large_file_hands_the_connection_to_a_process_that_goes_on_with_it(httpd, site):
    s = httpd()
    with socket.create_connection(("127.0.0.1", s.port), timeout=10) as c:
        c.sendall(get("/o1.png"))
        assert read_answers(c, [False]) == [(200, site[1]["o1.png"])]
        # pipelined: answered in order, across the hand-off in the middle of the batch
        c.sendall(get("/o2.png") + get("/page.html") + get("/o3.png") +
                  get("/o4.png", method="HEAD") + get("/nothere") + get("/o5.png", close=True))
        got = read_answers(c, [False, False, False, True, False, False])
        assert [status for status, _ in got] == [200, 200, 200, 200, 404, 200]
        assert got[0][1] == site[1]["o2.png"] and got[1][1] == site[1]["page.html"]
        assert got[2][1] == site[1]["o3.png"] and got[5][1] == site[1]["o5.png"]
        assert c.recv(1) == b""                      # Connection: close honoured
    s.settle()
    log = s.logtext()
    pids = [pids for peer, pids in connection_pids(log).items() if peer != "-"]
    assert len(pids) == 1 and len(pids[0]) == 2     # the server, then its child
    assert "CLOSE after 7 requests" in log and s.alive()


def test_a_client_that_stops_reading_holds_up_no_one(httpd, site):
    s = httpd()
    hog = socket.create_connection(("127.0.0.1", s.port), timeout=30)
    count = 3000                                    # 12 MB of answers nobody reads for now
    hog.sendall(get("/o1.png") * count)
    time.sleep(0.5)
    assert unsent_bytes(hog.getsockname()[1]) > 0   # the server cannot send: it waits
    with socket.create_connection(("127.0.0.1", s.port), timeout=10) as other:
        started = time.monotonic()
        for path in page_paths() * 5:
            other.sendall(get(path))
            assert read_answers(other, [False]) == [(200, site[1][path.lstrip("/")])]
        took = time.monotonic() - started
    assert took < 5, f"40 requests beside the stalled client took {took:.1f} s"
    got = read_answers(hog, [False] * count)        # then it reads: every answer, in order
    assert all(answer == (200, site[1]["o1.png"]) for answer in got)
    hog.close()
    s.settle()
    assert s.alive()


def test_a_reader_that_stalls_is_dropped_at_the_idle_limit(httpd, site):
    s = httpd("--idle-timeout", "2")
    hog = socket.create_connection(("127.0.0.1", s.port), timeout=30)
    hog.sendall(get("/o1.png") * 3000)
    started = time.monotonic()
    s.settle(timeout=10)                            # gone without the client doing anything
    assert time.monotonic() - started < 8
    assert "TIMEOUT send" in s.logtext() and s.alive()
    hog.close()
