"""Every tshark call of the analysis package: the packets of one run for its time-sequence plot,
and FTP lines decoded by the shipped Lua dissector (analysis/wireshark/ftp_sctp.lua).

The client is the host that sends a capture's first packet (the capture is on the client's
interface and the client opens every connection). Each TCP connection or SCTP association is a
flow; a flow's sequence numbers are made relative to its lowest one and flows are stacked in
the order they started, so one session reads as one rising line."""
from __future__ import annotations

import subprocess
from dataclasses import dataclass, field
from pathlib import Path

LUA_DISSECTOR = Path(__file__).resolve().parent / "wireshark" / "ftp_sctp.lua"
FTP_PORT = 21


class TsharkError(RuntimeError):
    pass


@dataclass
class Mark:
    time_s: float
    value: float          # stacked sequence (TCP bytes, SCTP TSNs)
    flow: int             # index of the connection/association, in start order
    stream: int           # SCTP stream (TCP: 0 for the control connection, 1 for data)
    retransmission: bool = False


@dataclass
class TimeSequence:
    transport: str                                   # "tcp" or "sctp"
    unit: str                                        # what value counts
    data: list[Mark] = field(default_factory=list)   # server -> client data
    acks: list[Mark] = field(default_factory=list)   # client's cumulative acks
    flows: int = 0

    def streams(self) -> list[int]:
        return sorted({m.stream for m in self.data})


def run_tshark(pcap: Path, fields: list[str], display_filter: str = "",
               options: tuple[str, ...] = ()) -> list[list[str]]:
    argv = ["tshark", "-r", str(pcap), "-n", *options, "-T", "fields",
            "-E", "occurrence=a", "-E", "aggregator=|", "-E", "separator=\t"]
    if display_filter:
        argv += ["-Y", display_filter]
    for name in fields:
        argv += ["-e", name]
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=600)
    except FileNotFoundError:
        raise TsharkError("tshark is not installed (make setup installs it)") from None
    if proc.returncode != 0:
        raise TsharkError(f"tshark failed on {pcap}: {proc.stderr.strip()[-400:]}")
    return [line.split("\t") for line in proc.stdout.splitlines() if line]


def _values(cell: str) -> list[str]:
    return [v for v in cell.split("|") if v != ""]


class _Stacker:
    """Gives each flow an offset: the span of the flows that started before it."""

    def __init__(self) -> None:
        self.order: list[str] = []
        self.base: dict[str, int] = {}
        self.top: dict[str, int] = {}

    def see(self, flow: str, seq: int, end: int) -> None:
        if flow not in self.base:
            self.order.append(flow)
            self.base[flow], self.top[flow] = seq, end
        self.base[flow] = min(self.base[flow], seq)
        self.top[flow] = max(self.top[flow], end)

    def offsets(self) -> dict[str, int]:
        out, total = {}, 0
        for flow in self.order:
            out[flow] = total
            total += self.top[flow] - self.base[flow]
        return out


def time_sequence(pcap: Path, transport: str) -> TimeSequence:
    return _tcp_sequence(pcap) if transport == "tcp" else _sctp_sequence(pcap)


def _tcp_sequence(pcap: Path) -> TimeSequence:
    rows = run_tshark(pcap, ["frame.time_relative", "ip.src", "tcp.stream", "tcp.srcport",
                             "tcp.dstport", "tcp.seq_raw", "tcp.len", "tcp.ack_raw",
                             "tcp.flags.ack", "tcp.analysis.retransmission"], "tcp",
                      ("-o", "tcp.relative_sequence_numbers:FALSE"))
    if not rows:
        return TimeSequence("tcp", "bytes (connections stacked)")
    client = rows[0][1]
    stacker = _Stacker()
    parsed = []
    for t, src, stream, sport, dport, seq, length, ack, ack_flag, retrans in rows:
        server_side = src != client
        kind = "data" if server_side and int(length or 0) > 0 else (
            "ack" if not server_side and ack_flag in ("1", "True") else "")
        if not kind:
            continue
        control = FTP_PORT in (int(sport), int(dport))
        seq_i = int(seq) if kind == "data" else int(ack)
        end = seq_i + int(length or 0)
        if kind == "data":
            stacker.see(stream, seq_i, end)
        parsed.append((float(t), kind, stream, seq_i, end, 0 if control else 1, bool(retrans)))
    offsets = stacker.offsets()
    result = TimeSequence("tcp", "bytes (connections stacked)", flows=len(offsets))
    index = {flow: i for i, flow in enumerate(stacker.order)}
    for t, kind, stream, seq_i, end, role, retrans in parsed:
        if stream not in offsets:
            continue  # acks of a connection that carried no server data
        if kind == "data":
            result.data.append(Mark(t, offsets[stream] + end - stacker.base[stream],
                                    index[stream], role, retrans))
        else:
            value = min(max(seq_i, stacker.base[stream]), stacker.top[stream])
            result.acks.append(Mark(t, offsets[stream] + value - stacker.base[stream],
                                    index[stream], role))
    return result


