"""The SCTP shared pass read from the capture's bytes (experiments/tshark/sctp_headers.py)
gives tshark's rows, on captures in either time precision and byte order, with the packets a
link sends by itself; it leaves to tshark every capture holding a packet it does not read as
tshark would."""
from __future__ import annotations

import struct
from pathlib import Path

import pytest

from experiments import tshark
from experiments.tshark import sctp_headers
from tests.unit.test_tshark_shared_pass import (
    CLIENT,
    CONTROL_FRAMES,
    INIT,
    SACK,
    SERVER,
    data_chunk,
    ipv4,
    sctp,
)

OPTIONS, NAMES = tshark.SHARED_PASSES["sctp"]
MICRO, NANO = 0xA1B2C3D4, 0xA1B23C4D

INIT_ACK = struct.pack(">BBHIIHHI", 2, 0, 20, 77, 65536, 10, 10, 5000)
ABORT = struct.pack(">BBH", 6, 0, 4)
ROUTER_SOLICITATION = (b"\x33\x33\0\0\0\x02" + b"\x04" * 6 + b"\x86\xdd"
                       + struct.pack(">IHBB", 0x60000000, 8, 58, 255) + b"\xfe\x80" + b"\0" * 14
                       + b"\xff\x02" + b"\0" * 13 + b"\x02" + bytes([133, 0, 0, 0, 0, 0, 0, 0]))
MLD_REPORT = (b"\x33\x33\0\0\0\x16" + b"\x04" * 6 + b"\x86\xdd"
              + struct.pack(">IHBB", 0x60000000, 8 + 28, 0, 1) + b"\0" * 16 + b"\xff\x02"
              + b"\0" * 13 + b"\x16" + bytes([58, 0, 5, 2, 0, 0, 1, 0])
              + bytes([143, 0, 0, 0, 0, 0, 0, 1]) + b"\0" * 20)
ARP = b"\xff" * 6 + b"\x04" * 6 + b"\x08\x06" + b"\0" * 28
TCP_SEGMENT = ipv4(CLIENT, SERVER, 6, struct.pack(">HHIIBBHHH", 1, 2, 3, 4, 5 << 4, 2, 1, 0, 0))
MORE_FRAMES = [
    ROUTER_SOLICITATION, MLD_REPORT, ARP, TCP_SEGMENT,
    sctp(SERVER, CLIENT, 21, 50001, INIT_ACK),
    sctp(CLIENT, SERVER, 50001, 21, SACK + data_chunk(4_294_967_295, 2, b"abc")
         + data_chunk(0, 2, b"de", ssn=1)),                   # bundled, across the wrap
    sctp(SERVER, CLIENT, 21, 50001, ABORT),
]


def write(path: Path, frames: list[bytes], magic: int = MICRO, order: str = "<",
          cut: int = 0) -> Path:
    out = struct.pack(order + "IHHiIII", magic, 2, 4, 0, 0, 65535, 1)
    for i, frame in enumerate(frames):
        kept = frame[:len(frame) - cut] if i == len(frames) - 1 else frame
        out += struct.pack(order + "IIII", 1_700_000_000 + i, 123_456 + i, len(kept),
                           len(frame)) + kept
    path.write_bytes(out)
    return path


def tshark_rows(pcap: Path) -> list[list[str]]:
    return tshark._fields(pcap, list(NAMES), "sctp", OPTIONS)


@pytest.mark.parametrize("magic,order", [(MICRO, "<"), (NANO, "<"), (MICRO, ">")])
def test_the_rows_are_tshark_s(tmp_path, magic, order):
    pcap = write(tmp_path / "made.pcap", CONTROL_FRAMES + MORE_FRAMES, magic, order)
    rows = sctp_headers.shared_rows(pcap)
    assert rows is not None and len(rows) == 11
    assert rows == tshark_rows(pcap)


