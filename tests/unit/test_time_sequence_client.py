"""The time-sequence plot finds the client as the host that opens a connection or association,
not as the sender of the capture's first packet: a capture may begin with the tail of an
earlier run's association (the server's SHUTDOWN ACK, retransmitted after a loss), and then
the plot showed the client's commands as the server's data (seen in CI on sctp-ms-cp at 3%
loss)."""
from __future__ import annotations

import struct
from pathlib import Path

from experiments.tshark.transport import time_sequence
from tests.unit.test_tshark_shared_pass import (
    ACK,
    CLIENT,
    INIT,
    PSH_ACK,
    SERVER,
    SYN,
    SYN_ACK,
    data_chunk,
    sctp,
    tcp,
    write_pcap,
)

SHUTDOWN_ACK, SHUTDOWN_COMPLETE = struct.pack(">BBH", 8, 0, 4), struct.pack(">BBH", 14, 0, 4)


def sack(cum_tsn: int) -> bytes:
    return struct.pack(">BBHIIHH", 3, 0, 16, cum_tsn, 65536, 0, 0)


def test_an_earlier_association_s_tail_does_not_turn_the_plot_around(tmp_path: Path):
    pcap = tmp_path / "tail.pcap"
    write_pcap(pcap, [
        sctp(SERVER, CLIENT, 21, 49999, SHUTDOWN_ACK),          # the earlier run's end
        sctp(CLIENT, SERVER, 49999, 21, SHUTDOWN_COMPLETE),
        sctp(CLIENT, SERVER, 50001, 21, INIT),
        sctp(SERVER, CLIENT, 21, 50001, data_chunk(1000, 0, b"220 ready\r\n")),
        sctp(CLIENT, SERVER, 50001, 21, data_chunk(7, 0, b"NLST\r\n") + sack(1000)),
        sctp(SERVER, CLIENT, 21, 50001, data_chunk(1001, 1, b"x" * 100)),
        sctp(CLIENT, SERVER, 50001, 21, sack(1001)),
    ])
    seq = time_sequence(pcap, "sctp")
    assert seq.streams() == [0, 1] and seq.flows == 1
    assert [m.stream for m in seq.data] == [0, 1]            # the server's chunks only
    assert len(seq.acks) == 2


def test_a_tcp_capture_that_begins_with_the_server_s_packet(tmp_path: Path):
    pcap = tmp_path / "tail.pcap"
    write_pcap(pcap, [
        tcp(SERVER, CLIENT, 21, 39999, 70, ACK | 0x01),          # the earlier run's FIN
        tcp(CLIENT, SERVER, 40001, 21, 100, SYN),
        tcp(SERVER, CLIENT, 21, 40001, 500, SYN_ACK),
        tcp(CLIENT, SERVER, 40001, 21, 101, ACK),
        tcp(SERVER, CLIENT, 21, 40001, 501, PSH_ACK, b"220 ready\r\n"),
        tcp(CLIENT, SERVER, 40001, 21, 101, PSH_ACK, b"NLST\r\n"),
    ])
    seq = time_sequence(pcap, "tcp")
    assert [m.value for m in seq.data] == [len(b"220 ready\r\n")]   # not the NLST's 6 bytes
    assert [m.time_s for m in seq.acks] == [3.0, 5.0]         # the client's, not the server's
