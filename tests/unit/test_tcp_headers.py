"""The TCP shared pass read from the capture's bytes (experiments/tshark/tcp_headers.py) gives
tshark's rows, stream numbers and relative sequence numbers included; a pair of ports used again
by a new connection leaves the capture to tshark. The TCP counters, which read that pass, count
the SYNs and FINs tshark flags as retransmissions and time a connection's handshake as
tshark's initial RTT does (from its latest SYN)."""
from __future__ import annotations

import pytest

from experiments import tshark
from experiments.tshark import tcp_headers
from experiments.tshark.transport import counters
from tests.unit.test_sctp_headers import MICRO, NANO, sctp_in_udp, write, write_cut
from tests.unit.test_tshark_shared_pass import CLIENT, CONTROL_FRAMES, INIT, SERVER, tcp

OPTIONS, NAMES = tshark.SHARED_PASSES["tcp"]
SYN, SYN_ACK, ACK, FIN_ACK = 0x02, 0x12, 0x10, 0x11


def data(seq: int, size: int = 10) -> bytes:
    return tcp(SERVER, CLIENT, 21, 40001, seq, ACK, b"d" * size)


# one frame a second (write): the handshake's round trip is frames 1 to 3, two seconds
SESSION = [
    tcp(CLIENT, SERVER, 40001, 21, 100, SYN),
    tcp(CLIENT, SERVER, 40001, 21, 100, SYN),              # the SYN again: a timeout
    tcp(SERVER, CLIENT, 21, 40001, 500, SYN_ACK),
    tcp(CLIENT, SERVER, 40001, 21, 101, ACK),
    data(501),
    data(501),                                             # 1 s after its first copy: fast
    data(511),
    tcp(CLIENT, SERVER, 40001, 21, 101, ACK),
    tcp(CLIENT, SERVER, 40001, 21, 101, ACK),
    data(511),                                             # 3 s: a timeout (2.2 s), not
    tcp(SERVER, CLIENT, 21, 40001, 521, FIN_ACK),          # one from the first SYN (3.2 s)
    tcp(SERVER, CLIENT, 21, 40001, 521, FIN_ACK),          # the FIN again: a timeout
]


@pytest.mark.parametrize("magic,order", [(MICRO, "<"), (NANO, ">")])
def test_the_rows_are_tshark_s(tmp_path, magic, order):
    pcap = write(tmp_path / "made.pcap", CONTROL_FRAMES + SESSION, magic, order)
    rows = tcp_headers.shared_rows(pcap)
    assert rows is not None and len(rows) == 10 + len(SESSION)
    assert rows == tshark._fields(pcap, list(NAMES), "tcp", OPTIONS)


def test_usrsctp_s_packets_beside_the_connections_are_passed_over(tmp_path):
    """SCTP inside UDP on port 9899 (bulk-flows' usrsctp flows share the capture with TCP's)
    is SCTP to tshark, not something it reads inside: the TCP rows stay this module's."""
    pcap = write(tmp_path / "mixed.pcap", CONTROL_FRAMES + SESSION[:4]
                 + [sctp_in_udp(CLIENT, SERVER, 50001, 5002, INIT)] + SESSION[4:])
    rows = tcp_headers.shared_rows(pcap)
    assert rows is not None and len(rows) == 10 + len(SESSION)
    assert rows == tshark._fields(pcap, list(NAMES), "tcp", OPTIONS)


def test_without_the_syn_a_direction_counts_from_the_other_s_first_acknowledgement(tmp_path):
    # the client's segment acknowledges 1: the server's numbers count from 0, as tshark's do
    pcap = write(tmp_path / "late.pcap", [tcp(CLIENT, SERVER, 40001, 21, 101, ACK, b"x"),
                                          data(501), data(511)])
    rows = tcp_headers.shared_rows(pcap)
    assert rows is not None and [row[8] for row in rows] == ["1", "501", "511"]
    assert rows == tshark._fields(pcap, list(NAMES), "tcp", OPTIONS)


LONG_SEGMENT = tcp(SERVER, CLIENT, 20, 40002, 7000, ACK, bytes(range(250)))


@pytest.mark.parametrize("keep", [14 + 20 + 20, 96])
def test_a_frame_cut_after_its_tcp_header_reads_as_tshark_reads_it(tmp_path, keep):
    cut = write_cut(tmp_path / "cut.pcap", [*CONTROL_FRAMES, LONG_SEGMENT], keep)
    rows = tcp_headers.shared_rows(cut)
    assert rows is not None and rows[-1][-1] == "250"   # its length from the IPv4 header
    assert rows == tshark._fields(cut, list(NAMES), "tcp", OPTIONS)
    whole = write(tmp_path / "whole.pcap", [*CONTROL_FRAMES, LONG_SEGMENT])
    assert rows == tshark._fields(whole, list(NAMES), "tcp", OPTIONS)


def test_a_frame_cut_within_its_tcp_header_is_left_to_tshark(tmp_path):
    cut = write_cut(tmp_path / "cut.pcap", [*CONTROL_FRAMES, LONG_SEGMENT], 14 + 20 + 12)
    assert tcp_headers.shared_rows(cut) is None


@pytest.mark.parametrize("reused", [
    [*SESSION, tcp(CLIENT, SERVER, 40001, 21, 9000, SYN)],          # after a connection
    [tcp(CLIENT, SERVER, 40001, 21, 5, FIN_ACK), *SESSION],           # after an earlier one's FIN
], ids=["another-syn", "syn-after-fin"])
def test_ports_used_again_by_a_new_connection_leave_the_capture_to_tshark(tmp_path, reused):
    pcap = write(tmp_path / "reused.pcap", reused)
    assert tcp_headers.shared_rows(pcap) is None
    tshark._shared_pass.cache_clear()
    rows = tshark.fields(pcap, list(NAMES), "tcp", OPTIONS)
    assert rows == tshark._fields(pcap, list(NAMES), "tcp", OPTIONS)
    assert {row[2] for row in rows} == {"0", "1"}   # tshark's two streams


def test_the_counters_count_what_tshark_flags(tmp_path):
    pcap = write(tmp_path / "session.pcap", SESSION)
    flagged = tshark._fields(pcap, ["frame.number", "tcp.len", "tcp.analysis.retransmission",
                                    "tcp.analysis.initial_rtt"], "tcp", ())
    assert [n for n, size, again, _ in flagged if again and size == "0"] == ["2", "12"]
    assert {rtt for *_, rtt in flagged if rtt} == {"2.000002000"}
    found = counters(pcap, "tcp", ".".join(map(str, CLIENT)), rto_floor_s=0.2)
    assert (found.retransmissions, found.timeouts) == (4, 3)
    assert (found.connections, found.handshakes) == (1, 1)
