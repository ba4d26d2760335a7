"""The TCP shared pass (SHARED_PASSES["tcp"]) read from the capture file's bytes, as the rows
tshark prints for it, without starting tshark.

Its fields are header fields, and two that tshark derives from its conversations, which this
derives the same way: `tcp.stream`, numbered by first appearance of each address and port pair,
and `tcp.seq`, relative to the SYN's sequence number (where the capture missed the SYN: to one
before the first acknowledgement the other direction sent, or else before its first segment's).
tshark's start and its dissection of every packet (about 20 µs each, its TCP analysis included)
were most of what the analysis of a TCP capture cost.

It reads what pcap_records.py reads (a frame cut short after its TCP header too: tshark gives
it the same row), and leaves the capture to tshark where a pair
of ports may be used again by a new connection (a SYN with another sequence number than the
direction's first, or after it had sent without one), whose new stream number tshark gives by
rules of its own. tests/unit/test_tcp_headers.py holds it to
tshark's rows.

    shared_rows(pcap)     [[time, ip.src, stream, sport, dport, syn, ack, fin, seq, seq_raw,
                            len], ...]
"""
from __future__ import annotations

import struct
from pathlib import Path

from .pcap_records import Unread, frame_records

_TCP = 6
_FIN, _SYN, _ACK = 0x01, 0x02, 0x10
_TCP_HEADER = struct.Struct(">HHIIBB")   # ports, sequence, acknowledgement, offset, flags
SEQ_SPACE = 1 << 32


class _Direction:
    __slots__ = ("base", "syn_seq")

    def __init__(self, seq: int, flags: int) -> None:
        self.syn_seq = seq if flags & _SYN else None
        self.base = seq if flags & _SYN else seq - 1


def shared_rows(pcap: Path) -> list[list[str]] | None:
    """The rows of the TCP shared pass, or None where tshark must read the capture."""
    try:
        return _rows(pcap)
    except Unread:
        return None


def _rows(pcap: Path) -> list[list[str]]:
    rows: list[list[str]] = []
    streams: dict[tuple[bytes, int, bytes, int], int] = {}
    directions: dict[tuple[bytes, int, bytes, int], _Direction] = {}
    for time_text, data, ip, payload, end, held in frame_records(pcap, _TCP):
        if payload + 20 > held:
            raise Unread
        source_port, destination_port, seq, ack, offset, flags = _TCP_HEADER.unpack_from(
            data, payload)
        header = (offset >> 4) * 4
        if header < 20 or payload + header > held:
            raise Unread
        source, destination = data[ip + 12:ip + 16], data[ip + 16:ip + 20]
        pair = (source, source_port, destination, destination_port)
        way = pair
        if pair not in streams:
            pair = (destination, destination_port, source, source_port)
            if pair not in streams:
                streams[pair] = len(streams)
        direction = directions.get(way)
        if direction is None:
            direction = directions[way] = _Direction(seq, flags)
        elif flags & _SYN and direction.syn_seq != seq:
            raise Unread  # the pair's ports used again by a new connection
        back = (destination, destination_port, source, source_port)
        if flags & _ACK and back not in directions:
            # as tshark does: the other direction's numbers relative to one before this ack
            directions[back] = _Direction(ack, 0)
        rows.append([time_text, "{}.{}.{}.{}".format(*source), str(streams[pair]),
                     str(source_port), str(destination_port), "1" if flags & _SYN else "0",
                     "1" if flags & _ACK else "0", "1" if flags & _FIN else "0",
                     str((seq - direction.base) % SEQ_SPACE), str(seq),
                     str(end - payload - header)])
    return rows
