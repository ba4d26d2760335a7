"""A capture of headers (experiments/tshark/pcap_splice.py): the cut capture's records, in its
order and at its times, with the packets the whole capture holds put back whole; a packet of the
whole capture missing from the cut one fails the splice. FTP's filter keeps whole what the
control channel's reading reads, and the header readers read the result as tshark reads the
whole packets."""
from __future__ import annotations

import struct
import subprocess
from pathlib import Path

import pytest

from experiments import tshark
from experiments.procedure import HEADERS_SNAPLEN
from experiments.tshark import sctp_headers, tcp_headers
from experiments.tshark.ftp import WHOLE_IN_A_CAPTURE_OF_HEADERS
from experiments.tshark.pcap_records import pcap_format, records
from experiments.tshark.pcap_splice import SpliceError, cut, splice
from tests.unit.test_tshark_shared_pass import (
    CLIENT,
    INIT,
    SACK,
    SERVER,
    data_chunk,
    sctp,
    tcp,
)

ACK = 0x10
COMMAND = tcp(CLIENT, SERVER, 40001, 21, 101, ACK, b"RETR " + b"f" * 120 + b"\r\n")
REPLY = tcp(SERVER, CLIENT, 21, 40001, 501, ACK, b"150 Opening BINARY mode " + b"x" * 100
            + b"\r\n")
FILE_DATA = tcp(SERVER, CLIENT, 20, 40002, 7001, ACK, bytes(range(256)) * 5)
STREAM_0 = sctp(SERVER, CLIENT, 21, 50001, data_chunk(10, 0, b"226 Transfer complete" * 5))
STREAM_1 = sctp(SERVER, CLIENT, 21, 50001, data_chunk(11, 1, bytes(1200)))
BUNDLE = sctp(SERVER, CLIENT, 21, 50001, SACK + data_chunk(12, 1, bytes(300))
              + data_chunk(13, 0, b"226 ok\r\n"))
NAIVE_DATA = sctp(SERVER, CLIENT, 50002, 50003, data_chunk(14, 0, bytes(1200)))
SESSION = [sctp(CLIENT, SERVER, 50001, 21, INIT), COMMAND, REPLY, FILE_DATA, STREAM_0,
           STREAM_1, FILE_DATA, BUNDLE, NAIVE_DATA, REPLY]
KEPT_WHOLE = [COMMAND, REPLY, STREAM_0, BUNDLE, REPLY]   # what FTP's filter keeps whole


def write(path: Path, frames: list[bytes], micros: list[int]) -> Path:
    out = struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 262144, 1)
    for frame, micro in zip(frames, micros, strict=True):
        out += struct.pack("<IIII", 1_700_000_000, micro, len(frame), len(frame)) + frame
    path.write_bytes(out)
    return path


def frames_of(pcap: Path) -> list[tuple[int, int, bytes]]:
    data = pcap.read_bytes()
    layout = pcap_format(data)[0]
    return [(r.fraction, r.length, data[r.frame:r.frame + r.captured])
            for r in records(data, layout)]


@pytest.fixture
def captures(tmp_path: Path) -> tuple[Path, Path, Path]:
    """The whole session, its capture of headers, and the second tap's capture of the packets
    kept whole, which stamps each a microsecond later."""
    times = [10 * i for i in range(len(SESSION))]
    whole = write(tmp_path / "whole.pcap", SESSION, times)
    cut(whole, tmp_path / "cut.pcap", HEADERS_SNAPLEN)
    kept_times = [10 * i + 1 for i, frame in enumerate(SESSION) if frame in KEPT_WHOLE]
    kept = write(tmp_path / "kept.pcap", KEPT_WHOLE, kept_times)
    return whole, tmp_path / "cut.pcap", kept


def test_the_kept_packets_are_put_back_whole_in_the_cut_capture_s_order_and_times(
        captures, tmp_path):
    whole, cut_pcap, kept = captures
    assert splice(cut_pcap, kept, tmp_path / "out.pcap") == len(KEPT_WHOLE)
    out = frames_of(tmp_path / "out.pcap")
    assert [fraction for fraction, _, _ in out] == [10 * i for i in range(len(SESSION))]
    for (_, length, held), frame in zip(out, SESSION, strict=True):
        assert length == len(frame)
        assert held == (frame if frame in KEPT_WHOLE else frame[:HEADERS_SNAPLEN])
    assert pcap_format((tmp_path / "out.pcap").read_bytes())[0].format == "<IIII"


def test_the_header_readers_read_the_spliced_capture_as_tshark_reads_the_whole_one(
        captures, tmp_path):
    whole, cut_pcap, kept = captures
    splice(cut_pcap, kept, tmp_path / "out.pcap")
    for protocol, reader in (("tcp", tcp_headers), ("sctp", sctp_headers)):
        options, names = tshark.SHARED_PASSES[protocol]
        assert reader.shared_rows(tmp_path / "out.pcap") == tshark._fields(
            whole, list(names), protocol, options)


def test_ftp_s_filter_keeps_whole_the_control_channel_and_every_bundle(captures, tmp_path):
    whole, _, _ = captures
    kept = tmp_path / "filtered.pcap"
    subprocess.run(["tcpdump", "-r", str(whole), "-w", str(kept),
                    WHOLE_IN_A_CAPTURE_OF_HEADERS], check=True, capture_output=True)
    assert [frame for _, _, frame in frames_of(kept)] == KEPT_WHOLE


def test_a_kept_packet_missing_from_the_cut_capture_fails_the_splice(captures, tmp_path):
    whole, _, kept = captures
    times = [10 * i for i, frame in enumerate(SESSION) if frame is not STREAM_0]
    cut_pcap = write(tmp_path / "short.pcap", [f for f in SESSION if f is not STREAM_0], times)
    with pytest.raises(SpliceError, match="3 packets of .* are not in"):
        splice(cut_pcap, kept, tmp_path / "out.pcap")


def test_a_kept_packet_stamped_far_from_the_cut_one_is_not_the_same(tmp_path):
    times = [30_000 + 10 * i for i in range(len(SESSION))]
    whole = write(tmp_path / "whole.pcap", SESSION, times)
    cut(whole, tmp_path / "cut.pcap", HEADERS_SNAPLEN)
    early = write(tmp_path / "early.pcap", [COMMAND], [10])   # 30 ms before
    with pytest.raises(SpliceError, match="1 packets"):
        splice(tmp_path / "cut.pcap", early, tmp_path / "out.pcap")


def test_what_the_whole_capture_held_after_the_cut_one_stopped_is_left_out(captures, tmp_path):
    _, cut_pcap, _ = captures
    after = write(tmp_path / "after.pcap", [COMMAND, REPLY], [11, 10 * len(SESSION) + 50_000])
    assert splice(cut_pcap, after, tmp_path / "out.pcap") == 1
    assert len(frames_of(tmp_path / "out.pcap")) == len(SESSION)
