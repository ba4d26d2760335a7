"""The IPv4 packets of a pcap file, read from its bytes: what sctp_headers.py and
tcp_headers.py make tshark's rows from, without starting tshark.

It reads only what it reads exactly as tshark would: a pcap file (not pcapng, either time
precision and byte order) of Ethernet frames captured whole, IPv4 without fragments. It passes
the IPv6 router solicitations and MLD reports a link sends by itself, and packets of other
protocols; on anything else (ICMP or UDP, which tshark may find TCP or SCTP inside, VLAN tags,
other IPv6) it raises Unread, and the caller asks tshark.

    frame_records(pcap, protocol)   (time as tshark prints it, bytes, IP header, payload, end)
"""
from __future__ import annotations

import struct
from collections.abc import Iterator
from pathlib import Path

_MICRO_MAGIC, _NANO_MAGIC = 0xA1B2C3D4, 0xA1B23C4D
_ETHERNET = 1
_FILE_HEADER, _RECORD, _ETH = 24, 16, 14
_IPV4, _IPV6, _ICMP, _UDP = 0x0800, 0x86DD, 1, 17
_HOP_BY_HOP, _ICMPV6, _ICMPV6_INFORMATIONAL = 0, 58, 128
_VLAN_ETHERTYPES = (0x8100, 0x88A8)
_IPV4_HEADER = struct.Struct(">B1xH2xH1xB")   # version and length, total length, fragment, protocol


class Unread(Exception):
    """The capture holds a packet this module does not read as tshark would."""


def frame_records(pcap: Path, protocol: int) -> Iterator[tuple[str, bytes, int, int, int]]:
    """(frame.time_epoch as tshark prints it, the file's bytes, where the IPv4 header starts,
    where its payload starts, where it ends) of every IPv4 packet of `protocol`, in capture
    order; Unread where the capture holds what tshark might read differently."""
    data = pcap.read_bytes()
    header = _file_header(data) if len(data) >= _FILE_HEADER else None
    if header is None:
        raise Unread
    record, nano = header
    offset, end = _FILE_HEADER, len(data)
    while offset + _RECORD <= end:
        seconds, fraction, captured, length = record.unpack_from(data, offset)
        offset += _RECORD
        if captured != length or offset + captured > end:
            raise Unread  # a frame cut short: tshark would mark what is missing
        found = ipv4_payload(data, offset, offset + captured, protocol)
        if found is not None:
            # tshark prints frame.time_epoch with nine decimals whatever the file's precision
            yield ((f"{seconds}.{fraction:09d}" if nano else f"{seconds}.{fraction:06d}000"),
                   data, *found)
        offset += captured
    if offset != end:
        raise Unread


def _file_header(data: bytes) -> tuple[struct.Struct, bool] | None:
    for order in "<>":
        magic, _, _, _, _, _, link_type = struct.unpack_from(order + "IHHiIII", data)
        if magic in (_MICRO_MAGIC, _NANO_MAGIC):
            if link_type != _ETHERNET:
                return None
            return struct.Struct(order + "IIII"), magic == _NANO_MAGIC
    return None


def ipv4_payload(data: bytes, frame: int, end: int, protocol: int
                 ) -> tuple[int, int, int] | None:
    """(IPv4 header, payload, end) of the frame at data[frame:end] if it carries `protocol`."""
    if end - frame < _ETH + 20:
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
    if carried in (_ICMP, _UDP):
        raise Unread  # an ICMP error quoting a header, SCTP over UDP: tshark reads inside
    if carried != protocol:
        return None
    if fragment & 0x3FFF:
        raise Unread  # a fragment
    payload, ip_end = ip + (first & 0x0F) * 4, ip + total
    if ip_end > end or payload + 12 > ip_end:
        raise Unread
    return ip, payload, ip_end


def _ipv6_from_the_link(data: bytes, ip: int, end: int) -> None:
    """Passes the IPv6 packets a link's kernel sends by itself (router solicitations, MLD
    reports behind a hop-by-hop header); raises Unread on any other."""
    header, offset = data[ip + 6], ip + 40
    if header == _HOP_BY_HOP and offset + 2 <= end:
        header, offset = data[offset], offset + (data[offset + 1] + 1) * 8
    if header != _ICMPV6 or offset >= end or data[offset] < _ICMPV6_INFORMATIONAL:
        raise Unread
