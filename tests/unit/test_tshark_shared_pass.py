"""The analyses' shared tshark pass (experiments/tshark, SHARED_PASSES) on a capture made for
the purpose: every reading of TCP or SCTP fields from it returns what a pass of its own would,
one tshark process serves them all, a capture written again is read again, and the FTP
session's first connection and association are found as the display filters found them."""
from __future__ import annotations

import struct
from pathlib import Path

import pytest

from experiments import tshark
from experiments.tshark import ftp

CLIENT, SERVER = bytes([10, 0, 1, 1]), bytes([10, 0, 2, 1])


def ipv4(src: bytes, dst: bytes, proto: int, payload: bytes) -> bytes:
    header = struct.pack(">BBHHHBBH4s4s", 0x45, 0, 20 + len(payload), 0, 0x4000, 64, proto, 0,
                         src, dst)
    return b"\x02" * 6 + b"\x04" * 6 + b"\x08\x00" + header + payload


def tcp(src: bytes, dst: bytes, sport: int, dport: int, seq: int, flags: int,
        data: bytes = b"") -> bytes:
    return ipv4(src, dst, 6, struct.pack(">HHIIBBHHH", sport, dport, seq, 1, 5 << 4, flags,
                                         65535, 0, 0) + data)


def sctp(src: bytes, dst: bytes, sport: int, dport: int, chunks: bytes) -> bytes:
    return ipv4(src, dst, 132, struct.pack(">HHII", sport, dport, 7, 0) + chunks)


INIT = struct.pack(">BBHIIHHI", 1, 0, 20, 99, 65536, 10, 10, 1000)


def data_chunk(tsn: int, sid: int, payload: bytes) -> bytes:
    chunk = struct.pack(">BBHIHHI", 0, 3, 16 + len(payload), tsn, sid, 0, 0) + payload
    return chunk + b"\0" * (-len(chunk) % 4)


def write_pcap(path: Path, frames: list[bytes]) -> None:
    out = struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1)
    for i, frame in enumerate(frames):
        out += struct.pack("<IIII", 1000 + i, 0, len(frame), len(frame)) + frame
    path.write_bytes(out)


SYN, SYN_ACK, ACK, PSH_ACK = 0x02, 0x12, 0x10, 0x18
FRAMES = [
    tcp(CLIENT, SERVER, 40000, 2121, 5, ACK | 0x01),       # an earlier connection's FIN
    tcp(CLIENT, SERVER, 40001, 21, 100, SYN),
    tcp(SERVER, CLIENT, 21, 40001, 500, SYN_ACK),
    tcp(CLIENT, SERVER, 40001, 21, 101, ACK),
    tcp(SERVER, CLIENT, 21, 40001, 501, PSH_ACK, b"220 ready\r\n"),
    tcp(CLIENT, SERVER, 40002, 21, 900, SYN),               # a second session's connection
    sctp(CLIENT, SERVER, 50000, 5000, INIT),                # not the FTP port
    sctp(CLIENT, SERVER, 50001, 21, INIT),
    sctp(SERVER, CLIENT, 21, 50001, data_chunk(1000, 0, b"220 ready\r\n")
         + data_chunk(1001, 1, b"x" * 13)),
]


@pytest.fixture
def capture(tmp_path: Path) -> Path:
    pcap = tmp_path / "made.pcap"
    write_pcap(pcap, FRAMES)
    return pcap


@pytest.mark.parametrize("protocol", ["tcp", "sctp"])
def test_every_subset_reads_as_its_own_pass_would(capture, protocol):
    options, names = tshark.SHARED_PASSES[protocol]
    for subset in (list(names), list(names[:3]), [names[-1], names[0]]):
        assert tshark.fields(capture, subset, protocol, options) == \
            tshark._fields(capture, subset, protocol, options)
    assert len(tshark.fields(capture, list(names), protocol, options)) == \
        (6 if protocol == "tcp" else 3)


def test_one_tshark_process_serves_them_all_until_the_capture_changes(capture, monkeypatch):
    started = []
    real = tshark._run

    def counting(argv, pcap):
        started.append(argv)
        return real(argv, pcap)

    monkeypatch.setattr(tshark, "_run", counting)
    tshark._shared_pass.cache_clear()
    first = tshark.fields(capture, ["tcp.srcport", "tcp.len"], "tcp")
    assert tshark.fields(capture, ["tcp.stream"], "tcp") and len(started) == 1
    assert tshark.fields(capture, ["tcp.stream"], "tcp.len > 0") and len(started) == 2
    write_pcap(capture, FRAMES[1:3])                       # the same name, other packets
    assert len(tshark.fields(capture, ["tcp.srcport", "tcp.len"], "tcp")) == 2 != len(first)
    assert len(started) == 3


def test_the_session_s_first_connection_and_association_are_found(capture):
    assert ftp._session_stream(capture) == "1"
    assert ftp._session_sctp_port(capture) == "50001"
    assert ftp._session_stream(capture) == tshark._fields(
        capture, ["tcp.stream"], "tcp.dstport == 21 && tcp.flags.syn == 1 && "
        "tcp.flags.ack == 0", ())[0][0]
