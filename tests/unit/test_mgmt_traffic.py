"""What the deployment's check counts as traffic on the management network: every packet but
SSH and the link's own upkeep (ARP, an interface's IGMP report), read by tshark from a pcap
written here packet by packet."""
from __future__ import annotations

import socket
import struct
from pathlib import Path

from experiments.deploy.controller import mgmt_traffic

MAC_A, MAC_B = bytes.fromhex("020000000001"), bytes.fromhex("020000000002")


def ipv4(src: str, dst: str, proto: int, payload: bytes) -> bytes:
    header = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(payload), 0, 0, 64, proto, 0,
                         socket.inet_aton(src), socket.inet_aton(dst))
    return MAC_B + MAC_A + b"\x08\x00" + header + payload


def tcp(sport: int, dport: int) -> bytes:
    return struct.pack("!HHIIBBHHH", sport, dport, 1, 0, 0x50, 0x02, 65535, 0, 0)


def udp(sport: int, dport: int, data: bytes) -> bytes:
    return struct.pack("!HHHH", sport, dport, 8 + len(data), 0) + data


IGMPV3_REPORT = struct.pack("!BBHHH", 0x22, 0, 0, 0, 1) + struct.pack(
    "!BBH4s", 4, 0, 0, socket.inet_aton("224.0.0.251"))
ARP_REQUEST = (b"\xff" * 6 + MAC_A + b"\x08\x06" + struct.pack("!HHBBH", 1, 0x0800, 6, 4, 1)
               + MAC_A + socket.inet_aton("192.168.77.1") + b"\x00" * 6
               + socket.inet_aton("192.168.77.2"))


def write_pcap(path: Path, frames: list[bytes]) -> None:
    out = [struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1)]
    for i, frame in enumerate(frames):
        out.append(struct.pack("<IIII", 1_000 + i, 0, len(frame), len(frame)) + frame)
    path.write_bytes(b"".join(out))


def test_ssh_arp_and_an_interface_s_igmp_report_are_not_counted_anything_else_is(tmp_path):
    pcap = tmp_path / "mgmt.pcap"
    write_pcap(pcap, [
        ipv4("192.168.77.1", "192.168.77.2", 6, tcp(40000, 22)),
        ipv4("192.168.77.2", "192.168.77.1", 6, tcp(22, 40000)),
        ARP_REQUEST,
        ipv4("192.168.77.254", "224.0.0.22", 2, IGMPV3_REPORT),
        ipv4("192.168.77.1", "192.168.77.2", 17, udp(40001, 53, b"\x00" * 12)),
        ipv4("192.168.77.1", "192.168.77.2", 6, tcp(40002, 80)),
    ])
    traffic = mgmt_traffic(pcap, 22)
    assert traffic["packets"] == 6
    assert traffic["not_ssh"] == 2, traffic["examples"]
    assert [row.split()[0] for row in traffic["examples"]] == ["5", "6"]
