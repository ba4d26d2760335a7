"""The IPv4 packets of a pcap file, read from its bytes: what sctp_headers.py and
tcp_headers.py make tshark's rows from, without starting tshark.

It reads only what it reads exactly as tshark would: a pcap file (not pcapng, either time
precision and byte order) of Ethernet frames, IPv4 without fragments. A frame may be cut short
by a snaplen after its IPv4 header (a capture of headers, `[run] capture = "headers"`): the
caller reads its headers within what was captured and the lengths from the IPv4 header. It
passes the IPv6 router solicitations and MLD reports a link sends by itself, and packets of
other protocols. It reads SCTP inside UDP where both ports are 9899 (RFC 6951's, which tshark
decodes as SCTP by default): usrsctp's packets. On anything else (ICMP or other UDP, which
tshark may find TCP or SCTP inside, VLAN tags, other IPv6) it raises Unread, and the caller
asks tshark.

    frame_records(pcap, protocol)   (time as tshark prints it, bytes, IP header, payload,
                                     the packet's end, the end of what was captured of it)
    pcap_format(data), records(data, layout)   a pcap file's records, for any reader of them
"""
from __future__ import annotations

import struct
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

_MICRO_MAGIC, _NANO_MAGIC = 0xA1B2C3D4, 0xA1B23C4D
_ETHERNET = 1
_FILE_HEADER, _RECORD, _ETH = 24, 16, 14
_IPV4, _IPV6, _ICMP, _UDP, _SCTP = 0x0800, 0x86DD, 1, 17, 132
_UDP_HEADER = 8
SCTP_OVER_UDP_PORT = 9899
_HOP_BY_HOP, _ICMPV6, _ICMPV6_INFORMATIONAL = 0, 58, 128
_VLAN_ETHERTYPES = (0x8100, 0x88A8)
_IPV4_HEADER = struct.Struct(">B1xH2xH1xB")   # version and length, total length, fragment, protocol


class Unread(Exception):
    """The capture holds a packet this module does not read as tshark would."""


class Record(NamedTuple):
    seconds: int
    fraction: int      # micro- or nanoseconds, as the file's header says
    captured: int
    length: int        # on the wire; more than `captured` in a frame cut short
    frame: int         # where the frame's bytes start in the file's bytes


def pcap_format(data: bytes) -> tuple[struct.Struct, bool, int] | None:
    """(the record header's layout, whether times are in nanoseconds, the link type) of a pcap
    file's bytes (either byte order), or None if they are not a pcap file."""
    if len(data) < _FILE_HEADER:
        return None
    for order in "<>":
        magic, _, _, _, _, _, link_type = struct.unpack_from(order + "IHHiIII", data)
        if magic in (_MICRO_MAGIC, _NANO_MAGIC):
            return struct.Struct(order + "IIII"), magic == _NANO_MAGIC, link_type
    return None


def records(data: bytes, layout: struct.Struct) -> Iterator[Record]:
    """The records of a pcap file's bytes in file order; Unread if it ends inside one."""
    offset, end = _FILE_HEADER, len(data)
    while offset + _RECORD <= end:
        seconds, fraction, captured, length = layout.unpack_from(data, offset)
        offset += _RECORD
        if offset + captured > end:
            raise Unread
        yield Record(seconds, fraction, captured, length, offset)
        offset += captured
    if offset != end:
        raise Unread


def holds_cut_frames(pcap: Path) -> bool:
    """Whether a pcap file holds a frame captured short of its length (a snaplen)."""
    data = pcap.read_bytes()
    found = pcap_format(data)
    try:
        return found is not None and any(r.captured < r.length for r in records(data, found[0]))
    except Unread:
        return False


def frame_records(pcap: Path, protocol: int
                  ) -> Iterator[tuple[str, bytes, int, int, int, int]]:
    """(frame.time_epoch as tshark prints it, the file's bytes, where the IPv4 header starts,
    where its payload starts, where the packet ends, where its captured bytes end) of every
    IPv4 packet of `protocol`, in capture order; Unread where the capture holds what tshark
    might read differently. The last two differ in a frame cut short: read nothing past the
    second (it is the next record's)."""
    for _, record in _numbered(pcap, protocol, skip_unread=False):
        yield record