ICMP_QUOTING_SCTP = ipv4(SERVER, CLIENT, 1, struct.pack(">BBHI", 3, 3, 0, 0)
                         + ipv4(CLIENT, SERVER, 132, struct.pack(">HHII", 50001, 21, 7, 0))[14:])
FRAGMENT = bytearray(sctp(CLIENT, SERVER, 50001, 21, INIT))
FRAGMENT[14 + 6] = 0x20   # more fragments
IPV6_SCTP = (b"\x02" * 6 + b"\x04" * 6 + b"\x86\xdd" + struct.pack(">IHBB", 0x60000000, 12 + 20,
             132, 64) + b"\0" * 32 + struct.pack(">HHII", 50001, 21, 7, 0) + INIT)
VLAN = b"\x02" * 6 + b"\x04" * 6 + b"\x81\x00\x00\x01" + sctp(CLIENT, SERVER, 1, 2, INIT)[12:]


def sctp_in_udp(src: bytes, dst: bytes, sport: int, dport: int, chunks: bytes,
                udp_ports: tuple[int, int] = (9899, 9899)) -> bytes:
    """SCTP inside UDP (RFC 6951), as usrsctp sends it: checksum 0 in both headers."""
    inner = struct.pack(">HHII", sport, dport, 7, 0) + chunks
    return ipv4(src, dst, 17, struct.pack(">HHHH", *udp_ports, 8 + len(inner), 0) + inner)


def test_sctp_inside_udp_on_rfc_6951_s_port_reads_as_tshark_reads_it(tmp_path):
    """usrsctp's packets: tshark decodes UDP port 9899 as SCTP by default, and so does this."""
    frames = [sctp_in_udp(CLIENT, SERVER, 50001, 5002, INIT),
              sctp_in_udp(SERVER, CLIENT, 5002, 50001, INIT_ACK),
              sctp_in_udp(CLIENT, SERVER, 50001, 5002, data_chunk(10, 0, b"abc")
                          + data_chunk(11, 0, b"de", ssn=1)),
              sctp_in_udp(SERVER, CLIENT, 5002, 50001, SACK)]
    pcap = write(tmp_path / "udp.pcap", CONTROL_FRAMES + frames + [TCP_SEGMENT])
    rows = sctp_headers.shared_rows(pcap)
    control = sctp_headers.shared_rows(write(tmp_path / "control.pcap", CONTROL_FRAMES))
    assert rows is not None and control is not None and len(rows) == len(control) + 4
    assert rows == tshark_rows(pcap)
    assert [row[2:4] for row in rows[-4:]] == [["50001", "5002"], ["5002", "50001"]] * 2


UDP_ONE_PORT = sctp_in_udp(CLIENT, SERVER, 50001, 21, INIT, udp_ports=(40000, 9899))


@pytest.mark.parametrize("odd", [ICMP_QUOTING_SCTP, bytes(FRAGMENT), IPV6_SCTP, VLAN,
                                 UDP_ONE_PORT],
                         ids=["icmp", "fragment", "ipv6", "vlan", "udp-one-port"])
def test_a_packet_it_does_not_read_leaves_the_capture_to_tshark(tmp_path, odd):
    pcap = write(tmp_path / "odd.pcap", [*CONTROL_FRAMES, odd])
    assert sctp_headers.shared_rows(pcap) is None
    tshark._shared_pass.cache_clear()
    assert tshark.fields(pcap, list(NAMES), "sctp", OPTIONS) == tshark_rows(pcap)


def write_cut(path: Path, frames: list[bytes], keep: int) -> Path:
    """The frames, the last one captured to its first `keep` bytes (a snaplen)."""
    out = struct.pack("<IHHiIII", MICRO, 2, 4, 0, 0, keep, 1)
    for i, frame in enumerate(frames):
        kept = frame[:keep] if i == len(frames) - 1 else frame
        out += struct.pack("<IIII", 1_700_000_000 + i, 123_456 + i, len(kept), len(frame)) + kept
    path.write_bytes(out)
    return path


