"""A second SCTP stack on the wire: usrsctp (FreeBSD's SCTP in user space; Debian's
libusrsctp-examples, `tsctp`) sends to bulkflow's receiver on the kernel's SCTP, inside the
pinned kernel, over UDP encapsulation (RFC 6951: the receiver's kernel takes SCTP on UDP port
9899, net.sctp.udp_port, and answers to tsctp's own UDP port, net.sctp.encap_port). usrsctp
cannot share raw IP with a kernel whose SCTP answers associations it does not know, so UDP is
how it reaches the wire. Then the other way: bulkflow's sender on the kernel's SCTP into
tsctp's receiver. Judged from the programs' events and the capture: every byte arrives (the
kernel's sender ends only once usrsctp has acknowledged all it wrote and its SHUTDOWN), and
every SCTP packet travels inside UDP, both ways, in both associations."""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.bulkflow.bulkhelp import SANITIZER_MARKS, events, one, tshark
from tests.ftp import ftphelp
from tests.ftp.kernel import run_in_kernel

pytestmark = pytest.mark.kernel

JOB = Path(__file__).with_name("inside_usrsctp_encapsulation.sh")
TSCTP = Path("/usr/lib/usrsctp/tsctp")
MESSAGES, LENGTH = 2000, 1400


@pytest.fixture(scope="module")
def flow(built, tmp_path_factory) -> Path:
    assert TSCTP.exists(), "usrsctp's tsctp is required: apt-get install libusrsctp-examples"
    work = tmp_path_factory.mktemp("usrsctp")
    r = run_in_kernel(["bash", str(JOB)], timeout=180,
                      env={"BIN": ftphelp.IMPL / "build-ubsan", "WORK": work,
                           "MESSAGES": MESSAGES, "LENGTH": LENGTH})
    assert r.returncode == 0, f"kernel job failed ({r.returncode}):\n{r.stderr[-3000:]}"
    return work


def test_every_byte_tsctp_sent_reached_the_kernels_sctp(flow):
    assert (flow / "sysctls").read_text().split() == ["9899", "9900"]
    assert (flow / "tsctp.rc").read_text().strip() == "0", (flow / "tsctp.out").read_text()[-2000:]
    assert (flow / "recv.rc").read_text().strip() == "0", (flow / "recv.err").read_text()
    err = (flow / "recv.err").read_text()
    assert not any(m in err for m in SANITIZER_MARKS), err
    got = events((flow / "recv.jsonl").read_text())
    accepted = one(got, "accepted")
    assert accepted["proto"] == "sctp" and accepted["peer"].startswith("10.7.0.1")
    assert one(got, "end")["bytes"] == MESSAGES * LENGTH


def test_usrsctp_acknowledged_every_byte_the_kernels_sctp_sent(flow):
    assert (flow / "send.rc").read_text().strip() == "0", (flow / "send.err").read_text()
    err = (flow / "send.err").read_text()
    assert not any(m in err for m in SANITIZER_MARKS), err
    end = one(events((flow / "send.jsonl").read_text()), "end")
    # rc 0: all it wrote acknowledged, SHUTDOWN included (PROGRAMS.md)
    assert end["delivered_confirmed"] is True and end["bytes"] > 0
    # tsctp's own count, its last line: message length, messages, ..., bytes, seconds, ...
    summary = [line for line in (flow / "tsctp-recv.out").read_text().splitlines()
               if line and not line.startswith("[")][-1].split(", ")
    assert int(summary[3]) == end["bytes"] == int(summary[0]) * int(summary[1]), summary


def test_every_sctp_packet_travels_inside_udp_both_ways(flow):
    pcap = flow / "flow.pcap"
    rows = tshark(pcap, "sctp", "ip.src", "udp.srcport", "udp.dstport", "sctp.chunk_type")
    assert rows, "no SCTP in the capture"
    assert tshark(pcap, "sctp && !udp", "frame.number") == []
    directions = {(src, sport, dport) for src, sport, dport, _ in rows}
    assert directions == {("10.7.0.1", "9900", "9899"), ("10.7.0.2", "9899", "9900")}
    # the second association's DATA goes from the kernel's end
    assert tshark(pcap, "sctp.data_tsn && ip.src == 10.7.0.2", "frame.number")
    chunks = {int(t) for _, _, _, types in rows for t in types.split(",")}
    # INIT, INIT ACK, COOKIE ECHO, COOKIE ACK, DATA and SACK; no ABORT (6)
    assert {1, 2, 10, 11, 0, 3} <= chunks and 6 not in chunks
    data = tshark(pcap, "sctp.data_tsn && ip.src == 10.7.0.1", "frame.number")
    assert len(data) >= MESSAGES
