"""What a capture says of the transports, whatever the application: connections or associations
opened, retransmissions and timeouts, time-sequences of data and acknowledgements, and per-flow
bytes delivered over time.

One definition of an SCTP retransmission serves all of them (`TsnTracker`): at a capture point,
a DATA chunk whose TSN was seen before, or that fills a gap below the highest TSN seen (its
first copy was lost before the capture point), is a retransmission."""
from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path

from . import SCTP_OPTIONS, Host, addresses, fields, frames, is_true, values

UDP_PROTOCOL, UDP_HEADER_BYTES = 17, 8   # usrsctp's SCTP travels inside UDP (RFC 6951)


# -- SCTP chunks and retransmissions -------------------------------------------------------------
@dataclass(frozen=True)
class DataChunk:
    sid: int
    ssn: int
    tsn: int
    length: int      # payload bytes the chunk carries, from its header
    payload: bytes   # what the capture holds of it (less than `length` in a short snaplen)
    ends_message: bool = True   # the E bit: the last fragment of a user message


@dataclass(frozen=True)
class SctpFrame:
    src_port: int
    dst: str
    dst_port: int
    chunks: list[DataChunk]
    src: str = ""
    types: list[int] = field(default_factory=list)   # every chunk's type, in order


def sctp_frames(pcap: Path, display_filter: str) -> list[tuple[float, SctpFrame]]:
    """The SCTP packets the filter keeps, read from their bytes; not an ICMP error quoting one
    (tshark finds SCTP inside it), which is no packet of the association."""
    return [(time_s, parse_sctp_frame(frame))
            for time_s, frame in frames(pcap, f"({display_filter}) && !icmp", SCTP_OPTIONS)]


def parse_sctp_frame(frame: bytes) -> SctpFrame:
    ip = 14  # Ethernet II, as on the testbed's veth links
    sctp = ip + (frame[ip] & 0x0F) * 4
    if frame[ip + 9] == UDP_PROTOCOL:  # usrsctp's: SCTP inside UDP (RFC 6951)
        sctp += UDP_HEADER_BYTES
    src = ".".join(str(b) for b in frame[ip + 12:ip + 16])
    dst = ".".join(str(b) for b in frame[ip + 16:ip + 20])
    src_port = int.from_bytes(frame[sctp:sctp + 2], "big")
    dst_port = int.from_bytes(frame[sctp + 2:sctp + 4], "big")
    chunks, types, offset = [], [], sctp + 12
    while offset + 4 <= len(frame):
        kind, length = frame[offset], int.from_bytes(frame[offset + 2:offset + 4], "big")
        if length < 4:
            break
        types.append(kind)
        if kind == 0 and length >= 16 and offset + 16 <= len(frame):  # DATA
            chunks.append(DataChunk(
                sid=int.from_bytes(frame[offset + 8:offset + 10], "big"),
                ssn=int.from_bytes(frame[offset + 10:offset + 12], "big"),
                tsn=int.from_bytes(frame[offset + 4:offset + 8], "big"),
                length=length - 16, payload=frame[offset + 16:offset + length],
                ends_message=bool(frame[offset + 1] & 0x01)))
        offset += (length + 3) & ~3
    return SctpFrame(src_port, dst, dst_port, chunks, src, types)


TSN_SPACE = 1 << 32


class TsnTracker:
    """The DATA chunks of one direction of one association, in capture order. TSNs are taken
    relative to the first one captured, in serial-number arithmetic: a chunk sent before that
    one (its first copy lost) counts below it, and an association whose TSNs wrap past 2^32
    keeps its order."""

    def __init__(self) -> None:
        self.first_seen: dict[int, float] = {}   # by relative TSN
        self.base: int | None = None
        self.top: int | None = None
        self.gap_opened = 0.0

    def relative(self, tsn: int) -> int:
        if self.base is None:
            self.base = tsn
        step = (tsn - self.base) % TSN_SPACE
        return step - TSN_SPACE if step >= TSN_SPACE // 2 else step

    def is_new(self, tsn: int) -> bool:
        return self.relative(tsn) not in self.first_seen

    def see(self, tsn: int, now: float) -> float | None:
        """None for the first copy of a new TSN; for a retransmission, the seconds since its
        first copy was seen or since the gap it fills opened (for a chunk below the first
        captured: since that one came)."""
        step = self.relative(tsn)
        if step in self.first_seen:
            return now - self.first_seen[step]
        self.first_seen[step] = now
        if self.top is None:
            self.top, self.gap_opened = step, now
            return None
        if step < self.top:
            return now - self.gap_opened
        if step > self.top + 1:
            self.gap_opened = now  # the chunks between top and this one were lost
        self.top = step
        return None


