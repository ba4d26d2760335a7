"""Each connection or association as a capture on the client's interface saw it: when it was
opened (by the client; by the server for a data connection under PORT/EPRT) and when its
handshake completed there, every piece of data that reached the
client (where it sits in its stream, whether it was new, whether the sender had sent it
before), the client's acknowledgements, and every packet's time (the teardown's last one among
them).

A flow is named by its two ports; the client is the host whose address is given. Byte offsets
are per stream and start at 0: TCP's sequence numbers less the initial one, SCTP's DATA
chunks laid end to end in TSN order (the order one sender puts a stream's messages on the
wire)."""
from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from experiments.tshark import SCTP_OPTIONS, Host, addresses, fields, is_true, values
from experiments.tshark.transport import TsnTracker, sctp_frames

SEQ_SPACE = 1 << 32
# SCTP chunk types (RFC 9260 section 3.2)
INIT, SACK, COOKIE_ACK = 1, 3, 11


@dataclass
class Arrival:
    """One TCP segment or SCTP DATA chunk from the server, in capture order."""

    time_s: float
    stream: int              # SCTP stream; 0 for TCP
    offset: int              # its first byte's offset in its stream
    length: int
    new: bool                # it brought bytes the client had not had
    retransmission: bool     # the sender had sent it, or the bytes it fills a gap with, before
    unit: int = 0            # TCP: sequence offset; SCTP: TSN (to lay chunks end to end)


@dataclass
class Flow:
    transport: str
    client_port: int
    server_port: int
    opened_s: float | None = None    # the opener's SYN or INIT
    set_up_s: float | None = None    # the opener's ACK of the SYN-ACK; the COOKIE ACK
    opened_by_client: bool = True    # False: the server connected (PORT/EPRT)
    arrivals: list[Arrival] = field(default_factory=list)
    acks: list[float] = field(default_factory=list)      # the client's pure ACKs and SACKs
    packets: list[float] = field(default_factory=list)   # every packet, either way

    def last_packet(self, until_s: float) -> float | None:
        at = bisect.bisect_right(self.packets, until_s)
        return self.packets[at - 1] if at else None


class Coverage:
    """The byte ranges of a stream received so far, as disjoint sorted intervals."""

    def __init__(self) -> None:
        self.starts: list[int] = []
        self.ends: list[int] = []

    def add(self, start: int, end: int) -> int:
        """Adds [start, end); returns how many of its bytes were not covered before."""
        if end <= start:
            return 0
        if not self.ends or start > self.ends[-1]:   # beyond all so far: in-order data, or a gap
            self.starts.append(start)
            self.ends.append(end)
            return end - start
        if start == self.ends[-1]:                   # right after the last: in-order data
            self.ends[-1] = end
            return end - start
        lo = bisect.bisect_left(self.ends, start)    # the first interval reaching start
        hi = bisect.bisect_right(self.starts, end)   # past the last one starting by end
        covered = sum(max(0, min(end, e) - max(start, s))
                      for s, e in zip(self.starts[lo:hi], self.ends[lo:hi], strict=True))
        if lo < hi:
            merged = (min(start, self.starts[lo]), max(end, self.ends[hi - 1]))
        else:
            merged = (start, end)
        self.starts[lo:hi], self.ends[lo:hi] = [merged[0]], [merged[1]]
        return end - start - covered


def client_flows(pcap: Path, transport: str, client_ip: Host, whole_packets: bool = True
                 ) -> list[Flow]:
    """The capture's flows in the order they were opened (flows whose opening the capture
    missed come first, by their first packet)."""
    if transport == "tcp":
        flows = _tcp_flows(pcap, client_ip)
    else:
        flows = _sctp_flows(pcap, client_ip, whole_packets)
    return sorted(flows, key=lambda f: f.opened_s if f.opened_s is not None
                  else (f.packets[0] - 1e9 if f.packets else 0.0))


# -- TCP ------------------------------------------------------------------------------------------
def _tcp_flows(pcap: Path, client_ip: Host) -> list[Flow]:
    client = addresses(client_ip)
    rows = fields(pcap, ["frame.time_epoch", "ip.src", "tcp.srcport", "tcp.dstport",
                         "tcp.flags.syn", "tcp.flags.ack", "tcp.flags.fin", "tcp.seq_raw",
                         "tcp.len"], "tcp")
    flows: dict[tuple[int, int], Flow] = {}
    isn: dict[tuple[int, int], int] = {}
    seen: dict[tuple[int, int], Coverage] = {}
    top: dict[tuple[int, int], int] = {}
    for time_text, src, sport, dport, syn, ack, fin, seq, length in rows:
        time_s, from_client = float(time_text), src in client
        key = (int(sport), int(dport)) if from_client else (int(dport), int(sport))
        flow = flows.setdefault(key, Flow("tcp", *key))
        flow.packets.append(time_s)
        size = int(length or 0)
        if is_true(syn):
            if not is_true(ack) and flow.opened_s is None:
                flow.opened_s, flow.opened_by_client = time_s, from_client
            if not from_client:
                isn[key] = int(seq)
            continue
        if flow.set_up_s is None and flow.opened_s is not None \
                and from_client == flow.opened_by_client:
            flow.set_up_s = time_s   # the opener's first packet after the SYN-ACK: its ACK
        if from_client:
            if size == 0 and is_true(ack) and not is_true(fin):
                flow.acks.append(time_s)
            continue
        if size:
            base = isn.setdefault(key, int(seq) - 1)
            offset = (int(seq) - base - 1) % SEQ_SPACE
            coverage = seen.setdefault(key, Coverage())
            fresh = coverage.add(offset, offset + size)
            behind = offset < top.get(key, 0)
            top[key] = max(top.get(key, 0), offset + size)
            flow.arrivals.append(Arrival(time_s, 0, offset, size, fresh > 0, behind, offset))
    return list(flows.values())


