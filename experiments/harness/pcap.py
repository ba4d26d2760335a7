"""Everything the harness reads from a pcap, through tshark: the instants the studies measure
(when the client had each FTP reply, when it sent each command) and per-run counters
(connections or associations opened, handshakes, retransmissions, timeouts).

The capture is on the client's interface, so a packet's time is when the client received or
sent it. A reply counts as received when all its bytes have arrived in order: under loss a
later segment can arrive before a retransmitted earlier one. The one place tshark is called."""
from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

FTP_PORT = 21
DATA_SETUP_COMMANDS = ("PASV", "EPSV", "PORT", "EPRT", "NLST")
# Reassembly off: with it, a frame that completes a stream-1 message hides the other chunks
# bundled with it (a stream-0 reply among them). Relative TSNs start at 0 per direction.
SCTP_OPTIONS = ("-o", "sctp.reassembly:FALSE", "-o", "sctp.relative_tsns:TRUE")


class PcapError(RuntimeError):
    pass


@dataclass
class ControlChannel:
    replies: list[tuple[int, float]] = field(default_factory=list)   # (code, time received)
    commands: list[tuple[str, float]] = field(default_factory=list)  # (verb, time sent)

    def first_reply(self, code: int) -> float | None:
        return next((t for c, t in self.replies if c == code), None)

    def last_reply(self, code: int) -> float | None:
        return next((t for c, t in reversed(self.replies) if c == code), None)

    def first_command(self, verbs: tuple[str, ...]) -> float | None:
        return next((t for v, t in self.commands if v in verbs), None)


@dataclass
class Counters:
    connections: int = 0      # TCP connections or SCTP associations the client opened
    handshakes: int = 0       # of those, completed
    retransmissions: int = 0  # retransmitted segments or DATA chunks, both directions
    timeouts: int = 0         # retransmissions not triggered by duplicate acks / gap reports


def tshark(pcap: Path, fields: list[str], display_filter: str, *options: str) -> list[list[str]]:
    argv = ["tshark", "-r", str(pcap), "-n", "-Y", display_filter, "-T", "fields",
            "-E", "occurrence=a", "-E", "aggregator=|", "-E", "separator=\t", *options]
    for name in fields:
        argv += ["-e", name]
    proc = subprocess.run(argv, capture_output=True, text=True)
    if proc.returncode != 0:
        raise PcapError(f"tshark failed on {pcap}: {proc.stderr.strip()[-300:]}")
    return [line.split("\t") for line in proc.stdout.splitlines() if line]


def control_channel(pcap: Path, transport: str) -> ControlChannel:
    if transport == "tcp":
        return _tcp_control(pcap)
    return _sctp_control(pcap)


def _session_stream(pcap: Path) -> str | None:
    """The tshark stream number of the session's control connection: the first one the client
    opens to the FTP port. On a lossy path the previous session's connections can still be
    closing (FIN retransmissions) when the next capture starts; they are not this session."""
    rows = tshark(pcap, ["tcp.stream"],
                  f"tcp.dstport == {FTP_PORT} && tcp.flags.syn == 1 && tcp.flags.ack == 0")
    return rows[0][0] if rows else None


def _tcp_control(pcap: Path) -> ControlChannel:
    stream = _session_stream(pcap)
    only = f" && tcp.stream == {stream}" if stream is not None else ""
    rows = tshark(pcap, ["frame.time_epoch", "tcp.srcport", "tcp.seq_raw", "tcp.payload"],
                  f"tcp.port == {FTP_PORT} && tcp.len > 0{only}")
    server = [(float(t), int(s), bytes.fromhex(p)) for t, port, s, p in rows
              if int(port) == FTP_PORT]
    client = [(float(t), int(s), bytes.fromhex(p)) for t, port, s, p in rows
              if int(port) != FTP_PORT]
    channel = ControlChannel()
    channel.replies = _replies(_in_order_lines(server, received=True))
    channel.commands = _commands(_in_order_lines(client, received=False))
    return channel


def _in_order_lines(segments: list[tuple[float, int, bytes]], received: bool
                    ) -> list[tuple[str, float]]:
    """Lines of one direction of a TCP stream with the time each became whole and in order
    (received) or was first put on the wire (sent)."""
    if not segments:
        return []
    base = min(seq for _, seq, _ in segments)
    end = max(seq - base + len(data) for _, seq, data in segments)
    content = bytearray(end)
    first_seen = [float("inf")] * end
    for time, seq, data in segments:  # capture order: the first copy of a byte wins
        offset = (seq - base) % (1 << 32)
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
    rows = tshark(pcap, ["sctp.srcport"], f"sctp.dstport == {FTP_PORT} && sctp.chunk_type == 1",
                  *SCTP_OPTIONS)
    return rows[0][0] if rows else None


def _sctp_control(pcap: Path) -> ControlChannel:
    first_copy: dict[tuple[bool, int], tuple[float, bytes]] = {}
    port = _session_sctp_port(pcap)
    only = f" && sctp.port == {port}" if port is not None else ""
    for time_s, src_port, chunks in _sctp_data_chunks(pcap, f"sctp.port == {FTP_PORT} && "
                                                           f"sctp.data_sid == 0{only}"):
        from_server = src_port == FTP_PORT
        for sid, ssn, payload in chunks:
            key = (from_server, ssn)
            if sid == 0 and key not in first_copy:  # a retransmitted copy changes nothing
                first_copy[key] = (time_s, payload)
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
            channel.replies = _replies(lines)
        else:
            channel.commands = _commands(lines)
    return channel