# -- per-run counters --------------------------------------------------------------------------
@dataclass
class Counters:
    connections: int = 0      # TCP connections or SCTP associations the client opened
    handshakes: int = 0       # of those, completed
    retransmissions: int = 0  # retransmitted segments or DATA chunks, both directions
    timeouts: int = 0         # retransmissions that waited the RTO floor or longer


def counters(pcap: Path, transport: str, client_ip: Host, rto_floor_s: float) -> Counters:
    if transport == "tcp":
        return _tcp_counters(pcap, rto_floor_s)
    return _sctp_counters(pcap, client_ip, rto_floor_s)


class SeqTracker:
    """The payload of one direction of one TCP connection, in capture order: TsnTracker's
    definition in bytes. A segment that starts below the highest byte seen is a retransmission
    (a copy, or the filling of a hole whose first copy was lost before the capture point):
    tshark calls a hole filled soon after it opened "out of order", not a retransmission, so
    its own flag undercounts at the receiver."""

    def __init__(self) -> None:
        self.first_seen: dict[int, float] = {}
        self.top = -1
        self.gap_opened = 0.0

    def see(self, start: int, end: int, now: float) -> float | None:
        if start in self.first_seen:
            self.top = max(self.top, end)
            return now - self.first_seen[start]
        self.first_seen[start] = now
        if start < self.top:
            self.top = max(self.top, end)
            return now - self.gap_opened
        if self.top >= 0 and start > self.top:
            self.gap_opened = now  # the bytes between top and start were lost
        self.top = end
        return None


def _tcp_counters(pcap: Path, rto_floor_s: float) -> Counters:
    """Connections from SYNs; payload retransmissions by SeqTracker. At the receiver a fast
    retransmit fills its hole about a round trip after it opened, a timeout's copy comes at
    least the RTO floor later than that (Linux: RTO >= the smoothed RTT + 200 ms): a
    retransmission is a timeout when it waited the floor plus the connection's handshake round
    trip. A SYN or FIN sent again (below what its direction had sent) is a timeout. The
    handshake's round trip is tshark's initial RTT: from the connection's latest SYN to the
    first segment after it that acknowledges without one."""
    rows = fields(pcap, ["frame.time_epoch", "tcp.stream", "ip.src", "tcp.srcport",
                         "tcp.flags.syn", "tcp.flags.ack", "tcp.flags.fin", "tcp.seq",
                         "tcp.len"], "tcp")
    opened, completed, counts = set(), set(), Counters()
    trackers: dict[tuple[str, str, str], SeqTracker] = {}
    round_trip: dict[str, float] = {}
    latest_syn: dict[str, str] = {}
    sent_up_to: dict[tuple[str, str, str], int] = {}
    for time_text, stream, src, sport, syn, ack, fin, seq, length in rows:
        way, start, size = (stream, src, sport), int(seq), int(length or 0)
        flagged = int(is_true(syn)) + int(is_true(fin))    # each takes a sequence number
        if is_true(syn):
            (completed if is_true(ack) else opened).add(stream)
            if not is_true(ack):
                latest_syn[stream] = time_text
        elif is_true(ack) and stream in latest_syn and stream not in round_trip:
            round_trip[stream] = float(_seconds(time_text) - _seconds(latest_syn[stream]))
        before = sent_up_to.get(way)
        sent_up_to[way] = max(before or 0, start + size + flagged)
        if size == 0:
            if flagged and before is not None and start < before:
                counts.retransmissions += 1
                counts.timeouts += 1
            continue
        tracker = trackers.setdefault(way, SeqTracker())
        waited = tracker.see(start, start + size, float(time_text))
        if waited is not None:
            counts.retransmissions += 1
            if waited >= rto_floor_s + round_trip.get(stream, 0.0):
                counts.timeouts += 1
    counts.connections = len(opened)
    counts.handshakes = len(completed & opened)
    return counts


def _seconds(time_text: str) -> Fraction:
    """A capture time, exactly: the difference of two rounds as tshark's printed one does."""
    return Fraction(time_text)


def _sctp_counters(pcap: Path, client_ip: Host, rto_floor_s: float) -> Counters:
    """Associations from INIT and COOKIE ACK chunks; a retransmission counts as a timeout when
    it came at least the RTO floor after its first copy or after its gap opened; sooner, it
    was a fast retransmit."""
    rows = fields(pcap, ["frame.time_epoch", "ip.src", "sctp.srcport", "sctp.dstport",
                         "sctp.chunk_type", "sctp.init_initiate_tag", "sctp.data_tsn_raw"],
                  "sctp", SCTP_OPTIONS)
    counts, initiated = Counters(), set()
    client = addresses(client_ip)
    trackers: dict[tuple[str, str], TsnTracker] = {}
    for time_s, src, sport, dport, chunk_types, tags, tsns in rows:
        types = chunk_types.split("|")
        if "1" in types and src in client:               # INIT from the client
            initiated.update(values(tags))
        if "11" in types and src not in client:          # COOKIE ACK from the server
            counts.handshakes += types.count("11")
        tracker = trackers.setdefault((sport, dport), TsnTracker())
        for tsn in values(tsns):
            waited = tracker.see(int(tsn), float(time_s))
            if waited is not None:
                counts.retransmissions += 1
                if waited >= rto_floor_s:
                    counts.timeouts += 1
    counts.connections = len(initiated)
    return counts