# -- SCTP -----------------------------------------------------------------------------------------
class _Chunk(NamedTuple):
    tsn: int
    sid: int
    length: int


def _sctp_packets(pcap: Path, whole_packets: bool
                  ) -> list[tuple[float, str, int, int, list[int], list[_Chunk]]]:
    """(time, source address, source port, destination port, chunk types, DATA chunks) per
    packet. Whole packets are read from tshark's fields, which is fast; a capture cut short by
    a snaplen is read from the raw frames, whose chunk headers tshark does not dissect."""
    if not whole_packets:
        return [(t, f.src, f.src_port, f.dst_port, f.types,
                 [_Chunk(c.tsn, c.sid, c.length) for c in f.chunks])
                for t, f in sctp_frames(pcap, "sctp")]
    rows = fields(pcap, ["frame.time_epoch", "ip.src", "sctp.srcport", "sctp.dstport",
                         "sctp.chunk_type", "sctp.chunk_length", "sctp.data_tsn_raw",
                         "sctp.data_sid"], "sctp", SCTP_OPTIONS)
    out = []
    for time_text, src, sport, dport, types, lengths, tsns, sids in rows:
        if types and "|" not in types:   # one chunk: most packets, read without splitting the cells
            kind = int(types)
            out.append((float(time_text), src, int(sport), int(dport), [kind],
                        [_Chunk(int(tsns), int(sids, 0), int(lengths) - 16)]
                        if kind == 0 and tsns and sids else []))
            continue
        kinds = [int(k) for k in values(types)]
        data_lengths = [int(n) - 16 for k, n in zip(kinds, values(lengths), strict=False)
                        if k == 0]
        chunks = [_Chunk(int(tsn), int(sid, 0), n) for tsn, sid, n in
                  zip(values(tsns), values(sids), data_lengths, strict=False)]
        out.append((float(time_text), src, int(sport), int(dport), kinds, chunks))
    return out


def _sctp_flows(pcap: Path, client_ip: Host, whole_packets: bool) -> list[Flow]:
    client = addresses(client_ip)
    flows: dict[tuple[int, int], Flow] = {}
    trackers: dict[tuple[int, int], TsnTracker] = {}
    for time_s, src, sport, dport, kinds, chunks in _sctp_packets(pcap, whole_packets):
        from_client = src in client
        key = (sport, dport) if from_client else (dport, sport)
        flow = flows.setdefault(key, Flow("sctp", *key))
        flow.packets.append(time_s)
        if INIT in kinds and flow.opened_s is None:
            flow.opened_s, flow.opened_by_client = time_s, from_client
        if COOKIE_ACK in kinds and flow.set_up_s is None and from_client != flow.opened_by_client:
            flow.set_up_s = time_s
        if from_client:
            if SACK in kinds:
                flow.acks.append(time_s)
            continue
        tracker = trackers.setdefault(key, TsnTracker())
        for chunk in chunks:
            new = tracker.is_new(chunk.tsn)
            again = tracker.see(chunk.tsn, time_s) is not None
            flow.arrivals.append(Arrival(time_s, chunk.sid, 0, chunk.length, new, again,
                                         chunk.tsn))
    for flow in flows.values():
        _lay_out_streams(flow)
    return list(flows.values())


def _lay_out_streams(flow: Flow) -> None:
    """Gives each chunk its byte offset in its stream: the stream's chunks in TSN order (TSNs
    taken relative to the first one captured, across a wrap of the 32-bit space), end to
    end."""
    if not flow.arrivals:
        return
    first = flow.arrivals[0].unit

    def relative(tsn: int) -> int:
        step = (tsn - first) % SEQ_SPACE
        return step - SEQ_SPACE if step >= SEQ_SPACE // 2 else step

    lengths: dict[int, dict[int, int]] = {}
    for arrival in flow.arrivals:
        lengths.setdefault(arrival.stream, {})[relative(arrival.unit)] = arrival.length
    offsets: dict[int, dict[int, int]] = {}
    for stream, by_tsn in lengths.items():
        total, placed = 0, {}
        for step in sorted(by_tsn):
            placed[step] = total
            total += by_tsn[step]
        offsets[stream] = placed
    for arrival in flow.arrivals:
        arrival.offset = offsets[arrival.stream][relative(arrival.unit)]
