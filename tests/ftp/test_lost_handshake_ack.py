"""Regression: a passive data connection whose handshake's last ACK is lost, and the ACK that
answers the SYN-ACK's retransmission too, is established at the client and never reaches
ftpd's accept(): the server's half-open end expires, the client (which sends nothing on a
RETR's data connection) waits for the 150. E1 at 10% loss on the satellite path waited so for
5 hours of kernel time until the run's limit killed it. With the open limits the session
recovers: ftpd answers 425, ftpc retries on a new data connection.

In a network namespace of its own, on its loopback (this machine's kernel; the pinned one has
no netfilter): ftpd on 127.0.0.1:21, ftpc bound to 127.0.0.2, both started with the command
lines the harness builds (experiments/procedure.py) and its long run limit; iptables drops
the client's first two pure ACKs towards a port other than 21 (a quota of two 52-byte
packets: the handshake's ACK, and the one answering the SYN-ACK retransmitted after 1 s),
and tcp_synack_retries 1 lets the half-open end expire 3 s after the SYN."""
from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from experiments import procedure
from tests.ftp import ftphelp

CLIENT, SERVER = "127.0.0.2", "127.0.0.1"
RUN_LIMIT_S = 600      # what the harness passes as the data and idle limits: far beyond the test
SERVER_OPEN_S = 5      # beyond the half-open end's life here (3 s)
CLIENT_OPEN_S = 10
BOUND_S = 30           # the session's end, retry included
ACK_BYTES = 52         # IPv4 20 + TCP 20 + timestamps 12
DROP = ["OUTPUT", "-s", CLIENT, "-d", SERVER, "-p", "tcp", "!", "--dport", "21",
        "--tcp-flags", "ALL", "ACK", "-m", "length", "--length", "40:64",
        "-m", "quota", "--quota", str(2 * ACK_BYTES), "-j", "DROP"]
BODY = os.urandom(200_000)


def sh(*argv: str) -> str:
    return subprocess.run(argv, check=True, capture_output=True, text=True).stdout


@pytest.fixture
def netns() -> Iterator[str]:
    name = f"ftpack-{os.getpid()}-{time.monotonic_ns() % 10**9}"
    sh("ip", "netns", "add", name)
    try:
        sh("ip", "-n", name, "link", "set", "lo", "up")
        sh("ip", "netns", "exec", name, "sysctl", "-qw", "net.ipv4.tcp_synack_retries=1")
        sh("ip", "netns", "exec", name, "iptables", "-A", *DROP)
        yield name
    finally:
        sh("ip", "netns", "del", name)


def dropped(netns: str) -> int:
    """Packets the rule dropped so far."""
    rows = sh("ip", "netns", "exec", netns, "iptables", "-L", "OUTPUT", "-v", "-x", "-n")
    (row,) = [line for line in rows.splitlines() if "DROP" in line]
    return int(row.split()[0])


def test_a_lost_handshake_ack_ends_in_425_and_a_retry(bindir: Path, tmp_path: Path, netns):
    root, out = tmp_path / "root", tmp_path / "out"
    root.mkdir()
    out.mkdir()
    (root / "f.bin").write_bytes(BODY)
    (root / "f.bin").chmod(0o644)
    launch = procedure.netns_launch(netns)
    log = tmp_path / "ftpd.log"
    argv = procedure.ftp_server_argv(str(bindir / "ftpd"), str(root), SERVER, str(log),
                                     RUN_LIMIT_S, open_timeout_s=SERVER_OPEN_S)
    cut = argv.index("--sctp")                        # this kernel may lack SCTP
    server = procedure.start(launch, argv[:cut] + argv[cut + 2:], tmp_path / "ftpd.out",
                             env=dict(os.environ, **ftphelp.SAN_ENV))
    try:
        argv = procedure.ftp_client_argv(str(bindir / "ftpc"), "tcp", SERVER, str(out),
                                         RUN_LIMIT_S, bind=CLIENT, commands=("get", "f.bin"),
                                         open_timeout_s=CLIENT_OPEN_S)
        t0 = time.monotonic()
        r = subprocess.run(["ip", "netns", "exec", netns, *argv], capture_output=True,
                           text=True, timeout=BOUND_S, env=dict(os.environ, **ftphelp.SAN_ENV))
        took = time.monotonic() - t0
    finally:
        procedure.stop(server)
    events = [json.loads(line) for line in r.stdout.splitlines()]
    assert dropped(netns) == 2                        # both ACKs of the first handshake
    assert r.returncode == 0, r.stderr
    assert (out / "f.bin").read_bytes() == BODY
    (retry,) = [e for e in events if e["event"] == "retry"]
    assert retry["reason"] == (f"RETR f.bin failed: 425 No data connection within "
                               f"{SERVER_OPEN_S} s."), retry
    assert SERVER_OPEN_S <= retry["lost_s"] < SERVER_OPEN_S + 3, retry
    assert [e["cmd"] for e in events if e["event"] == "command"][-5:] == \
        ["PASV", "RETR", "PASV", "RETR", "QUIT"]
    assert took < SERVER_OPEN_S + 10, took
    text = log.read_text()
    assert f"TIMEOUT no data connection within {SERVER_OPEN_S} s (open limit)" in text
    assert "OK RETR f.bin 200000 bytes" in text
    assert "AddressSanitizer" not in r.stderr and "runtime error" not in r.stderr
