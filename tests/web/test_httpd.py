"""httpd over TCP on loopback against clients nobody here wrote (curl, Python's http.client,
h2load's pipelining, headless Chromium), and against hostile input: every bad request gets
its status or a closed connection, the server stays up and leaks no descriptor."""
from __future__ import annotations

import hashlib
import http.client
import re
import shutil
import socket
import subprocess
import time

import pytest

from tests.web.httphelp import page_paths, raw, statuses


def curl(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(["curl", "-sS", *args], capture_output=True, timeout=timeout)


def test_curl_reuses_one_connection_and_gets_heads_and_404(httpd, site):
    s = httpd()
    urls = [f"{s.url}/page.html", f"{s.url}/o1.png", f"{s.url}/nothere", f"{s.url}/sub/"]
    out = curl("-w", "%{http_code} %{size_download} %{num_connects}\n",
               *[arg for url in urls for arg in ("-o", "/dev/null", url)])
    assert out.returncode == 0, out.stderr
    rows = [line.split() for line in out.stdout.decode().splitlines()]
    assert [r[0] for r in rows] == ["200", "200", "404", "200"]
    assert rows[0][1] == "51200" and rows[1][1] == "4096" and rows[3][1] == "6"
    assert [r[2] for r in rows] == ["1", "0", "0", "0"]      # one connection for all four
    head = curl("-I", f"{s.url}/o2.png")
    assert b"HTTP/1.1 200 OK" in head.stdout and b"Content-Length: 4096" in head.stdout
    s.settle()
    assert s.logtext().count("CONNECT tcp") == 2


def test_a_100_mb_file_arrives_byte_exact(httpd, site, tmp_path):
    big = site[0] / "big.bin"
    with big.open("wb") as f:
        for i in range(100):
            f.write(hashlib.sha256(str(i).encode()).digest() * 32768)
    got = tmp_path / "got.bin"
    out = curl("-o", str(got), f"{httpd().url}/big.bin", timeout=300)
    assert out.returncode == 0, out.stderr
    assert got.stat().st_size == 100 * (1 << 20)
    assert got.read_bytes() == big.read_bytes()


def test_python_http_client_on_a_persistent_connection(httpd, site):
    s = httpd()
    conn = http.client.HTTPConnection("127.0.0.1", s.port, timeout=10)
    for path in page_paths():
        conn.request("GET", path)
        resp = conn.getresponse()
        assert resp.status == 200 and resp.read() == site[1][path.lstrip("/")]
    conn.request("HEAD", "/o3.png")
    resp = conn.getresponse()
    assert resp.status == 200 and resp.getheader("Content-Length") == "4096"
    assert resp.read() == b""
    conn.request("GET", "/missing.png")
    resp = conn.getresponse()
    assert resp.status == 404 and b"404" in resp.read()
    conn.request("GET", "/o4.png")
    assert conn.getresponse().read() == site[1]["o4.png"]
    conn.close()
    s.settle()
    assert s.logtext().count("CONNECT tcp") == 1
    assert "CLOSE after 11 requests" in s.logtext()


@pytest.mark.parametrize("request_bytes, want", [
    (b"GET /" + b"a" * 3000 + b" HTTP/1.1\r\nHost: x\r\n\r\n", 414),
    (b"GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + b"b" * 9000 + b"\r\n\r\n", 431),
    (b"GET / HTTP/1.1\r\nHost: x\r\n" + b"X-A: 1\r\n" * 150 + b"\r\n", 431),
    (b"GARBAGE\r\n\r\n", 400),
    (b"GET /page.html HTTP/1.1\r\n\r\n", 400),                        # no Host
    (b"GET /page.html HTTP/2.0\r\nHost: x\r\n\r\n", 505),
    (b"POST /page.html HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc", 405),
    (b"GET /page\x00.html HTTP/1.1\r\nHost: x\r\n\r\n", 400),
    (b"GET /page%00.html HTTP/1.1\r\nHost: x\r\n\r\n", 400),
    (b"GET /page.html HTTP/1.1\nHost: x\n\n", 400),                   # bare LF
    (b"GET /page.html HTTP/1.1\r\nHost: x\r\n folded\r\n\r\n", 400),
    (b"GET /../../../etc/passwd HTTP/1.1\r\nHost: x\r\n\r\n", 403),
    (b"GET /%2e%2e/%2e%2e/etc/passwd HTTP/1.1\r\nHost: x\r\n\r\n", 403),
    (b"GET /outfile HTTP/1.1\r\nHost: x\r\n\r\n", 403),
    (b"GET /outlink/secret.txt HTTP/1.1\r\nHost: x\r\n\r\n", 403),
    (b"GET http://evil/ HTTP/1.1\r\nHost: x\r\n\r\n", 400),
    (b"GET /page.html HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n"
     b"Transfer-Encoding: chunked\r\n\r\n", 400),
])
def test_hostile_requests_get_their_status_and_the_server_stays_whole(httpd, request_bytes,
                                                                      want):
    s = httpd()
    before = s.fds()
    reply = raw(s.port, request_bytes)
    assert statuses(reply)[:1] == [want], reply[:300]
    assert b"secret" not in reply
    s.settle()
    assert s.alive() and s.fds() == before


def test_links_that_stay_inside_the_root_are_followed(httpd, site):
    root, files = site
    (root / "inlink").symlink_to("sub")
    (root / "absfile").symlink_to(root / "o1.png")      # absolute, but inside
    (root / "sub" / "up").symlink_to("../o3.png")
    s = httpd()
    conn = http.client.HTTPConnection("127.0.0.1", s.port, timeout=10)
    for path, want in [("/inlink/", files["sub/index.html"]), ("/absfile", files["o1.png"]),
                       ("/sub/up", files["o3.png"]), ("/inlink/../o2.png", files["o2.png"]),
                       ("/outlink/secret.txt", None), ("/sub/../outfile", None)]:
        conn.request("GET", path)
        resp = conn.getresponse()
        body = resp.read()
        assert (resp.status, body) == (200, want) if want else resp.status == 403, path
    conn.close()


def test_a_file_replaced_on_disk_is_served_anew_on_the_same_connection(httpd, site):
    root, files = site
    s = httpd()
    before = s.fds()
    conn = http.client.HTTPConnection("127.0.0.1", s.port, timeout=10)

    def get(path):
        conn.request("GET", path)
        resp = conn.getresponse()
        return resp.status, resp.read()

    assert get("/o1.png") == (200, files["o1.png"])
    assert get("/o1.png") == (200, files["o1.png"])     # again: the file kept open
    assert get("/o2.png") == (200, files["o2.png"])
    (root / "o1.new").write_bytes(b"replaced\n")
    (root / "o1.new").replace(root / "o1.png")
    time.sleep(1.2)                                     # past HTTP_TARGET_CACHE_MS
    assert get("/o1.png") == (200, b"replaced\n")
    (root / "o1.png").unlink()
    time.sleep(1.2)
    assert get("/o1.png")[0] == 404
    conn.close()
    s.settle()
    assert s.alive() and s.fds() == before


def test_ten_thousand_pipelined_requests_in_one_write_are_answered_in_order(httpd, site):
    s = httpd("--max-requests", "20000")
    names = [f"o{1 + i % 7}.png" for i in range(10_000)]
    batch = b"".join(f"HEAD /{n} HTTP/1.1\r\nHost: x\r\n\r\n".encode() for n in names)
    batch += b"GET /o1.png HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    reply = raw(s.port, batch, timeout=60, shut=False)
    assert statuses(reply) == [200] * 10_001
    assert reply.endswith(site[1]["o1.png"])
    assert reply.count(b"Connection: close") == 1
    s.settle()
    assert "CLOSE after 10001 requests" in s.logtext()


def test_the_request_limit_closes_the_connection_after_its_last_answer(httpd):
    s = httpd("--max-requests", "3")
    batch = b"HEAD /o1.png HTTP/1.1\r\nHost: x\r\n\r\n" * 5
    reply = raw(s.port, batch, shut=False)
    assert statuses(reply) == [200] * 3
    assert reply.count(b"Connection: close") == 1


def test_a_slow_client_gets_408_and_an_idle_one_is_dropped(httpd):
    s = httpd("--header-timeout", "2", "--idle-timeout", "2")
    before = s.fds()
    with socket.create_connection(("127.0.0.1", s.port), timeout=10) as c:
        start = time.monotonic()
        reply = b""
        for byte in b"GET /page.html HTTP/1.1\r\nHost: x\r\n":
            try:
                c.send(bytes([byte]))
            except OSError:
                break
            time.sleep(0.25)
            if time.monotonic() - start > 4:
                break
        c.settimeout(5)
        try:
            while chunk := c.recv(4096):
                reply += chunk
        except (ConnectionResetError, TimeoutError):
            pass
        assert statuses(reply) == [408]
        assert time.monotonic() - start < 6
    with socket.create_connection(("127.0.0.1", s.port), timeout=10) as c:
        start = time.monotonic()
        assert c.recv(10) == b""                    # nothing sent: closed after 2 s
        assert 1.5 < time.monotonic() - start < 5
    s.settle()
    assert s.alive() and s.fds() == before


def test_past_the_client_limit_a_503_and_the_rest_served(httpd):
    s = httpd("--max-clients", "2")
    held = [socket.create_connection(("127.0.0.1", s.port)) for _ in range(2)]
    time.sleep(0.3)
    third = raw(s.port, b"GET /o1.png HTTP/1.1\r\nHost: x\r\n\r\n")
    assert statuses(third) == [503]
    for c in held:
        c.sendall(b"GET /o1.png HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        data = b""
        while chunk := c.recv(65536):
            data += chunk
        assert statuses(data) == [200]
        c.close()
    assert "REFUSED connection: 2 clients already" in s.logtext()


def test_h2load_pipelines_against_httpd(httpd):
    h2load = shutil.which("h2load")
    assert h2load, "h2load is missing: make setup-test installs nghttp2-client"
    s = httpd()
    out = subprocess.run([h2load, "--h1", "-n", "2000", "-c", "4", "-m", "16",
                          f"{s.url}/o1.png"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    m = re.search(r"requests: (\d+) total, (\d+) started, (\d+) done, (\d+) succeeded, "
                  r"(\d+) failed, (\d+) errored", out.stdout)
    assert m and m.group(4) == "2000" and m.group(5) == "0", out.stdout
    assert re.search(r"status codes: 2000 2xx", out.stdout), out.stdout
    s.settle()
    assert s.logtext().count("CONNECT tcp") == 4


def test_chromium_loads_the_page_and_every_object(httpd, tmp_path):
    chromium = shutil.which("chromium")
    assert chromium, "chromium is missing: make setup-test installs it"
    s = httpd()
    profile = tmp_path / "profile"
    profile.mkdir()
    out = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu",
                          "--disable-background-networking", "--no-first-run",
                          f"--user-data-dir={profile}", "--virtual-time-budget=5000",
                          "--dump-dom", f"{s.url}/page.html"],
                         capture_output=True, text=True, timeout=180)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.count("<img") == 7
    log = s.logtext()
    assert "GET /page.html 200 51200" in log
    for i in range(1, 8):
        assert f"GET /o{i}.png 200 4096" in log, log


def test_started_as_root_it_serves_as_nobody(httpd):
    import os
    import pwd
    from pathlib import Path

    s = httpd()
    status = Path(f"/proc/{s.proc.pid}/status").read_text()
    uids = next(line for line in status.splitlines() if line.startswith("Uid:")).split()[1:]
    if os.geteuid() == 0:
        assert {int(u) for u in uids} == {pwd.getpwnam("nobody").pw_uid}
    assert statuses(raw(s.port, b"GET /o1.png HTTP/1.1\r\nHost: x\r\n\r\n", shut=True)) == [200]


def test_past_the_per_address_limit_a_503_and_other_addresses_served(httpd):
    s = httpd("--max-per-ip", "3")
    held = [socket.create_connection(("127.0.0.1", s.port), timeout=10) for _ in range(3)]
    time.sleep(0.3)
    get = b"GET /o1.png HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    assert statuses(raw(s.port, get)) == [503]                   # a fourth from 127.0.0.1
    assert statuses(raw(s.port, get, source="127.0.0.2")) == [200]
    for c in held:                                               # the three are served
        c.sendall(get)
        data = b""
        while chunk := c.recv(65536):
            data += chunk
        assert statuses(data) == [200]
        c.close()
    assert "REFUSED connection from 127.0.0.1: 3 connections from it already" in s.logtext()


def test_idle_connections_from_one_address_leave_room_for_others(httpd):
    s = httpd()                                   # --max-clients 50 and the default per address
    held = [socket.create_connection(("127.0.0.1", s.port), timeout=10) for _ in range(50)]
    time.sleep(0.5)
    get = b"GET /o1.png HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    assert statuses(raw(s.port, get, source="127.0.0.2")) == [200]
    for c in held:
        c.close()
    assert "REFUSED connection from 127.0.0.1: 16 connections from it already" in s.logtext()


def test_a_directory_s_index_is_served_with_its_own_type(httpd, site):
    root, files = site
    (root / "index.html").write_bytes(b"<!DOCTYPE html><a href=page.html>page</a>\n")
    s = httpd()
    conn = http.client.HTTPConnection("127.0.0.1", s.port, timeout=10)
    for path, want in [("/", "text/html"), ("/sub/", "text/html"), ("/sub/index.html", "text/html"),
                       ("/page.html", "text/html"), ("/o1.png", "image/png")]:
        for method in ("GET", "HEAD"):
            conn.request(method, path)
            resp = conn.getresponse()
            resp.read()
            assert (resp.status, resp.getheader("Content-Type")) == (200, want), (method, path)
    conn.close()


def test_a_directory_named_without_its_slash_is_redirected_to_it(httpd, site):
    s = httpd()
    conn = http.client.HTTPConnection("127.0.0.1", s.port, timeout=10)
    for method, path, where in [("GET", "/sub", "/sub/"), ("HEAD", "/sub", "/sub/"),
                                ("GET", "/sub?x=1", "/sub/?x=1"), ("GET", "/s%75b", "/s%75b/")]:
        conn.request(method, path)
        resp = conn.getresponse()
        body = resp.read()
        assert (resp.status, resp.getheader("Location")) == (301, where), (method, path)
        assert method == "HEAD" or b"301" in body
    conn.request("GET", "/sub/")                    # the same connection goes on
    resp = conn.getresponse()
    assert (resp.status, resp.read()) == (200, site[1]["sub/index.html"])
    conn.close()
    out = curl("-L", "-w", "%{http_code} %{num_redirects} %{url_effective}", f"{s.url}/sub")
    assert out.returncode == 0, out.stderr
    assert out.stdout == site[1]["sub/index.html"] + f"200 1 {s.url}/sub/".encode()
    assert "GET /sub 301" in s.logtext()


@pytest.mark.parametrize("answers", [(), ("--write-size", "16384"), ("--write-size", "0")],
                         ids=["1k-writes", "16k-writes", "whole"])
def test_a_client_that_never_reads_is_dropped_at_the_io_timeout(httpd, site, answers):
    """The stall limit holds over the whole answer: a send that the socket took in part no
    longer starts its wait anew (a process per connection with writes larger than 1 KB, and
    the event loop's child sending a large file)."""
    with (site[0] / "big.bin").open("wb") as f:
        f.truncate(64 << 20)
    s = httpd("--io-timeout", "2")
    c = socket.socket()
    c.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    c.connect(("127.0.0.1", s.port))
    c.sendall(b"GET /big.bin HTTP/1.1\r\nHost: x\r\n\r\n")       # then never reads
    started = time.monotonic()
    while "CLOSE after" not in s.logtext() and time.monotonic() - started < 30:
        time.sleep(0.05)
    took = time.monotonic() - started
    assert took < 2 + 2, f"dropped after {took:.1f} s"
    assert "TIMEOUT send: no byte taken for 2 s" in s.logtext()
    c.close()
    s.settle()
    assert s.alive()
