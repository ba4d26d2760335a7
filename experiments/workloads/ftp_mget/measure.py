"""FTP read from a capture on the client's interface: when the client had each reply whole and
in order (or sent each command), and FTP over SCTP as the shipped Lua dissector decodes it.

A packet's time is when the client received or sent it. A reply counts as received when all its
bytes have arrived in order: under loss a later segment can arrive before a retransmitted
earlier one."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from experiments.tshark import SCTP_OPTIONS, bpf, fields, is_true, values
from experiments.tshark.pcap_records import SCTP_OVER_UDP_PORT
from experiments.tshark.transport import parse_sctp_frame

FTP_PORT = 21
_SEQ_SPACE, _HALF_SEQ_SPACE = 1 << 32, 1 << 31
DATA_SETUP_COMMANDS = ("PASV", "EPSV", "PORT", "EPRT", "NLST")


@dataclass
class ControlChannel:
    replies: list[tuple[int, float]] = field(default_factory=list)   # (code, time received)
    commands: list[tuple[str, float]] = field(default_factory=list)  # (verb, time sent)
    reply_texts: list[str] = field(default_factory=list)             # each reply's final line
    command_args: list[str] = field(default_factory=list)            # each command's argument

    def first_reply(self, code: int) -> float | None:
        return next((t for c, t in self.replies if c == code), None)

    def last_reply(self, code: int) -> float | None:
        return next((t for c, t in reversed(self.replies) if c == code), None)

    def first_command(self, verbs: tuple[str, ...]) -> float | None:
        return next((t for v, t in self.commands if v in verbs), None)


def control_channel(pcap: Path, transport: str) -> ControlChannel:
    if transport == "tcp":
        return _tcp_control(pcap)
    return _sctp_control(pcap)


def _session_tcp_port(pcap: Path) -> str | None:
    """The client's port of the session's control connection: the first one the client opens
    to the FTP port. On a lossy path the previous session's connections can still be closing
    (FIN retransmissions) when the next capture starts; they are not this session."""
    rows = fields(pcap, ["tcp.srcport", "tcp.dstport", "tcp.flags.syn", "tcp.flags.ack"], "tcp")
    return next((sport for sport, port, syn, ack in rows
                 if port == str(FTP_PORT) and is_true(syn) and not is_true(ack)), None)


def _tcp_control(pcap: Path) -> ControlChannel:
    port = _session_tcp_port(pcap)
    only = f" and tcp port {port}" if port is not None else ""
    segments = [(time_s, *_tcp_segment(frame))
                for time_s, frame in bpf.packets(pcap, f"tcp port {FTP_PORT}{only}")]
    server = [(t, seq, data) for t, src_port, seq, data in segments
              if data and src_port == FTP_PORT]
    client = [(t, seq, data) for t, src_port, seq, data in segments
              if data and src_port != FTP_PORT]
    channel = ControlChannel()
    channel.replies, channel.reply_texts = _replies(_in_order_lines(server, received=True))
    channel.commands, channel.command_args = _commands(_in_order_lines(client, received=False))
    return channel


def _tcp_segment(frame: bytes) -> tuple[int, int, bytes]:
    """(source port, raw sequence number, the payload the capture holds) of an Ethernet II,
    IPv4 TCP frame; the payload ends where the IP packet does (a short frame is padded)."""
    ip = 14
    end = ip + int.from_bytes(frame[ip + 2:ip + 4], "big")
    tcp = ip + (frame[ip] & 0x0F) * 4
    payload = tcp + (frame[tcp + 12] >> 4) * 4
    return (int.from_bytes(frame[tcp:tcp + 2], "big"),
            int.from_bytes(frame[tcp + 4:tcp + 8], "big"), frame[payload:end])


def _in_order_lines(segments: list[tuple[float, int, bytes]], received: bool
                    ) -> list[tuple[str, float]]:
    """Lines of one direction of a TCP stream with the time each became whole and in order
    (received) or was first put on the wire (sent)."""
    if not segments:
        return []
    # sequence numbers wrap past 2**32 (an ISN a few KB below it): each is taken relative to
    # the first segment's, in serial-number arithmetic, before the lowest becomes 0
    first = segments[0][1]
    relative = [((seq - first + _HALF_SEQ_SPACE) % _SEQ_SPACE) - _HALF_SEQ_SPACE
                for _, seq, _ in segments]
    base = min(relative)
    end = max(r - base + len(data) for r, (_, _, data) in zip(relative, segments, strict=True))
    content = bytearray(end)
    first_seen = [float("inf")] * end
    for r, (time, _, data) in zip(relative, segments, strict=True):
        offset = r - base   # capture order: the first copy of a byte wins
        for i, byte in enumerate(data):
            if offset + i < end and time < first_seen[offset + i]:
                first_seen[offset + i] = time
                content[offset + i] = byte
    lines, start, ready = [], 0, 0.0
    for i in range(end):
        ready = max(ready, first_seen[i]) if received else first_seen[i]
        if content[i] == 0x0A and i > 0 and content[i - 1] == 0x0D:
            lines.append((content[start:i - 1].decode("latin-1"), ready))
            start = i + 1
    return lines


def _session_sctp_port(pcap: Path) -> str | None:
    """The client's port of the session's control association: the first INIT to the FTP port
    (a previous session's association may still be shutting down when the capture starts)."""
    rows = fields(pcap, ["sctp.srcport", "sctp.dstport", "sctp.chunk_type"], "sctp",
                  SCTP_OPTIONS)
    return next((port for port, dport, types in rows
                 if dport == str(FTP_PORT) and "1" in values(types)), None)


# BPF (at the IP header; `ip[...]` takes a computed offset, `sctp[...]` does not): a packet
# that may carry a DATA chunk of stream 0, the control channel's. It drops the packets whose
# one chunk is anything else, the multistreamed variants' file data and SACKs among them; a
# packet whose first chunk is followed by others is kept, and its chunks are read below.
# The first chunk's header is at most 66 bytes into the frame, within any snaplen allowed.
# Each filter is written once for SCTP over IP (the kernel's) and once for SCTP inside UDP on
# RFC 6951's port (usrsctp's, 8 bytes further in), and keeps either.
_OVER_IP = ("ip proto 132", "((ip[0] & 0xf) << 2)")
_INSIDE_UDP = (f"(udp port {SCTP_OVER_UDP_PORT} and ip[6:2] & 0x1fff == 0)",
               "(((ip[0] & 0xf) << 2) + 8)")


def _sctp_bpf(build: Callable[[str], str]) -> str:
    """`build(offset of the SCTP header)` for both encapsulations."""
    return " or ".join(f"({carrier} and {build(at)})" for carrier, at in (_OVER_IP, _INSIDE_UDP))


def _port(at: str, port: int | str) -> str:
    return f"(ip[{at}:2] == {port} or ip[{at} + 2:2] == {port})"


def _stream_0_data(at: str) -> str:
    return f"(ip[{at} + 12] == 0 and ip[{at} + 20:2] == 0)"


def _bundled(at: str) -> str:
    return f"((ip[{at} + 14:2] + 3) & 0xfffc) + 12 + {at} != ip[2:2]"


def _control_bpf(client_port: str | None) -> str:
    return _sctp_bpf(lambda at: f"{_port(at, FTP_PORT)}"
                     + (f" and {_port(at, client_port)}" if client_port is not None else "")
                     + f" and ({_stream_0_data(at)} or {_bundled(at)})")


# What a capture of headers (`[run] capture = "headers"`) keeps whole: every packet whose
# payload the control channel's reading above reads, and every SCTP packet of more than one
# chunk (cut short, it would lose the chunks after the first, whose TSNs the counters read).
WHOLE_IN_A_CAPTURE_OF_HEADERS = f"tcp port {FTP_PORT} or " + _sctp_bpf(
    lambda at: f"({_bundled(at)} or ({_port(at, FTP_PORT)} and {_stream_0_data(at)}))")


def _sctp_control(pcap: Path) -> ControlChannel:
    first_copy: dict[tuple[bool, int], tuple[float, bytes]] = {}
    for time_s, frame in bpf.packets(pcap, _control_bpf(_session_sctp_port(pcap))):
        sctp = parse_sctp_frame(frame)
        from_server = sctp.src_port == FTP_PORT
        for chunk in sctp.chunks:
            key = (from_server, chunk.ssn)
            if chunk.sid == 0 and key not in first_copy:  # a retransmitted copy changes nothing
                first_copy[key] = (time_s, chunk.payload)
    channel = ControlChannel()
    for from_server in (True, False):
        lines, delivered = [], 0.0
        for (side, _), (time_s, payload) in sorted(first_copy.items()):
            if side != from_server:
                continue
            # stream 0 is ordered: a message is delivered once it and all before it arrived
            delivered = max(delivered, time_s) if from_server else time_s
            text = payload.decode("latin-1")
            lines += [(line, delivered) for line in text.split("\r\n") if line]
        if from_server:
            channel.replies, channel.reply_texts = _replies(lines)
        else:
            channel.commands, channel.command_args = _commands(lines)
    return channel


def _replies(lines: list[tuple[str, float]]) -> tuple[list[tuple[int, float]], list[str]]:
    """Complete replies, (code, time) and the final line's text: a final line is three digits
    and a space (RFC 959 multi-line rule)."""
    final = [(line, t) for line, t in lines
             if len(line) >= 4 and line[:3].isdigit() and line[3] == " "]
    return [(int(line[:3]), t) for line, t in final], [line for line, _ in final]


def _commands(lines: list[tuple[str, float]]) -> tuple[list[tuple[str, float]], list[str]]:
    """(verb, time) of each command, and each one's argument."""
    split = [(line.split(" ", 1), t) for line, t in lines if line]
    return ([(words[0].upper(), t) for words, t in split],
            [words[1] if len(words) > 1 else "" for words, _ in split])


@dataclass
class FtpLine:
    frame: int
    variant: str
    stream: int
    role: str
    commands: list[str]
    reply_codes: list[int]


def over_sctp(pcap: Path, dissector: Path) -> list[FtpLine]:
    """What the Lua dissector (analysis/wireshark/ftp_sctp.lua) decodes in a capture, one entry
    per SCTP DATA chunk it handled (two passes, so every packet carries the variant learnt from
    the whole association)."""
    rows = fields(pcap, ["frame.number", "ftpsctp.variant", "ftpsctp.stream", "ftpsctp.role",
                         "ftpsctp.command", "ftpsctp.reply_code", "ftpsctp.line"], "ftpsctp",
                  ("-2", "-X", f"lua_script:{dissector}"))
    out = []
    for frame, variants, streams, roles, commands, codes, _lines in rows:
        variants_l, streams_l, roles_l = values(variants), values(streams), values(roles)
        chunks = zip(variants_l, streams_l, roles_l, strict=False)
        for i, (variant, stream, role) in enumerate(chunks):
            # commands and codes of a frame cannot be split per chunk from field output:
            # they are attached to the frame's first control chunk
            first_control = role == "control" and "control" not in roles_l[:i]
            out.append(FtpLine(int(frame), variant, int(stream), role,
                               values(commands) if first_control else [],
                               [int(c) for c in values(codes)] if first_control else []))
    return out
