"""bulkflow on the host, over TCP on 127.0.0.1 (the host has no SCTP), with the plain and the
ASan+UBSan build: usage errors, a 3-second flow counted alike at both ends, samples every
100 ms, a planned start, and flows that fail (refused, reset, stalled, not acknowledged),
each waiting in the kernel rather than spinning."""
from __future__ import annotations

import socket
import statistics
import struct
import threading
import time
from itertools import pairwise

import pytest

from tests.bulkflow.bulkhelp import Receiver, of, one, run
from tests.ftp.ftphelp import free_port

TCP_TO = ["send", "--proto", "tcp", "--to", "127.0.0.1:9"]
USAGE = [
    ([], "the first argument must be send or recv"),
    (["push"], "the first argument must be send or recv"),
    (["send", "--to", "127.0.0.1:9", "--duration", "1"], "--proto is required"),
    (["send", "--proto", "udp", "--to", "127.0.0.1:9", "--duration", "1"], "--proto: tcp or sctp"),
    (["send", "--proto", "tcp", "--duration", "1"], "--to is required"),
    (TCP_TO, "--duration is required"),
    (["send", "--proto", "tcp", "--to", "127.0.0.1", "--duration", "1"], "--to: needs a port"),
    (["send", "--proto", "tcp", "--to", "no such host:9", "--duration", "1"],
     "--to: not an address"),
    ([*TCP_TO, "--duration", "0"], "--duration: need seconds"),
    ([*TCP_TO, "--duration", "86401"], "--duration: need seconds"),
    ([*TCP_TO, "--duration", "-1"], "--duration: need seconds"),
    ([*TCP_TO, "--duration", "1e3"], "--duration: need seconds"),
    ([*TCP_TO, "--duration", "1", "--maxseg", "10"],
     "--maxseg: need a whole number from 64 to 65535"),
    ([*TCP_TO, "--duration", "1", "--start-at", "soon"],
     "--start-at: need CLOCK_MONOTONIC seconds"),
    ([*TCP_TO, "--duration", "1", "--sample-ms", "1"],
     "--sample-ms: need a whole number from 10 to 60000"),
    (["send", "--proto", "sctp", "--to", "127.0.0.1:9", "--duration", "1", "--sndbuf", "8192",
      "--write-size", "16384"], "--write-size: an SCTP message must fit in --sndbuf"),
    ([*TCP_TO, "--duration", "1", "--bogus"],
     "unknown option or missing value: --bogus"),
    ([*TCP_TO, "--duration"],
     "unknown option or missing value: --duration"),
    ([*TCP_TO, "--duration", "1", "--no-delayed-ack"],
     "--no-delayed-ack is a recv option"),
    (["recv", "--proto", "tcp", "--listen", "127.0.0.1:0", "--duration", "3"],
     "--duration is a send option"),
    (["recv", "--proto", "tcp"], "--listen is required"),
    (["recv", "--proto", "tcp", "--listen", "127.0.0.1:0", "extra"], "unexpected argument: extra"),
]


@pytest.mark.parametrize("args,message", USAGE, ids=[" ".join(a) or "none" for a, _ in USAGE])
def test_usage_errors_exit_2(bindir, args, message):
    r = run(bindir, *args, timeout=10)
    assert r.status == 2, r.stderr
    assert r.stderr.startswith(f"bulkflow: {message}"), r.stderr
    assert "usage: bulkflow recv" in r.stderr and r.events == []


def flow(bindir, seconds=3.0, send_extra=(), recv_extra=()):
    recv = Receiver(bindir, "--proto", "tcp", "--listen", "127.0.0.1:0", "--stall-timeout", "10",
                    *recv_extra)
    try:
        sent = run(bindir, "send", "--proto", "tcp", "--to", f"127.0.0.1:{recv.port}",
                   "--duration", seconds, "--stall-timeout", "10", *send_extra,
                   timeout=seconds + 30)
        status, got, err = recv.finish()
    finally:
        recv.kill()
    return sent, (status, got, err)


@pytest.fixture(scope="module")
def three_seconds(bindir):
    """One 3-second flow per build, its receiver without delayed ACKs."""
    return flow(bindir, 3.0, recv_extra=["--no-delayed-ack"])


def test_tcp_flow_counts_alike_at_both_ends(three_seconds):
    sent, (rstatus, got, rerr) = three_seconds
    assert sent.status == 0 and rstatus == 0, sent.stderr + rerr
    send_end, recv_end = one(sent.events, "end"), one(got, "end")
    assert send_end["delivered_confirmed"] is True
    assert send_end["bytes"] == recv_end["bytes"] > 10_000_000
    assert 3.0 <= send_end["duration_s"] < 3.5
    assert [e["event"] for e in got[:3]] == ["ready", "accepted", "first_byte"]
    accepted = one(got, "accepted")
    assert accepted["no_delayed_ack"] is True and accepted["sack"] is True
    assert "TCP_QUICKACK after every read" in accepted["applied"]
    connected = one(sent.events, "connected")
    assert connected["peer"] == f"127.0.0.1:{got[0]['listen'].rsplit(':', 1)[1]}"
    assert connected["start_at"] is None and connected["maxseg"] > 0
    assert recv_end["data_in"] > 0 and recv_end["acks_out"] > 0