def _sctp_data_chunks(pcap: Path, display_filter: str
                      ) -> list[tuple[float, int, list[tuple[int, int, bytes]]]]:
    """(time, source port, [(stream, stream sequence number, payload)]) of every matching
    packet. The chunks are read from the raw frame: tshark's per-field output cannot pair a
    bundled chunk with its payload when another chunk in the packet is a message fragment."""
    argv = ["tshark", "-r", str(pcap), "-n", *SCTP_OPTIONS, "-Y", display_filter, "-T", "json",
            "-x", "-j", "frame"]
    proc = subprocess.run(argv, capture_output=True, text=True)
    if proc.returncode != 0:
        raise PcapError(f"tshark failed on {pcap}: {proc.stderr.strip()[-300:]}")
    packets = []
    for packet in json.loads(proc.stdout or "[]"):
        layers = packet["_source"]["layers"]
        frame = bytes.fromhex(layers["frame_raw"][0])
        time_s = float(layers["frame"]["frame.time_epoch"])
        packets.append((time_s, *_parse_sctp_frame(frame)))
    return packets


def _parse_sctp_frame(frame: bytes) -> tuple[int, list[tuple[int, int, bytes]]]:
    ip = 14  # Ethernet II, as on the testbed's veth links
    sctp = ip + (frame[ip] & 0x0F) * 4
    src_port = int.from_bytes(frame[sctp:sctp + 2], "big")
    chunks, offset = [], sctp + 12
    while offset + 4 <= len(frame):
        kind, length = frame[offset], int.from_bytes(frame[offset + 2:offset + 4], "big")
        if length < 4:
            break
        if kind == 0 and length >= 16:  # DATA
            sid = int.from_bytes(frame[offset + 8:offset + 10], "big")
            ssn = int.from_bytes(frame[offset + 10:offset + 12], "big")
            chunks.append((sid, ssn, frame[offset + 16:offset + length]))
        offset += (length + 3) & ~3
    return src_port, chunks


def _replies(lines: list[tuple[str, float]]) -> list[tuple[int, float]]:
    """Complete replies: a final line is three digits and a space (RFC 959 multi-line rule)."""
    return [(int(line[:3]), t) for line, t in lines
            if len(line) >= 4 and line[:3].isdigit() and line[3] == " "]


def _commands(lines: list[tuple[str, float]]) -> list[tuple[str, float]]:
    return [(line.split(" ", 1)[0].upper(), t) for line, t in lines if line]


def counters(pcap: Path, transport: str, client_ip: str, rto_floor_s: float) -> Counters:
    if transport == "tcp":
        return _tcp_counters(pcap, client_ip)
    return _sctp_counters(pcap, client_ip, rto_floor_s)


def _tcp_counters(pcap: Path, client_ip: str) -> Counters:
    rows = tshark(pcap, ["ip.src", "tcp.stream", "tcp.flags.syn", "tcp.flags.ack",
                         "tcp.analysis.retransmission", "tcp.analysis.fast_retransmission"],
                  "tcp")
    opened, completed, counts = set(), set(), Counters()
    for src, stream, syn, ack, retrans, fast in rows:
        if syn in ("1", "True"):
            (opened if ack in ("0", "False") else completed).add(stream)
        if retrans:
            counts.retransmissions += 1
            if not fast:
                counts.timeouts += 1
    counts.connections = len({s for s in opened})
    counts.handshakes = len(completed & opened)
    del client_ip
    return counts


def _sctp_counters(pcap: Path, client_ip: str, rto_floor_s: float) -> Counters:
    """Associations from INIT and COOKIE ACK chunks. Retransmissions from the DATA chunks'
    TSNs in each direction of each association: a TSN seen again was retransmitted after the
    capture point saw it; a TSN that fills a gap below the highest one seen was lost before the
    capture point and sent again. Either counts as a timeout when it came at least the RTO
    floor after the first copy or after the gap opened; sooner, it was a fast retransmit."""
    rows = tshark(pcap, ["frame.time_epoch", "ip.src", "sctp.srcport", "sctp.dstport",
                         "sctp.chunk_type", "sctp.init_initiate_tag", "sctp.data_tsn"],
                  "sctp", *SCTP_OPTIONS)
    counts, initiated = Counters(), set()
    first_seen: dict[tuple[str, str], dict[int, float]] = {}
    highest: dict[tuple[str, str], tuple[int, float]] = {}
    for time_s, src, sport, dport, chunk_types, tags, tsns in rows:
        types = chunk_types.split("|")
        if "1" in types and src == client_ip:            # INIT from the client
            initiated.update(t for t in tags.split("|") if t)
        if "11" in types and src != client_ip:           # COOKIE ACK from the server
            counts.handshakes += types.count("11")
        direction = (sport, dport)
        seen = first_seen.setdefault(direction, {})
        for tsn in (int(t) for t in tsns.split("|") if t):
            now = float(time_s)
            top, gap_opened = highest.get(direction, (-1, now))
            if tsn in seen:
                waited = now - seen[tsn]
            elif tsn < top:
                waited = now - gap_opened
            else:
                if top >= 0 and tsn > top + 1:
                    gap_opened = now  # chunks between top and tsn were lost
                highest[direction] = (tsn, gap_opened)
                seen[tsn] = now
                continue
            seen.setdefault(tsn, now)
            counts.retransmissions += 1
            if waited >= rto_floor_s:
                counts.timeouts += 1
    counts.connections = len(initiated)
    return counts
