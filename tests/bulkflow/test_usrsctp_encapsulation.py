"""A second SCTP stack on the wire: usrsctp (FreeBSD's SCTP in user space; Debian's
libusrsctp-examples, `tsctp`) sends to bulkflow's receiver on the kernel's SCTP, inside the
pinned kernel, over UDP encapsulation (RFC 6951: the receiver's kernel takes SCTP on UDP port
9899, net.sctp.udp_port, and answers to tsctp's own UDP port, net.sctp.encap_port). usrsctp
cannot share raw IP with a kernel whose SCTP answers associations it does not know, so UDP is
how it reaches the wire. Then the other way: bulkflow's sender on the kernel's SCTP into
tsctp's receiver. Judged from the programs' events and the capture: every byte arrives (the
kernel's sender ends only once usrsctp has acknowledged all it wrote and its SHUTDOWN), and
every SCTP packet travels inside UDP, both ways, in both associations.

The kernel's sender runs twice: with the veth's offloads as they come and with GSO off on its
side. With GSO, Linux 6.1's SCTP over UDP hands the veth packets of several chunks longer than
the MTU with their CRC-32c left to segmentation, which a veth into a local socket never does:
they reach usrsctp whole, as one datagram with checksum 0, and usrsctp acknowledges none of
their chunks, so each one waits for its T3. With GSO off every packet fits the MTU and carries
its checksum, and the device drops none (PROGRAMS.md)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.bulkflow.bulkhelp import SANITIZER_MARKS, events, one, tshark
from tests.ftp.kernel import run_script_in_kernel

pytestmark = pytest.mark.kernel

JOB = Path(__file__).with_name("inside_usrsctp_encapsulation.sh")
TSCTP = Path("/usr/lib/usrsctp/tsctp")
MESSAGES, LENGTH = 2000, 1400
KERNEL_SIDE, USRSCTP_SIDE = "10.7.0.2", "10.7.0.1"
FRAME_MAX = 1514                 # the veth's MTU, 1500 bytes, and its Ethernet header
CRC32C = ("-o", "sctp.checksum:CRC-32C")
PHASES = ("gso", "nogso")


@pytest.fixture(scope="module")
def flow(built, tmp_path_factory) -> Path:
    assert TSCTP.exists(), "usrsctp's tsctp is required: apt-get install libusrsctp-examples"
    return run_script_in_kernel(JOB, tmp_path_factory.mktemp("usrsctp"), timeout=180,
                                env={"MESSAGES": MESSAGES, "LENGTH": LENGTH})


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


@pytest.mark.parametrize("phase", PHASES)
def test_usrsctp_acknowledged_every_byte_the_kernels_sctp_sent(flow, phase):
    assert (flow / f"{phase}.send.rc").read_text().strip() == "0", \
        (flow / f"{phase}.send.err").read_text()
    err = (flow / f"{phase}.send.err").read_text()
    assert not any(m in err for m in SANITIZER_MARKS), err
    end = one(events((flow / f"{phase}.send.jsonl").read_text()), "end")
    # rc 0: all it wrote acknowledged, SHUTDOWN included (PROGRAMS.md)
    assert end["delivered_confirmed"] is True and end["bytes"] > 0
    # tsctp's own count, its last line: message length, messages, ..., bytes, seconds, ...
    summary = [line for line in (flow / f"{phase}.tsctp-recv.out").read_text().splitlines()
               if line and not line.startswith("[")][-1].split(", ")
    assert int(summary[3]) == end["bytes"] == int(summary[0]) * int(summary[1]), summary


def counters(text: str) -> dict[str, int]:
    """The kernel side's SCTP counters (/proc/net/sctp/snmp) and its veth's transmit drops."""
    out: dict[str, int] = {}
    for line in text.splitlines():
        if line.startswith("["):
            out["tx_dropped"] = json.loads(line)[0]["stats64"]["tx"]["dropped"]
        elif len(line.split()) == 2:
            name, value = line.split()
            out[name] = int(value)
    return out


def during(flow: Path, phase: str) -> dict[str, int]:
    before = counters((flow / f"{phase}.before").read_text())
    after = counters((flow / f"{phase}.after").read_text())
    return {name: after[name] - before[name] for name in after}


def kernel_data(flow: Path, phase: str) -> list[tuple[int, int, list[int], str]]:
    """The kernel's DATA packets as usrsctp's side received them: frame, length, TSNs and
    whether Wireshark found the CRC-32c right."""
    rows = tshark(flow / f"{phase}.pcap", f"sctp.data_tsn && ip.src == {KERNEL_SIDE}",
                  "frame.number", "frame.len", "sctp.data_tsn_raw", "sctp.checksum.status",
                  options=CRC32C)
    return [(int(n), int(length), [int(t) for t in tsns.split(",")], status)
            for n, length, tsns, status in rows]


def test_with_gso_packets_longer_than_the_mtu_reach_usrsctp_unchecksummed_and_unacknowledged(
        flow):
    offloads = (flow / "gso.offloads").read_text()
    assert "generic-segmentation-offload: on" in offloads
    oversize = [row for row in kernel_data(flow, "gso") if row[1] > FRAME_MAX]
    assert oversize, "the kernel sent no packet longer than the MTU with GSO on"
    checksums = tshark(flow / "gso.pcap", f"frame.len > {FRAME_MAX} && ip.src == {KERNEL_SIDE}",
                       "sctp.checksum")
    assert {c for (c,) in checksums} == {"0x00000000"}, checksums
    assert all(len(tsns) > 1 for _, _, tsns, _ in oversize)
    acks = [(int(n), int(cum)) for n, cum in tshark(
        flow / "gso.pcap", f"sctp.sack_cumulative_tsn_ack && ip.src == {USRSCTP_SIDE}",
        "frame.number", "sctp.sack_cumulative_tsn_ack_raw")]
    sent = kernel_data(flow, "gso")
    for frame, _, tsns, _ in oversize:
        again = next(n for n, _, later, _ in sent if n > frame and tsns[0] in later)
        assert all(cum < tsns[0] for n, cum in acks if frame < n < again), (frame, tsns)
    assert during(flow, "gso")["SctpT3RtxExpireds"] > 0


def test_without_gso_every_packet_fits_the_mtu_and_the_device_drops_none(flow):
    offloads = (flow / "nogso.offloads").read_text()
    assert "generic-segmentation-offload: off" in offloads
    assert "tx-sctp-segmentation: off" in offloads
    sent = kernel_data(flow, "nogso")
    assert len(sent) > 100
    assert all(length <= FRAME_MAX and status == "1" for _, length, _, status in sent)
    # nothing dropped at the device; a retransmission can still come of a loss elsewhere (one
    # fast retransmission was seen on a loaded CI machine), so the counters judge the device
    counted = during(flow, "nogso")
    assert counted["tx_dropped"] == 0, counted


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
    # INIT, INIT ACK, COOKIE ECHO, COOKIE ACK, DATA and SACK
    assert {1, 2, 10, 11, 0, 3} <= chunks
    # No ABORT (6) but one: usrsctp may send a window update (a SACK) as its reader catches
    # up, after the kernel's SHUTDOWN COMPLETE has ended the association. The kernel answers
    # that out-of-the-blue packet with an ABORT that reflects the tag (T bit; RFC 9260 8.4,
    # rule 8), and both ends were done (seen once on a loaded CI machine).
    ends = {int(n) for n, in tshark(pcap, f"sctp.chunk_type == 14 && ip.src == {KERNEL_SIDE}",
                                     "frame.number")}
    for n, src, t_bit in tshark(pcap, "sctp.chunk_type == 6", "frame.number", "ip.src",
                                "sctp.abort_t_bit"):
        assert src == KERNEL_SIDE and t_bit == "1" and any(
            0 < int(n) - end <= 3 for end in ends), ("an ABORT mid-association", n, src)
    data = tshark(pcap, "sctp.data_tsn && ip.src == 10.7.0.1", "frame.number")
    assert len(data) >= MESSAGES
