"""An association's retransmissions are counted from its TSNs in serial-number arithmetic,
relative to the first chunk captured: that chunk's predecessor arriving late (its first copy
lost) is one retransmission, not a reason to count every later chunk as one, and TSNs that wrap
past 2^32 keep their order."""
from __future__ import annotations

import struct

from experiments.tshark.transport import TsnTracker, counters
from tests.unit.test_tshark_shared_pass import CLIENT, INIT, SERVER, data_chunk, sctp, write_pcap

INIT_ACK = struct.pack(">BBHIIHHI", 2, 0, 20, 77, 65536, 10, 10, 5000)


def test_a_lost_first_chunk_is_one_retransmission_and_a_wrap_is_none():
    tracker = TsnTracker()
    assert [tracker.see(tsn, t) for t, tsn in enumerate([11, 12, 13])] == [None, None, None]
    assert tracker.see(10, 5.0) == 5.0          # sent first, its first copy lost: 5 s after 11
    assert tracker.see(14, 6.0) is None         # the rest are new, not retransmissions
    assert tracker.see(12, 7.0) == 6.0
    wrapping = TsnTracker()
    tsns = [4_294_967_294, 4_294_967_295, 0, 1]
    assert [wrapping.see(tsn, t) for t, tsn in enumerate(tsns)] == [None] * 4
    assert not wrapping.is_new(0) and wrapping.is_new(2)


def test_an_association_whose_first_chunk_came_late_counts_that_chunk_alone(tmp_path):
    chunks = [101, 102, 103, 100, 104, 105]     # 100's first copy lost
    frames = [sctp(CLIENT, SERVER, 50001, 21, INIT), sctp(SERVER, CLIENT, 21, 50001, INIT_ACK)]
    frames += [sctp(SERVER, CLIENT, 21, 50001, data_chunk(tsn, 1, b"x" * 8)) for tsn in chunks]
    pcap = tmp_path / "late.pcap"
    write_pcap(pcap, frames)
    found = counters(pcap, "sctp", ".".join(map(str, CLIENT)), rto_floor_s=0.2)
    assert (found.retransmissions, found.timeouts, found.connections) == (1, 1, 1)