def readable_frame_records(pcap: Path, protocol: int
                           ) -> Iterator[tuple[int, tuple[str, bytes, int, int, int, int]]]:
    """(frame.number, frame_records' tuple) of every IPv4 packet of `protocol` read here,
    passing over the packets frame_records stops at (an ICMP error, a fragment): those are
    tshark's to read. Unread only where the file itself cannot be read."""
    return _numbered(pcap, protocol, skip_unread=True)


def _numbered(pcap: Path, protocol: int, skip_unread: bool
              ) -> Iterator[tuple[int, tuple[str, bytes, int, int, int, int]]]:
    data = pcap.read_bytes()
    found_format = pcap_format(data)
    if found_format is None or found_format[2] != _ETHERNET:
        raise Unread
    layout, nano, _ = found_format
    for number, (seconds, fraction, captured, length, frame) in enumerate(
            records(data, layout), start=1):
        if captured > length:
            raise Unread
        try:
            found = ipv4_payload(data, frame, frame + captured, protocol, captured < length)
        except Unread:
            if not skip_unread:
                raise
            continue
        if found is not None:
            # tshark prints frame.time_epoch with nine decimals whatever the file's precision
            yield number, ((f"{seconds}.{fraction:09d}" if nano
                            else f"{seconds}.{fraction:06d}000"), data, *found)


def ipv4_payload(data: bytes, frame: int, end: int, protocol: int, cut: bool = False
                 ) -> tuple[int, int, int, int] | None:
    """(IPv4 header, payload, the packet's end, its captured end) of the frame at
    data[frame:end] if it carries `protocol`; `cut`: the frame was captured short of its
    length, which its IPv4 header still holds."""
    if end - frame < _ETH + 20:
        if cut:
            raise Unread
        return None
    ethertype = data[frame + 12] << 8 | data[frame + 13]
    if ethertype in _VLAN_ETHERTYPES:
        raise Unread
    if ethertype == _IPV6:
        _ipv6_from_the_link(data, frame + _ETH, end)
        return None
    if ethertype != _IPV4:
        return None
    ip = frame + _ETH
    first, total, fragment, carried = _IPV4_HEADER.unpack_from(data, ip)
    payload, ip_end = ip + (first & 0x0F) * 4, ip + total
    if carried == _UDP and not fragment & 0x3FFF and _sctp_inside(data, payload, end):
        if protocol != _SCTP:
            return None
        payload += _UDP_HEADER
    elif carried in (_ICMP, _UDP):
        raise Unread  # an ICMP error quoting a header, other UDP: tshark may read inside
    elif carried != protocol:
        return None
    if fragment & 0x3FFF:
        raise Unread  # a fragment
    if payload + 12 > ip_end or payload > end or (ip_end > end and not cut):
        raise Unread  # a frame cut within its IPv4 header, or a packet longer than its frame
    return ip, payload, ip_end, min(ip_end, end)


def _sctp_inside(data: bytes, udp: int, end: int) -> bool:
    """SCTP over UDP as tshark decodes it without being told: both ports RFC 6951's (tshark's
    udp.port 9899 for sctp), as between two usrsctp endpoints of the testbed."""
    return udp + _UDP_HEADER <= end and \
        data[udp:udp + 4] == SCTP_OVER_UDP_PORT.to_bytes(2, "big") * 2


def _ipv6_from_the_link(data: bytes, ip: int, end: int) -> None:
    """Passes the IPv6 packets a link's kernel sends by itself (router solicitations, MLD
    reports behind a hop-by-hop header); raises Unread on any other."""
    header, offset = data[ip + 6], ip + 40
    if header == _HOP_BY_HOP and offset + 2 <= end:
        header, offset = data[offset], offset + (data[offset + 1] + 1) * 8
    if header != _ICMPV6 or offset >= end or data[offset] < _ICMPV6_INFORMATIONAL:
        raise Unread