LONG_DATA = sctp(SERVER, CLIENT, 21, 50001, data_chunk(9, 3, bytes(range(200))))


@pytest.mark.parametrize("keep", [14 + 20 + 12 + 16, 96, len(LONG_DATA) - 1])
def test_a_frame_cut_after_its_chunk_s_fields_reads_as_tshark_reads_it_whole(tmp_path, keep):
    whole = write(tmp_path / "whole.pcap", [*CONTROL_FRAMES, LONG_DATA])
    cut = write_cut(tmp_path / "cut.pcap", [*CONTROL_FRAMES, LONG_DATA], keep)
    rows = sctp_headers.shared_rows(cut)
    assert rows is not None and rows == tshark_rows(whole)
    # why the reader reads it: tshark dissects no chunk of a frame cut short
    assert tshark_rows(cut)[-1][4:] == ["", "", "", "", ""]


BUNDLE = sctp(CLIENT, SERVER, 50001, 21, SACK + data_chunk(5, 2, b"abc" * 20)
              + data_chunk(6, 2, b"de"))


@pytest.mark.parametrize("frame,keep", [
    (LONG_DATA, 14 + 20 + 12 + 15),                   # within the DATA chunk's TSN and stream
    (LONG_DATA, 14 + 20 + 12 + 3),                    # within the chunk's header
    (BUNDLE, len(BUNDLE) - 20),                       # the bundle's last chunk cut away
], ids=["tsn", "chunk-header", "bundle"])
def test_a_frame_cut_within_what_it_reads_is_left_to_tshark(tmp_path, frame, keep):
    assert sctp_headers.shared_rows(write_cut(tmp_path / "cut.pcap", [*CONTROL_FRAMES, frame],
                                              keep)) is None


def test_a_pcapng_file_is_left_to_tshark(tmp_path):
    pcapng = tmp_path / "made.pcapng"
    pcapng.write_bytes(struct.pack("<III", 0x0A0D0D0A, 28, 0x1A2B3C4D) + b"\0" * 16)
    assert sctp_headers.shared_rows(pcapng) is None


# usrsctp's last SHUTDOWN ACK after its peer's program left the UDP port: the peer's kernel
# answers it with a port unreachable that quotes it
ICMP_QUOTING_SCTP_IN_UDP = ipv4(CLIENT, SERVER, 1, struct.pack(">BBHI", 3, 3, 0, 0)
                                + sctp_in_udp(SERVER, CLIENT, 21, 50001,
                                              struct.pack(">BBH", 8, 0, 4))[14:])


def test_cut_frames_beside_a_packet_only_tshark_reads_keep_their_chunks(tmp_path):
    long_in_udp = sctp_in_udp(SERVER, CLIENT, 21, 50001, data_chunk(9, 3, bytes(range(200))))
    frames = [*CONTROL_FRAMES, long_in_udp, LONG_DATA, ICMP_QUOTING_SCTP_IN_UDP]
    whole = write(tmp_path / "whole.pcap", frames)
    out = struct.pack("<IHHiIII", MICRO, 2, 4, 0, 0, 96, 1)
    for i, frame in enumerate(frames):
        kept = frame[:96]   # a capture of headers: the two DATA frames cut, the rest whole
        out += struct.pack("<IIII", 1_700_000_000 + i, 123_456 + i, len(kept), len(frame)) + kept
    cut = tmp_path / "cut.pcap"
    cut.write_bytes(out)
    assert sctp_headers.shared_rows(cut) is None   # the ICMP error is tshark's to read
    tshark._shared_pass.cache_clear()
    rows = tshark.fields(cut, list(NAMES), "sctp", OPTIONS)
    assert rows == tshark_rows(whole)
    assert [row[4:] for row in tshark_rows(cut)[-3:-1]] == [["", "", "", "", ""]] * 2
    assert rows[-1][1] == "10.0.1.1|10.0.2.1" and rows[-1][4] == "8"   # the quoted SHUTDOWN ACK