# -- time-sequences ------------------------------------------------------------------------------
# bumped when time_sequence() reads a capture differently: saved ones of another version are
# written again
TIME_SEQUENCE_VERSION = 1
@dataclass
class Mark:
    time_s: float
    value: float          # stacked sequence (TCP bytes, SCTP TSNs)
    flow: int             # index of the connection/association, in start order
    stream: int           # SCTP stream (TCP: 0 for the control connection, 1 for data)
    retransmission: bool = False


@dataclass
class TimeSequence:
    """Data one side sent and the other side's cumulative acks over time. Each connection or
    association is a flow; a flow's sequence numbers are made relative to its lowest one and
    flows are stacked in the order they started, so one session reads as one rising line."""

    transport: str                                   # "tcp" or "sctp"
    unit: str                                        # what value counts
    data: list[Mark] = field(default_factory=list)   # server -> client data
    acks: list[Mark] = field(default_factory=list)   # client's cumulative acks
    flows: int = 0

    def streams(self) -> list[int]:
        return sorted({m.stream for m in self.data})

    def save(self, path: Path) -> None:
        """As a run's file (time_sequence.json), written whole by rename: what a report draws
        without reading the pcap again."""
        marks = {side: [[m.time_s, m.value, m.flow, m.stream, int(m.retransmission)]
                        for m in getattr(self, side)] for side in ("data", "acks")}
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps({"version": TIME_SEQUENCE_VERSION, "transport": self.transport,
                                   "unit": self.unit, "flows": self.flows, **marks}))
        tmp.replace(path)

    @classmethod
    def load(cls, path: Path) -> TimeSequence:
        saved = json.loads(path.read_text())
        if saved.get("version") != TIME_SEQUENCE_VERSION:
            raise ValueError(f"{path} is of another version than this reading's "
                             f"({TIME_SEQUENCE_VERSION})")
        marks = {side: [Mark(t, v, int(flow), int(stream), bool(retransmission))
                        for t, v, flow, stream, retransmission in saved[side]]
                 for side in ("data", "acks")}
        return cls(saved["transport"], saved["unit"], marks["data"], marks["acks"],
                   saved["flows"])


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


def time_sequence(pcap: Path, transport: str, control_port: int = 21) -> TimeSequence:
    """The client is the host that opens the capture's first connection or association (the
    client opens every one); `control_port` marks TCP's control connection."""
    if transport == "tcp":
        return _tcp_sequence(pcap, control_port)
    return _sctp_sequence(pcap)


def _opener(rows: Sequence[Sequence[str]], opens: Callable[[Sequence[str]], bool]) -> str:
    """The source of the first row that opens a connection or association; the first row's
    when none does. Not simply the first row's: the capture may begin with the end of an
    earlier run's association (a SHUTDOWN retransmitted after a loss) sent by the server."""
    return next((row[1] for row in rows if opens(row)), rows[0][1])


def _tcp_sequence(pcap: Path, control_port: int) -> TimeSequence:
    rows = fields(pcap, ["frame.time_relative", "ip.src", "tcp.stream", "tcp.srcport",
                         "tcp.dstport", "tcp.seq_raw", "tcp.len", "tcp.ack_raw",
                         "tcp.flags.ack", "tcp.analysis.retransmission", "tcp.flags.syn"],
                  "tcp", ("-o", "tcp.relative_sequence_numbers:FALSE"))
    if not rows:
        return TimeSequence("tcp", "bytes (connections stacked)")
    client = _opener(rows, lambda row: is_true(row[10]) and not is_true(row[8]))
    stacker = _Stacker()
    parsed = []
    for t, src, stream, sport, dport, seq, length, ack, ack_flag, retrans, _syn in rows:
        server_side = src != client
        kind = "data" if server_side and int(length or 0) > 0 else (
            "ack" if not server_side and is_true(ack_flag) else "")
        if not kind:
            continue
        control = control_port in (int(sport), int(dport))
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
    rows = fields(pcap, ["frame.time_relative", "ip.src", "sctp.srcport", "sctp.dstport",
                         "sctp.data_tsn_raw", "sctp.data_sid", "sctp.sack_cumulative_tsn_ack_raw",
                         "sctp.chunk_type"],
                  "sctp", ("-o", "sctp.relative_tsns:FALSE"))
    if not rows:
        return TimeSequence("sctp", "TSN (associations stacked)")
    client = _opener(rows, lambda row: "1" in values(row[7]))       # INIT
    stacker = _Stacker()
    parsed = []
    for t, src, sport, dport, tsns, sids, cum_acks, _types in rows:
        flow = "-".join(sorted((sport, dport)))
        if src != client:
            for tsn, sid in zip(values(tsns), values(sids), strict=False):
                stacker.see(flow, int(tsn), int(tsn) + 1)
                parsed.append((float(t), "data", flow, int(tsn), int(sid, 0)))
        else:
            for ack in values(cum_acks):
                parsed.append((float(t), "ack", flow, int(ack) + 1, -1))
    offsets = stacker.offsets()
    result = TimeSequence("sctp", "TSN (associations stacked)", flows=len(offsets))
    index = {flow: i for i, flow in enumerate(stacker.order)}
    trackers: dict[str, TsnTracker] = {}
    for t, kind, flow, tsn, sid in parsed:
        if flow not in offsets:
            continue
        base = stacker.base[flow]
        if kind == "data":
            late = trackers.setdefault(flow, TsnTracker()).see(tsn, t) is not None
            result.data.append(Mark(t, offsets[flow] + tsn + 1 - base, index[flow], sid, late))
        else:
            value = min(max(tsn, base), stacker.top[flow])
            result.acks.append(Mark(t, offsets[flow] + value - base, index[flow], -1))
    return result