def test_samples_every_100ms_with_a_positive_cwnd(three_seconds):
    sent, (rstatus, got, _) = three_seconds
    assert sent.status == 0 and rstatus == 0
    for evs in (of(sent.events, "sample"), of(got, "sample")):
        assert 25 <= len(evs) <= 35, len(evs)
        gaps = [b["t"] - a["t"] for a, b in pairwise(evs)]
        assert 0.095 <= statistics.median(gaps) <= 0.105, gaps
        assert max(gaps) < 0.5, gaps
        assert all(b["bytes"] >= a["bytes"] for a, b in pairwise(evs))
    samples = of(sent.events, "sample")
    assert all(s["cwnd"] > 0 and s["cwnd_segs"] > 0 and s["mss"] > 0 for s in samples)
    assert all(s["cwnd"] == s["cwnd_segs"] * s["mss"] for s in samples)
    assert all(s["srtt_ms"] is not None and s["rto_ms"] > 0 for s in samples)
    assert all(s["srtt_jiffies"] is None and s["pending"] is None for s in samples)
    assert samples[-1]["bytes_acked"] > 0


def test_start_at_a_planned_instant(bindir):
    planned = round(time.monotonic() + 1.5, 3)  # CLOCK_MONOTONIC, as bulkflow reads it
    sent, (rstatus, _, _) = flow(bindir, 0.5, send_extra=["--start-at", f"{planned:.3f}"])
    assert sent.status == 0 and rstatus == 0
    connected = one(sent.events, "connected")
    assert connected["start_at"] == pytest.approx(planned, abs=0.001)
    assert 0 <= connected["late_s"] < 0.2
    assert planned <= connected["t"] < planned + 0.3
    assert sent.cpu_s < 1.0  # waited in clock_nanosleep


def test_start_at_in_the_past_starts_at_once_and_says_how_late(bindir):
    planned = round(time.monotonic() - 2.0, 3)
    sent, (rstatus, _, _) = flow(bindir, 0.5, send_extra=["--start-at", f"{planned:.3f}"])
    assert sent.status == 0 and rstatus == 0
    assert 2.0 <= one(sent.events, "connected")["late_s"] < 3.0
    assert sent.wall_s < 2.0


def assert_failed(r, reason):
    assert r.status == 1, (r.status, r.stderr)
    err = one(r.events, "error")
    assert reason in err["reason"], err
    assert f"bulkflow: {err['reason']}" in r.stderr
    return err


def test_connection_refused_fails(bindir):
    r = run(bindir, "send", "--proto", "tcp", "--to", f"127.0.0.1:{free_port()}",
            "--duration", "1", timeout=20)
    assert_failed(r, "connect: Connection refused")
    assert of(r.events, "connected") == []


def test_receiver_waits_for_a_connection_without_spinning(bindir):
    r = run(bindir, "recv", "--proto", "tcp", "--listen", "127.0.0.1:0", "--accept-timeout", "2",
            timeout=20)
    assert_failed(r, "no connection within 2 s")
    assert 2.0 <= r.wall_s < 4 and r.cpu_s < 0.5


def test_receiver_stall_fails(bindir):
    recv = Receiver(bindir, "--proto", "tcp", "--listen", "127.0.0.1:0", "--stall-timeout", "1")
    try:
        with socket.create_connection(("127.0.0.1", recv.port)) as s:
            s.sendall(b"x" * 1000)
            status, got, _ = recv.finish(timeout=20)
    finally:
        recv.kill()
    assert status == 1
    err = one(got, "error")
    assert err["reason"] == "stalled: no byte for 1 s" and err["bytes"] == 1000
    assert of(got, "end") == []


def test_receiver_reset_fails(bindir):
    recv = Receiver(bindir, "--proto", "tcp", "--listen", "127.0.0.1:0")
    try:
        s = socket.create_connection(("127.0.0.1", recv.port))
        s.sendall(b"y" * 5000)
        time.sleep(0.3)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        s.close()  # RST
        status, got, _ = recv.finish(timeout=20)
    finally:
        recv.kill()
    assert status == 1
    err = one(got, "error")
    assert "Connection reset by peer" in err["reason"] and err["bytes"] == 5000


class SilentServer:
    """Accepts one connection and never reads it (a receiver that has stopped)."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(1)
        self.port = self.sock.getsockname()[1]
        self.conns = []
        self.thread = threading.Thread(target=lambda: self.conns.append(self.sock.accept()[0]),
                                       daemon=True)
        self.thread.start()

    def close(self) -> None:
        for c in self.conns:
            c.close()
        self.sock.close()


def test_sender_stall_fails_without_spinning(bindir):
    server = SilentServer()
    try:
        r = run(bindir, "send", "--proto", "tcp", "--to", f"127.0.0.1:{server.port}",
                "--duration", "30", "--stall-timeout", "1", "--sndbuf", "65536", timeout=30)
    finally:
        server.close()
    err = assert_failed(r, "stalled: the kernel took no byte for 1 s")
    assert err["bytes"] > 0 and r.wall_s < 5
    assert r.cpu_s < 0.5  # a second of waiting in poll(), not in a loop
    assert len(of(r.events, "sample")) >= 8


def test_sender_not_acknowledged_in_time_fails(bindir):
    server = SilentServer()
    try:
        r = run(bindir, "send", "--proto", "tcp", "--to", f"127.0.0.1:{server.port}",
                "--duration", "1", "--drain-timeout", "1", "--sndbuf", "65536", timeout=30)
    finally:
        server.close()
    assert_failed(r, "not all data acknowledged within 1 s")
    end = one(r.events, "end")
    assert end["delivered_confirmed"] is False and end["bytes"] > 0
    assert [s["phase"] for s in of(r.events, "sample")][-1] == "drain"
    assert r.cpu_s < 0.5
