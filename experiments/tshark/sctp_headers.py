"""The SCTP shared pass (SHARED_PASSES["sctp"]) read from the capture file's bytes, as the
rows tshark prints for it, without starting tshark.

Every field of that pass is a header field: the frame's time, the IPv4 source, the ports, and
each chunk's type and length, a DATA chunk's TSN and stream, an INIT's tag. tshark's start and
its dissection of every packet (about 15 µs each) were most of what the analysis of an SCTP
capture cost; this reads the same fields in a few µs a packet.

It reads only what it reads exactly as tshark would: a pcap file (not pcapng) of Ethernet
frames captured whole, IPv4 without fragments, every chunk within its packet. On anything else
(and on ICMP or UDP, which tshark may find SCTP inside) it returns None and the caller asks
tshark. tests/unit/test_sctp_headers.py holds it to tshark's rows.

    shared_rows(pcap)     [[time, ip.src, sport, dport, types, lengths, tsns, sids, tags], ...]
"""
from __future__ import annotations

import struct
from pathlib import Path

_MICRO_MAGIC, _NANO_MAGIC = 0xA1B2C3D4, 0xA1B23C4D
_ETHERNET = 1
_FILE_HEADER, _RECORD, _ETH = 24, 16, 14
_IPV4, _IPV6, _SCTP, _ICMP, _UDP = 0x0800, 0x86DD, 132, 1, 17
_HOP_BY_HOP, _ICMPV6, _ICMPV6_INFORMATIONAL = 0, 58, 128
_DATA, _INIT, _I_DATA = 0, 1, 64
_VLAN_ETHERTYPES = (0x8100, 0x88A8)
_IPV4_HEADER = struct.Struct(">B1xH2xH1xB")   # version and length, total length, fragment, protocol
_PORTS = struct.Struct(">HH")
_CHUNK_HEADER = struct.Struct(">BBH")          # type, flags, length
_DATA_FIELDS = struct.Struct(">IH")            # TSN, stream
_TAG = struct.Struct(">I")


class _Unread(Exception):
    """The capture holds a packet this module does not read as tshark would."""


def shared_rows(pcap: Path) -> list[list[str]] | None:
    """The rows of the SCTP shared pass, or None where tshark must read the capture."""
    data = pcap.read_bytes()
    if len(data) < _FILE_HEADER:
        return None
    header = _file_header(data)
    if header is None:
        return None
    record, nano = header
    try:
        return _rows(data, record, nano)
    except _Unread:
        return None


def _file_header(data: bytes) -> tuple[struct.Struct, bool] | None:
    for order in "<>":
        magic, _, _, _, _, _, link_type = struct.unpack_from(order + "IHHiIII", data)
        if magic in (_MICRO_MAGIC, _NANO_MAGIC):
            if link_type != _ETHERNET:
                return None
            return struct.Struct(order + "IIII"), magic == _NANO_MAGIC
    return None


def _rows(data: bytes, record: struct.Struct, nano: bool) -> list[list[str]]:
    rows, offset, end = [], _FILE_HEADER, len(data)
    while offset + _RECORD <= end:
        seconds, fraction, captured, length = record.unpack_from(data, offset)
        offset += _RECORD
        if captured != length or offset + captured > end:
            raise _Unread  # a frame cut short: tshark would mark what is missing
        row = _sctp_row(data, offset, offset + captured)
        if row is not None:
            # tshark prints frame.time_epoch with nine decimals whatever the file's precision
            row[0] = f"{seconds}.{fraction:09d}" if nano else f"{seconds}.{fraction:06d}000"
            rows.append(row)
        offset += captured
    if offset != end:
        raise _Unread
    return rows


def _sctp_row(data: bytes, frame: int, end: int) -> list[str] | None:
    """The row of the frame at data[frame:end], or None when it holds no SCTP."""
    if end - frame < _ETH + 20:
        return None
    ethertype = data[frame + 12] << 8 | data[frame + 13]
    if ethertype in _VLAN_ETHERTYPES:
        raise _Unread
    if ethertype == _IPV6:
        _ipv6_without_sctp(data, frame + _ETH, end)
        return None
    if ethertype != _IPV4:
        return None
    ip = frame + _ETH
    first, total, fragment, protocol = _IPV4_HEADER.unpack_from(data, ip)
    if protocol in (_ICMP, _UDP):
        raise _Unread  # an ICMP error quoting SCTP, SCTP over UDP: tshark finds SCTP inside
    if protocol != _SCTP:
        return None
    if fragment & 0x3FFF:
        raise _Unread  # a fragment
    sctp, ip_end = ip + (first & 0x0F) * 4, ip + total
    if ip_end > end or sctp + 12 > ip_end:
        raise _Unread
    src = "{}.{}.{}.{}".format(*data[ip + 12:ip + 16])
    source_port, destination_port = _PORTS.unpack_from(data, sctp)
    types, lengths, tsns, sids, tags = _chunks(data, sctp + 12, ip_end)
    return ["", src, str(source_port), str(destination_port), types, lengths, tsns, sids, tags]


def _ipv6_without_sctp(data: bytes, ip: int, end: int) -> None:
    """Passes the IPv6 packets a link's kernel sends by itself (router solicitations, MLD
    reports behind a hop-by-hop header); raises _Unread on any other."""
    header, offset = data[ip + 6], ip + 40
    if header == _HOP_BY_HOP and offset + 2 <= end:
        header, offset = data[offset], offset + (data[offset + 1] + 1) * 8
    if header != _ICMPV6 or offset >= end or data[offset] < _ICMPV6_INFORMATIONAL:
        raise _Unread


def _chunks(data: bytes, offset: int, end: int) -> tuple[str, str, str, str, str]:
    types, lengths, tsns, sids, tags = [], [], [], [], []
    while offset < end:
        if offset + 4 > end:
            raise _Unread
        kind, _, length = _CHUNK_HEADER.unpack_from(data, offset)
        if length < 4 or offset + length > end or kind == _I_DATA:
            raise _Unread
        types.append(str(kind))
        lengths.append(str(length))
        if kind == _DATA:
            if length < 16:
                raise _Unread
            tsn, sid = _DATA_FIELDS.unpack_from(data, offset + 4)
            tsns.append(str(tsn))
            sids.append(f"0x{sid:04x}")
        elif kind == _INIT:
            if length < 20:
                raise _Unread
            tags.append(f"0x{_TAG.unpack_from(data, offset + 4)[0]:08x}")
        offset += (length + 3) & ~3
    return "|".join(types), "|".join(lengths), "|".join(tsns), "|".join(sids), "|".join(tags)
