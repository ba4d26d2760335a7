"""httpd and httpc on usrsctp (FreeBSD's SCTP in user space, inside UDP) over the host's
loopback, where no kernel SCTP is needed, in every build, ASan's included: the page byte for
byte on its streams; a peer that takes the requests and never answers, and one that floods
httpd with bytes that are no request, each met with a clear error within its limit, httpd
serving the next client whole. The pinned kernel's runs of both are in
tests/harness/test_http_usrsctp.py."""
from __future__ import annotations

import time

import pytest

from tests.bulkflow.bulkhelp import SANITIZER_MARKS, Receiver, free_udp_port, run
from tests.ftp.ftphelp import free_port
from tests.web.httphelp import Httpd, page_paths, run_httpc
from tests.web.test_httpc import check_page

TIMEOUT_S = 2      # httpc --timeout: its longest wait without progress


def usrsctp(udp_port: int, peer_udp_port: int | None = None) -> list[str]:
    options = ["--sctp-stack", "usrsctp", "--sctp-udp-port", str(udp_port)]
    return options + ([] if peer_udp_port is None else
                      ["--sctp-peer-udp-port", str(peer_udp_port)])


@pytest.fixture
def server(bindir, site, tmp_path):
    """httpd on usrsctp, its SCTP port and UDP port; stopped after the test."""
    port, udp = free_port(), free_udp_port()
    s = Httpd(bindir, site[0], "--listen-sctp", f"127.0.0.1:{port}", *usrsctp(udp),
              "--idle-timeout", "10", "--header-timeout", "5", tmp=tmp_path / "httpd")
    yield s, port, udp
    s.stop()


def fetch_page(bindir, tmp_path, port: int, server_udp: int, name: str):
    out = tmp_path / name
    out.mkdir()
    rc, events, err = run_httpc(bindir, "--proto", "sctp", "--server", f"127.0.0.1:{port}",
                                "--out", str(out), "--timeout", "20",
                                *usrsctp(free_udp_port(), server_udp), *page_paths(),
                                timeout=90)
    assert not any(m in err for m in SANITIZER_MARKS), err
    return rc, events, err, out


def test_the_page_arrives_whole_on_its_streams_from_httpd_on_usrsctp(bindir, site, tmp_path,
                                                                      server):
    s, port, udp = server
    rc, events, err, out = fetch_page(bindir, tmp_path, port, udp, "out")
    assert rc == 0, err
    check_page(events, out, site[1])
    connected = next(e for e in events if e["event"] == "connected")
    assert (connected["stack"], connected["peer_udp_port"]) == ("usrsctp", udp)
    answered = {e["object"]: e["stream"] for e in events if e["event"] == "complete"}
    assert sorted(answered[i] for i in range(1, 8)) == list(range(7))   # a stream an object
    assert "STACK sctp usrsctp" in s.logtext() and s.alive()


def test_a_peer_that_takes_the_requests_and_never_answers_is_left_at_the_timeout(
        bindir, tmp_path):
    """The silent peer (bulkflow's receiver on usrsctp) acknowledges the requests. Its SACKs
    wake httpc's socket with no message to read; httpc waits again and ends at --timeout, not
    at the transport's 60 s I/O limit."""
    udp = free_udp_port()
    silent = Receiver(bindir, "--proto", "sctp", "--sctp-stack", "usrsctp", "--sctp-udp-port",
                      str(udp), "--listen", "127.0.0.1:0", "--accept-timeout", "30")
    try:
        out = tmp_path / "out"
        out.mkdir()
        t0 = time.monotonic()
        rc, events, err = run_httpc(bindir, "--proto", "sctp", "--server",
                                    f"127.0.0.1:{silent.port}", "--out", str(out), "--timeout",
                                    str(TIMEOUT_S), *usrsctp(free_udp_port(), udp),
                                    *page_paths(), timeout=90)
        took = time.monotonic() - t0
    finally:
        silent.kill()
    assert rc == 1 and f"no answer for {TIMEOUT_S} s" in err, err
    assert TIMEOUT_S <= took < TIMEOUT_S + 8, took
    assert [e["event"] for e in events if e["event"] in ("request", "error")][-1] == "error"
    assert not any(m in err for m in SANITIZER_MARKS), err
    assert not list(out.iterdir())


def test_a_flood_that_is_no_request_is_refused_and_the_next_client_served_whole(
        bindir, site, tmp_path, server):
    """Bulk bytes (bulkflow's sender on usrsctp, its pseudo-random pattern) are no request
    line: 400 and the association closed under the sender, which fails; then httpd, which
    serves usrsctp's associations in its own process, fetches the next client its page
    byte for byte."""
    s, port, udp = server
    # Longer than httpd can take to reach the association on a loaded machine: usrsctp
    # acknowledges what its buffer holds before httpd reads, so a short flood can end whole
    # (CI saw a 1 s one do so) before httpd reads its first bytes and refuses them.
    flood = run(bindir, "send", "--proto", "sctp", "--sctp-stack", "usrsctp",
                "--sctp-udp-port", str(free_udp_port()), "--sctp-peer-udp-port", str(udp),
                "--to", f"127.0.0.1:{port}", "--duration", "30")
    assert flood.status == 1 and not any(m in flood.stderr for m in SANITIZER_MARKS), \
        flood.stderr
    assert flood.wall_s < 30, flood.wall_s
    assert s.alive()
    rc, events, err, out = fetch_page(bindir, tmp_path, port, udp, "after")
    assert rc == 0, err
    check_page(events, out, site[1])
    log = s.logtext()
    assert log.count("CONNECT sctp") == 2, log
    assert "REFUSED request on stream 0: 400" in log and "CLOSE after 0 requests" in log, log
