"""The SCTP shared pass (SHARED_PASSES["sctp"]) read from the capture file's bytes, as the
rows tshark prints for it, without starting tshark.

Every field of that pass is a header field: the frame's time, the IPv4 source, the ports, and
each chunk's type and length, a DATA chunk's TSN and stream, an INIT's tag. tshark's start and
its dissection of every packet (about 15 µs each) were most of what the analysis of an SCTP
capture cost; this reads the same fields in a few µs a packet.

It reads what pcap_records.py reads, with every chunk within its packet and no I-DATA; on
anything else it returns None and the caller asks tshark. In a frame cut short by a snaplen it
reads the chunks whose fields were captured, where tshark reads none of them, and gives the
row tshark prints for the whole frame; a frame cut before its last chunk's fields it leaves to
tshark. tests/unit/test_sctp_headers.py holds
it to tshark's rows.

    shared_rows(pcap)     [[time, ip.src, sport, dport, types, lengths, tsns, sids, tags], ...]
    rows_beside_tshark(pcap, tshark's rows with frame.number first)   the same, where the
                          capture holds both cut frames and a packet only tshark reads
"""
from __future__ import annotations

import struct
from pathlib import Path

from .pcap_records import Unread, frame_records, readable_frame_records

_SCTP = 132
_DATA, _INIT, _I_DATA = 0, 1, 64
_PORTS = struct.Struct(">HH")
_CHUNK_HEADER = struct.Struct(">BBH")          # type, flags, length
_DATA_FIELDS = struct.Struct(">IH")            # TSN, stream
_TAG = struct.Struct(">I")
_FIELDS_READ = 16   # of a chunk: its header, a DATA chunk's TSN and stream, an INIT's tag


def shared_rows(pcap: Path) -> list[list[str]] | None:
    """The rows of the SCTP shared pass, or None where tshark must read the capture."""
    try:
        return [_sctp_row(time_text, data, ip, sctp, end, held)
                for time_text, data, ip, sctp, end, held in frame_records(pcap, _SCTP)]
    except Unread:
        return None


def rows_beside_tshark(pcap: Path, numbered_rows: list[list[str]]) -> list[list[str]]:
    """The shared pass of a capture that holds SCTP packets cut short and a packet only tshark
    reads (an ICMP error quoting SCTP: usrsctp's peer gone from its UDP port): tshark's rows,
    `numbered_rows` (frame.number first), each with the row read here in its place wherever
    this reads the frame, so that the chunks tshark reads none of in a cut frame are there."""
    mine: dict[str, list[str]] = {}
    for number, record in readable_frame_records(pcap, _SCTP):
        try:
            mine[str(number)] = _sctp_row(*record)
        except Unread:
            continue  # cut before its last chunk's fields: tshark's row stands
    return [mine.get(row[0], list(row[1:])) for row in numbered_rows]


def _sctp_row(time_text: str, data: bytes, ip: int, sctp: int, end: int, held: int
              ) -> list[str]:
    src = "{}.{}.{}.{}".format(*data[ip + 12:ip + 16])
    source_port, destination_port = _PORTS.unpack_from(data, sctp)
    types, lengths, tsns, sids, tags = _chunks(data, sctp + 12, end, held)
    return [time_text, src, str(source_port), str(destination_port), types, lengths, tsns,
            sids, tags]


def _chunks(data: bytes, offset: int, end: int, held: int) -> tuple[str, str, str, str, str]:
    """The chunks' cells. In a frame cut short (`held` before `end`) each chunk's fields must
    be within what was captured, and the last captured chunk must be the packet's last."""
    types, lengths, tsns, sids, tags = [], [], [], [], []
    while offset < end:
        if offset + 4 > end:
            raise Unread
        if offset + 4 > held:
            raise Unread  # a chunk the capture cut away
        kind, _, length = _CHUNK_HEADER.unpack_from(data, offset)
        if length < 4 or offset + length > end or kind == _I_DATA:
            raise Unread
        if offset + min(length, _FIELDS_READ) > held:
            raise Unread  # its fields were cut away
        types.append(str(kind))
        lengths.append(str(length))
        if kind == _DATA:
            if length < 16:
                raise Unread
            tsn, sid = _DATA_FIELDS.unpack_from(data, offset + 4)
            tsns.append(str(tsn))
            sids.append(f"0x{sid:04x}")
        elif kind == _INIT:
            if length < 20:
                raise Unread
            tags.append(f"0x{_TAG.unpack_from(data, offset + 4)[0]:08x}")
        offset += (length + 3) & ~3
    return "|".join(types), "|".join(lengths), "|".join(tsns), "|".join(sids), "|".join(tags)