# -- per-flow delivered bytes -------------------------------------------------------------------
@dataclass
class FlowTraffic:
    """One flow as a capture point between its sender and its receiver saw it."""

    delivered: list[tuple[float, int]] = field(default_factory=list)  # (time, bytes so far)
    repeated: int = 0   # segments or DATA chunks seen again: their first copy got this far,
                        # so the sender retransmitted them needlessly (a spurious timeout or
                        # a retransmission for a loss after the capture point)


def flow_traffic(pcap: Path, flows: list[tuple[str, int, str]]) -> list[FlowTraffic]:
    """For each flow (the receiver's address, its port, "tcp" or "sctp"): the bytes delivered to
    its receiver over time, read from the receiver's cumulative acknowledgements as they crossed
    the capture point (TCP's ack number; SCTP's cumulative TSN ack summed over the DATA chunks'
    lengths), and how many of its data units the capture point saw more than once."""
    rows = fields(pcap, ["frame.time_epoch", "ip.src", "ip.dst", "tcp.srcport", "tcp.dstport",
                         "tcp.ack", "tcp.seq_raw", "tcp.len", "sctp.srcport",
                         "sctp.sack_cumulative_tsn_ack_raw"],
                  "tcp || sctp.chunk_type == 3")
    out = {f[:2]: FlowTraffic() for f in flows}
    segments: dict[tuple[str, int], set[int]] = {f[:2]: set() for f in flows}
    for t, src, dst, sport, dport, ack, seq, length, sctp_port, cum in rows:
        if sport and length == "0" and ack and (src, int(sport)) in out:
            out[(src, int(sport))].delivered.append((float(t), int(ack) - 1))  # less the SYN
        elif dport and length not in ("", "0") and (dst, int(dport)) in out:
            seen = segments[(dst, int(dport))]
            if int(seq) in seen:
                out[(dst, int(dport))].repeated += 1
            seen.add(int(seq))
        elif sctp_port and cum and (src, int(sctp_port)) in out:
            out[(src, int(sctp_port))].delivered.append((float(t), int(values(cum)[0])))
    if any(proto == "sctp" for _, _, proto in flows):
        chunks: dict[tuple[str, int], dict[int, DataChunk]] = {f[:2]: {} for f in flows}
        for _, frame in sctp_frames(pcap, "sctp"):
            key = (frame.dst, frame.dst_port)
            if key in chunks:
                for chunk in frame.chunks:
                    if chunk.tsn in chunks[key]:
                        out[key].repeated += 1
                    chunks[key][chunk.tsn] = chunk
        for address, port, proto in flows:
            if proto == "sctp":
                traffic = out[(address, port)]
                traffic.delivered = _tsns_to_bytes(traffic.delivered, chunks[(address, port)])
    return [out[f[:2]] for f in flows]


def _tsns_to_bytes(acks: list[tuple[float, int]], chunks: dict[int, DataChunk]
                   ) -> list[tuple[float, int]]:
    """(time, cumulative TSN) -> (time, payload bytes of every whole message up to it): an
    SCTP receiver's application gets a message only once its last fragment has arrived."""
    prefix: dict[int, int] = {}
    total = whole = 0
    for tsn in sorted(chunks):
        total += chunks[tsn].length
        if chunks[tsn].ends_message:
            whole = total
        prefix[tsn] = whole
    return [(t, prefix[cum]) for t, cum in acks if cum in prefix]
