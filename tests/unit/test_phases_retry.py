"""A file whose data connection did not open and was fetched on a retry, in a capture made for
the purpose (experiments/workloads/ftp_mget/phases.py): its attempts make one slice, their
time its `retry` phase, its data the last attempt's connection; an ABOR's 226 ends no
transfer; the slices still add up to the session."""
from __future__ import annotations

import struct
from pathlib import Path

import pytest

from experiments.workloads.ftp_mget import measure
from experiments.workloads.ftp_mget.phases import PHASES, run_summary, session_phases

CLIENT_IP = "10.0.1.1"
CLIENT, SERVER = bytes([10, 0, 1, 1]), bytes([10, 0, 2, 1])
SYN, SYN_ACK, ACK, PSH_ACK, FIN_ACK = 0x02, 0x12, 0x10, 0x18, 0x11


def frame(src: bytes, dst: bytes, sport: int, dport: int, seq: int, ack: int, flags: int,
          data: bytes = b"") -> bytes:
    segment = struct.pack(">HHIIBBHHH", sport, dport, seq, ack, 5 << 4, flags, 65535, 0, 0)
    ip = struct.pack(">BBHHHBBH4s4s", 0x45, 0, 40 + len(data), 0, 0x4000, 64, 6, 0, src, dst)
    return b"\x02" * 6 + b"\x04" * 6 + b"\x08\x00" + ip + segment + data


class Capture:
    """Frames with their times; a connection's sequence numbers kept per direction."""

    def __init__(self) -> None:
        self.frames: list[tuple[float, bytes]] = []
        self.seq: dict[tuple[int, int], int] = {}

    def send(self, t: float, client_port: int, server_port: int, from_client: bool,
             flags: int, data: bytes = b"") -> None:
        key = (client_port, server_port) if from_client else (server_port, client_port)
        seq = self.seq.setdefault(key, 1000 if from_client else 5000)
        src, dst = (CLIENT, SERVER) if from_client else (SERVER, CLIENT)
        self.frames.append((t, frame(src, dst, *key, seq, 1, flags, data)))
        self.seq[key] = seq + len(data) + (1 if flags & (SYN | 0x01) else 0)

    def command(self, t: float, line: str) -> None:
        self.send(t, 40001, 21, True, PSH_ACK, line.encode() + b"\r\n")

    def reply(self, t: float, line: str) -> None:
        self.send(t, 40001, 21, False, PSH_ACK, line.encode() + b"\r\n")

    def handshake(self, t: float, port: int, last_ack: bool = True) -> None:
        self.send(t, port, 21 if port == 40001 else 3000 + port % 100, True, SYN)
        self.send(t + 0.01, port, 21 if port == 40001 else 3000 + port % 100, False, SYN_ACK)
        if last_ack:
            self.send(t + 0.02, port, 21 if port == 40001 else 3000 + port % 100, True, ACK)

    def data(self, t: float, port: int, payload: bytes) -> None:
        server = 3000 + port % 100
        self.send(t, port, server, False, PSH_ACK, payload)
        self.send(t + 0.01, port, server, True, ACK)
        self.send(t + 0.02, port, server, False, FIN_ACK)
        self.send(t + 0.03, port, server, True, FIN_ACK)

    def write(self, path: Path) -> None:
        out = struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1)
        for t, raw in sorted(self.frames, key=lambda f: f[0]):
            seconds = int(t)
            out += struct.pack("<IIII", seconds, round((t - seconds) * 1e6), len(raw),
                               len(raw)) + raw
        path.write_bytes(out)


def session(aborted: bool) -> Capture:
    """The listing; f.bin refused with 425 (or, aborted, left without a 150 until the client's
    ABOR), then fetched on a new data connection."""
    c = Capture()
    c.handshake(100.0, 40001)
    c.reply(100.1, "220 ready")
    c.command(101.0, "PASV")
    c.reply(101.1, "227 Entering Passive Mode (10,0,2,1,11,201).")
    c.handshake(101.15, 50001)
    c.command(101.2, "NLST")
    c.reply(101.3, "150 Here comes the listing (7 bytes).")
    c.data(101.35, 50001, b"f.bin\r\n")
    c.reply(101.5, "226 Transfer complete.")
    c.command(102.0, "PASV")                                    # the first attempt
    c.reply(102.1, "227 Entering Passive Mode (10,0,2,1,11,202).")
    c.handshake(102.15, 50002, last_ack=False)                  # its last ACK lost
    c.command(102.2, "RETR f.bin")
    if aborted:
        c.command(112.2, "ABOR")
        c.reply(112.3, "425 No data connection within 498 s.")
        c.reply(112.31, "226 Abort successful.")
    else:
        c.reply(107.2, "425 No data connection within 5 s.")
    retry = 113.0 if aborted else 108.0
    c.command(retry, "PASV")                                    # the second attempt
    c.reply(retry + 0.1, "227 Entering Passive Mode (10,0,2,1,11,203).")
    c.handshake(retry + 0.15, 50003)
    c.command(retry + 0.2, "RETR f.bin")
    c.reply(retry + 0.3, "150 Opening BINARY mode data connection for f.bin (100 bytes).")
    c.data(retry + 0.35, 50003, b"x" * 100)
    c.reply(retry + 0.5, "226 Transfer complete.")
    c.command(retry + 0.6, "QUIT")
    c.reply(retry + 0.7, "221 Goodbye.")
    return c


@pytest.mark.parametrize("aborted", [False, True])
def test_a_retried_file_is_one_slice_with_its_retry_phase(tmp_path: Path, aborted: bool):
    pcap = tmp_path / "retried.pcap"
    session(aborted).write(pcap)
    channel = measure.control_channel(pcap, "tcp")
    assert channel.command_args[-3:] == ["", "f.bin", ""]
    start = channel.first_reply(150)
    slices = session_phases(pcap, channel, "tcp", CLIENT_IP, start, 1.0, 0.2)
    assert [(s.name, s.attempts) for s in slices] == [("NLST", 1), ("RETR", 2)]
    retry = 113.0 if aborted else 108.0
    listing, file = slices
    assert file.start_s == listing.end_s == pytest.approx(101.5)
    assert file.end_s == pytest.approx(retry + 0.5)              # its own 226, not the ABOR's
    phases = file.phases
    assert phases["gap"] == pytest.approx(0.5)                   # 101.5 to the first PASV
    assert phases["retry"] == pytest.approx(retry - 102.0)       # the first attempt, whole
    assert phases["setup"] == pytest.approx(0.02)                # the last attempt's handshake
    assert phases["request"] == pytest.approx(0.15 + 0.35 - 0.17)
    assert phases["data"] == 0 and phases["close"] == pytest.approx(0.03)   # its FINs
    assert phases["reply"] == pytest.approx(0.5 - 0.38)
    assert sum(phases[p] for p in PHASES) == pytest.approx(file.end_s - file.start_s)
    summary = run_summary(slices, 1)
    assert summary["retries"] == 1
    assert summary["phase_retry_s"] == pytest.approx(retry - 102.0)
    assert summary["phases_total_s"] == pytest.approx(retry + 0.5 - start)
