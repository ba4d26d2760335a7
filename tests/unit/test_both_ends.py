"""testbed ends refuses a result folder whose runs were captured at the client only, saying
what to set; the packet kinds it counts are read from the transport headers."""
from __future__ import annotations

import json

import pytest

from analysis import both_ends, results

pytestmark = pytest.mark.unit


def test_a_result_captured_at_the_client_only_is_refused_with_what_to_set(tmp_path):
    (tmp_path / "meta.json").write_text(json.dumps({"experiment": {
        "name": "only-client", "capture_at": ["client"]}}))
    with pytest.raises(results.ResultError, match=r'capture_at = \["client", "server"\]'):
        both_ends.read(results.load(tmp_path))


@pytest.mark.parametrize("flags, payload, kind", [
    (0x02, b"", "SYN"), (0x12, b"", "SYN-ACK"), (0x11, b"", "FIN"), (0x14, b"", "RST"),
    (0x10, b"", "ack"), (0x18, b"abc", "data")])
def test_tcp_segments_are_told_by_their_flags_and_payload(flags, payload, kind):
    header = bytearray(20)
    header[12], header[13] = 5 << 4, flags
    data = bytes(header) + payload
    assert both_ends._kind(both_ends.TCP, data, 0, len(data), len(data)) == kind


def test_an_sctp_packet_is_its_first_chunk_even_when_cut_before_it():
    packet = bytes(12) + bytes([10, 0, 0, 4])
    assert both_ends._kind(both_ends.SCTP, packet, 0, len(packet), len(packet)) == "COOKIE ECHO"
    assert both_ends._kind(both_ends.SCTP, packet, 0, len(packet), 12) == "chunk -1"