def _sctp_sequence(pcap: Path) -> TimeSequence:
    rows = run_tshark(pcap, ["frame.time_relative", "ip.src", "sctp.srcport", "sctp.dstport",
                             "sctp.data_tsn_raw", "sctp.data_sid", "sctp.sack_cumulative_tsn_ack_raw"],
                      "sctp", ("-o", "sctp.relative_tsns:FALSE"))
    if not rows:
        return TimeSequence("sctp", "TSN (associations stacked)")
    client = rows[0][1]
    stacker = _Stacker()
    parsed = []
    for t, src, sport, dport, tsns, sids, cum_acks in rows:
        flow = "-".join(sorted((sport, dport)))
        server_side = src != client
        if server_side:
            for tsn, sid in zip(_values(tsns), _values(sids)):
                stacker.see(flow, int(tsn), int(tsn) + 1)
                parsed.append((float(t), "data", flow, int(tsn), int(sid, 0)))
        else:
            for ack in _values(cum_acks):
                parsed.append((float(t), "ack", flow, int(ack) + 1, -1))
    offsets = stacker.offsets()
    result = TimeSequence("sctp", "TSN (associations stacked)", flows=len(offsets))
    index = {flow: i for i, flow in enumerate(stacker.order)}
    highest: dict[str, int] = {}
    for t, kind, flow, tsn, sid in parsed:
        if flow not in offsets:
            continue
        base = stacker.base[flow]
        if kind == "data":
            # At the client's interface a lost chunk's first copy is never seen: its
            # retransmission shows as a TSN below the highest seen (as tshark's TCP analysis
            # judges segments), or as a repeated one when the SACK was lost instead.
            late = tsn <= highest.get(flow, tsn - 1)
            highest[flow] = max(highest.get(flow, tsn), tsn)
            result.data.append(Mark(t, offsets[flow] + tsn + 1 - base, index[flow], sid, late))
        else:
            value = min(max(tsn, base), stacker.top[flow])
            result.acks.append(Mark(t, offsets[flow] + value - base, index[flow], -1))
    return result


@dataclass
class FtpLine:
    frame: int
    variant: str
    stream: int
    role: str
    commands: list[str]
    reply_codes: list[int]


def ftp_over_sctp(pcap: Path, dissector: Path = LUA_DISSECTOR) -> list[FtpLine]:
    """What the Lua dissector decodes in a capture, one entry per SCTP DATA chunk it handled
    (two passes, so every packet carries the variant learnt from the whole association)."""
    rows = run_tshark(pcap, ["frame.number", "ftpsctp.variant", "ftpsctp.stream",
                             "ftpsctp.role", "ftpsctp.command", "ftpsctp.reply_code",
                             "ftpsctp.line"], "ftpsctp",
                      ("-2", "-X", f"lua_script:{dissector}"))
    out = []
    for frame, variants, streams, roles, commands, codes, _lines in rows:
        variants_l, streams_l, roles_l = _values(variants), _values(streams), _values(roles)
        for i, (variant, stream, role) in enumerate(zip(variants_l, streams_l, roles_l)):
            # commands and codes of a frame cannot be split per chunk from field output:
            # they are attached to the frame's first control chunk
            first_control = role == "control" and "control" not in roles_l[:i]
            out.append(FtpLine(int(frame), variant, int(stream), role,
                               _values(commands) if first_control else [],
                               [int(c) for c in _values(codes)] if first_control else []))
    return out
