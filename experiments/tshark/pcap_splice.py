"""A capture of headers made whole where its reading needs payload: the records of a capture cut
short by a snaplen, each packet that a second capture of the same interface holds whole put back
in its place.

Each capture stamps a packet with its own reading of the clock, microseconds apart, so a packet
of the whole capture is the next record of the cut one with its length on the wire and its
first bytes, stamped within SAME_PACKET_WITHIN_S; it takes the cut record's time. The cut
capture's order and times are kept: two captures merged by time could swap packets, and a
burst in virtual time is stamped alike. What the whole capture holds stamped later than
SAME_PACKET_WITHIN_S after the cut one's last packet came after that capture stopped (a stray
packet of a closed connection); it is left out.

    splice(headers, whole, out)   the packets put back whole; SpliceError if one is not found
    cut(whole, out, snaplen)      a capture as a snaplen would have held it
"""
from __future__ import annotations

import struct
from collections.abc import Iterator
from pathlib import Path

from .pcap_records import Record, Unread, pcap_format, records

_FILE_HEADER, _RECORD = 24, 16
SAME_PACKET_WITHIN_S = 0.01


class SpliceError(Exception):
    """The two captures are not of the same packets."""


def splice(headers: Path, whole: Path, out: Path) -> int:
    """Writes `out`: the records of `headers` in order and at their times, each one `whole`
    holds with the bytes `whole` holds, under `whole`'s file header (its snaplen). The number
    of packets put back."""
    cut, kept = headers.read_bytes(), whole.read_bytes()
    cut_format, kept_format = pcap_format(cut), pcap_format(kept)
    if cut_format is None or kept_format is None:
        raise SpliceError(f"{headers if cut_format is None else whole} is not a pcap file")
    if (cut_format[0].format, *cut_format[1:]) != (kept_format[0].format, *kept_format[1:]):
        raise SpliceError(f"{headers} and {whole} differ in byte order, time precision or "
                          "link type")
    layout, nano, _ = cut_format
    per_second = 1_000_000_000 if nano else 1_000_000
    within = round(SAME_PACKET_WITHIN_S * per_second)
    try:
        wanted = list(records(kept, layout))
        pieces, placed, last = _placed(cut, records(cut, layout), kept, wanted, layout,
                                       per_second, within)
    except Unread:
        raise SpliceError(f"{headers} or {whole} ends inside a packet") from None
    missing = [r for r in wanted[placed:] if r.seconds * per_second + r.fraction <= last + within]
    if missing:
        first = missing[0]
        raise SpliceError(f"{len(missing)} packets of {whole} are not in {headers} (the first "
                          f"at {first.seconds}.{first.fraction}, {first.length} bytes)")
    with open(out, "wb") as file:
        file.write(kept[:_FILE_HEADER])
        file.writelines(pieces)
    return placed


def _placed(cut: bytes, cut_records: Iterator[Record], kept: bytes, wanted: list[Record],
            layout: struct.Struct, per_second: int, within: int
            ) -> tuple[list[bytes | memoryview], int, int]:
    """The output's records after its file header, as pieces of the two files' bytes; how
    many of `wanted` they hold; the time of the cut capture's last packet (in file units)."""
    cut_view, kept_view = memoryview(cut), memoryview(kept)
    pieces: list[bytes | memoryview] = []
    copied_from, placed, last = _FILE_HEADER, 0, 0
    for r in cut_records:
        last = r.seconds * per_second + r.fraction
        if placed == len(wanted):
            continue
        w = wanted[placed]
        if (r.length != w.length or abs(last - (w.seconds * per_second + w.fraction)) > within
                or cut_view[r.frame:r.frame + r.captured]
                != kept_view[w.frame:w.frame + r.captured]):
            continue
        pieces.append(cut_view[copied_from:r.frame - _RECORD])
        pieces.append(layout.pack(r.seconds, r.fraction, w.captured, w.length))
        pieces.append(kept_view[w.frame:w.frame + w.captured])
        copied_from, placed = r.frame + r.captured, placed + 1
    pieces.append(cut_view[copied_from:])
    return pieces, placed, last


def cut(whole: Path, out: Path, snaplen: int) -> None:
    """Writes `out`: `whole` as a capture at `snaplen` would have held it (the comparison of
    a capture of headers with the whole packets it was made from)."""
    data = whole.read_bytes()
    found = pcap_format(data)
    if found is None:
        raise SpliceError(f"{whole} is not a pcap file")
    layout = found[0]
    header = bytearray(data[:_FILE_HEADER])
    layout_order = layout.format[0]
    header[16:20] = snaplen.to_bytes(4, "little" if layout_order == "<" else "big")
    with open(out, "wb") as file:
        file.write(header)
        try:
            for r in records(data, layout):
                kept = min(r.captured, snaplen)
                file.write(layout.pack(r.seconds, r.fraction, kept, r.length))
                file.write(data[r.frame:r.frame + kept])
        except Unread:
            raise SpliceError(f"{whole} ends inside a packet") from None
