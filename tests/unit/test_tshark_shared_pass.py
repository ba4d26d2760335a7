"""The analyses' shared tshark pass (experiments/tshark, SHARED_PASSES) on a capture made for
the purpose: every reading of TCP or SCTP fields from it returns what a pass of its own would,
one tshark process serves them all, a capture written again is read again, and the FTP
session's first connection and association are found as the display filters found them. The
control channel is read from the frames a BPF filter keeps, which are the ones tshark's
display filters find, less the SCTP packets that hold no chunk of stream 0."""
from __future__ import annotations

import struct
from pathlib import Path

import pytest

from experiments import tshark
from experiments.workloads.ftp_mget import measure as ftp

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


def data_chunk(tsn: int, sid: int, payload: bytes, ssn: int = 0) -> bytes:
    chunk = struct.pack(">BBHIHHI", 0, 3, 16 + len(payload), tsn, sid, ssn, 0) + payload
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
        assert [list(row) for row in tshark.fields(capture, subset, protocol, options)] == \
            tshark._fields(capture, subset, protocol, options)
    assert len(tshark.fields(capture, list(names), protocol, options)) == \
        (6 if protocol == "tcp" else 3)


def counting_tshark(monkeypatch) -> list[list[str]]:
    started: list[list[str]] = []
    real = tshark._run

    def counting(argv, pcap):
        started.append(argv)
        return real(argv, pcap)

    monkeypatch.setattr(tshark, "_run", counting)
    tshark._shared_pass.cache_clear()
    return started


# a capture the header readers leave to tshark (tshark may find TCP inside an ICMP error)
ICMP = ipv4(SERVER, CLIENT, 1, struct.pack(">BBHI", 8, 0, 0, 0))


def test_one_tshark_process_serves_them_all_until_the_capture_changes(capture, monkeypatch):
    write_pcap(capture, [*FRAMES, ICMP])
    started = counting_tshark(monkeypatch)
    first = tshark.fields(capture, ["tcp.srcport", "tcp.len"], "tcp")
    assert tshark.fields(capture, ["tcp.stream"], "tcp") and len(started) == 1
    assert tshark.fields(capture, ["tcp.stream"], "tcp.len > 0") and len(started) == 2
    write_pcap(capture, [*FRAMES[1:3], ICMP])              # the same name, other packets
    assert len(tshark.fields(capture, ["tcp.srcport", "tcp.len"], "tcp")) == 2 != len(first)
    assert len(started) == 3


def test_the_header_readers_serve_a_plain_capture_without_tshark(capture, monkeypatch):
    started = counting_tshark(monkeypatch)
    for protocol in ("tcp", "sctp"):
        options, names = tshark.SHARED_PASSES[protocol]
        assert tshark.fields(capture, list(names), protocol, options)
    assert started == []


def test_the_session_s_first_connection_and_association_are_found(capture):
    assert ftp._session_tcp_port(capture) == "40001"
    assert ftp._session_sctp_port(capture) == "50001"
    assert ftp._session_tcp_port(capture) == tshark._fields(
        capture, ["tcp.srcport"], "tcp.dstport == 21 && tcp.flags.syn == 1 && "
        "tcp.flags.ack == 0", ())[0][0]


SACK = struct.pack(">BBHIIHH", 3, 0, 16, 1000, 65536, 0, 0)
CONTROL_FRAMES = [
    *FRAMES,
    sctp(CLIENT, SERVER, 50001, 21, SACK),                                  # a SACK alone
    sctp(SERVER, CLIENT, 21, 50001, data_chunk(1002, 1, b"y" * 1000)),     # file data alone
    sctp(SERVER, CLIENT, 21, 50001, data_chunk(1003, 1, b"z" * 9)          # file data first,
         + data_chunk(1004, 0, b"150 here\r\n", ssn=1)),                  # a reply bundled
    sctp(SERVER, CLIENT, 21, 50001,
         data_chunk(1005, 0, b"226 done\r\n", ssn=2)),                    # a reply alone
    sctp(SERVER, CLIENT, 21, 50000, data_chunk(7, 0, b"421 other\r\n")),   # not the session
    tcp(SERVER, CLIENT, 21, 40001, 512, PSH_ACK, b"150 here\r\n"),
    tcp(CLIENT, SERVER, 40001, 21, 102, PSH_ACK, b"NLST\r\n"),
    tcp(SERVER, CLIENT, 21, 40002, 70, PSH_ACK, b"421 other\r\n"),          # not the session
    tcp(SERVER, CLIENT, 21, 40001, 521, ACK | 0x01),                       # FIN, no payload
]


def inside_udp(frame: bytes) -> bytes:
    """An SCTP-over-IP frame as usrsctp sends it: inside UDP, port 9899 at both ends."""
    if frame[23] != 132:
        return frame
    sctp_packet = frame[34:]
    return ipv4(frame[26:30], frame[30:34], 17, struct.pack(
        ">HHHH", 9899, 9899, 8 + len(sctp_packet), 0) + sctp_packet)


@pytest.fixture(params=["over-ip", "inside-udp"])
def control_frames(request) -> list[bytes]:
    """The control capture's frames, its SCTP as the kernel's or as usrsctp's."""
    if request.param == "over-ip":
        return CONTROL_FRAMES
    return [inside_udp(frame) for frame in CONTROL_FRAMES]


@pytest.fixture
def control_capture(tmp_path: Path, control_frames) -> Path:
    pcap = tmp_path / "control.pcap"
    write_pcap(pcap, control_frames)
    return pcap


def test_the_bpf_reader_returns_the_frames_and_times_tshark_does(control_capture):
    for bpf, display_filter in (("tcp port 21 and tcp port 40001",
                                 "tcp.port == 21 && tcp.port == 40001"),
                                ("ip proto 132 or udp port 9899", "sctp")):
        assert ftp.bpf.packets(control_capture, bpf) == \
            tshark.frames(control_capture, display_filter)


def test_the_sctp_prefilter_keeps_every_frame_with_a_stream_0_chunk_and_drops_the_rest(
        control_capture, control_frames):
    kept = ftp.bpf.packets(control_capture, ftp._control_bpf(None))
    wanted = tshark.frames(control_capture, "sctp.data_sid == 0", tshark.SCTP_OPTIONS)
    assert wanted and set(wanted) <= set(kept)
    sctp_frames = {frame for frame in control_frames if frame[23] in (17, 132)}
    dropped = sctp_frames - {f for _, f in kept}
    # the INITs, the SACK and the file data alone: one chunk each, none of stream 0
    assert dropped == {control_frames[i] for i in (6, 7, 9, 10)}
    session = {f for _, f in ftp.bpf.packets(control_capture, ftp._control_bpf("50001"))}
    assert session == {f for _, f in kept} - {control_frames[13]}   # not the 421 to 50000


def test_a_capture_of_headers_keeps_whole_what_the_control_reading_reads(control_capture,
                                                                          control_frames):
    kept = {f for _, f in ftp.bpf.packets(control_capture, ftp.WHOLE_IN_A_CAPTURE_OF_HEADERS)}
    # every TCP packet of port 21; of SCTP, the bundles and stream 0's chunks alone
    assert kept == {control_frames[i] for i in (1, 2, 3, 4, 5, 8, *range(11, 18))}


@pytest.mark.parametrize("transport", ["tcp", "sctp"])
def test_the_control_channel_is_the_session_s_replies_and_commands(control_capture, transport):
    channel = ftp.control_channel(control_capture, transport)
    assert [code for code, _ in channel.replies] == [220, 150] + ([226] if transport == "sctp"
                                                                   else [])
    if transport == "tcp":
        assert [verb for verb, _ in channel.commands] == ["NLST"]
        assert [t for _, t in channel.replies] == [1004.0, 1014.0]  # the frames' capture times



@pytest.mark.parametrize("client_isn", [100, 2**32 - 3, 2**32 - 1])
def test_the_control_channel_reads_across_a_wrap_of_the_sequence_numbers(tmp_path, client_isn):
    # an ISN a few bytes below 2**32: the commands' numbers wrap to 0 within the session
    first, second = (client_isn + 1) % 2**32, (client_isn + 7) % 2**32
    pcap = tmp_path / "wrap.pcap"
    write_pcap(pcap, [
        tcp(CLIENT, SERVER, 40001, 21, client_isn, SYN),
        tcp(SERVER, CLIENT, 21, 40001, 500, SYN_ACK),
        tcp(SERVER, CLIENT, 21, 40001, 501, PSH_ACK, b"220 ready\r\n"),
        tcp(CLIENT, SERVER, 40001, 21, second, PSH_ACK, b"PASV\r\n"),   # before its predecessor
        tcp(CLIENT, SERVER, 40001, 21, first, PSH_ACK, b"NLST\r\n"),
    ])
    channel = ftp.control_channel(pcap, "tcp")
    assert channel.commands == [("NLST", 1004.0), ("PASV", 1003.0)]
    assert [code for code, _ in channel.replies] == [220]
