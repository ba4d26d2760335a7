"""What the two ends of each run saw, from its client pcap and its server pcap (an experiment run
with `[run] capture_at = ["client", "server"]`): per direction and kind of packet, how many one
end sent and how many reached the other (what the path dropped, apart from what an end
ignored), and per SCTP association its handshake at both ends, with the answering end's first
RTT sample.

That sample is the time from the answerer's INIT ACK to the COOKIE ECHO's arrival: FreeBSD's
SCTP takes it from the cookie's timestamp (usrsctp 0.9.5.0, sctp_input.c,
sctp_process_cookie_new; KAME's sctp_input.c 1.5 of 2002 as well), and a COOKIE ECHO that the
opener had to send again (its first lost) makes it the opener's timeout, not a round trip.
Linux takes no RTT sample from the handshake. The RTO it gives, SRTT + 4 RTTVAR with RTTVAR =
SRTT / 2, is three times the sample (within the stack's RTO.Min and RTO.Max).

    testbed ends EXP    ->  results/EXP/report/both-ends.csv, handshakes.csv

Reads result files only: runs.csv, meta.json and the pcaps."""
from __future__ import annotations

import csv
from collections import Counter
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

from experiments.tshark.pcap_records import Unread, readable_frame_records
from topology.net import topology_class

from .results import ResultError, ResultSet

SCTP, TCP = 132, 6
CHUNK_NAMES = {0: "DATA", 1: "INIT", 2: "INIT ACK", 3: "SACK", 4: "HEARTBEAT",
               5: "HEARTBEAT ACK", 6: "ABORT", 7: "SHUTDOWN", 8: "SHUTDOWN ACK", 9: "ERROR",
               10: "COOKIE ECHO", 11: "COOKIE ACK", 14: "SHUTDOWN COMPLETE"}
_SYN, _FIN, _RST, _ACK = 0x02, 0x01, 0x04, 0x10


@dataclass(frozen=True)
class Packet:
    time_s: float
    source: str
    destination: str
    ports: tuple[int, int]     # (source, destination)
    kind: str                  # the SCTP packet's first chunk, or the TCP segment's role


@dataclass
class Crossing:
    """One direction of a run, one kind of packet: sent at one end, arrived at the other."""

    run_id: str
    direction: str             # "server to client" or "client to server"
    kind: str
    sent: int
    arrived: int


@dataclass
class Handshake:
    """One SCTP association's handshake as both ends captured it (times from the opener's
    first INIT, in seconds)."""

    run_id: str
    opener: str                # "client" or "server" (active FTP)
    ports: str                 # opener's port -> answerer's
    inits_sent: int
    inits_arrived: int
    init_acks_sent: int
    init_acks_arrived: int
    cookie_echoes_sent: int
    cookie_echoes_arrived: int
    cookie_acks_sent: int
    cookie_acks_arrived: int
    established_s: float | None    # the first COOKIE ACK's arrival at the opener
    answerer_sample_s: float | None  # the answerer's INIT ACK to the COOKIE ECHO's arrival


def packets(pcap: Path) -> list[Packet]:
    """The pcap's TCP and SCTP packets (SCTP inside UDP on RFC 6951's port too), in capture
    order; a frame cut short still has its first chunk's type or its TCP flags."""
    out = []
    for protocol in (SCTP, TCP):
        try:
            for _, (stamp, data, ip, payload, ip_end, captured) in readable_frame_records(
                    pcap, protocol):
                out.append(Packet(float(stamp), _address(data, ip + 12), _address(data, ip + 16),
                                  (int.from_bytes(data[payload:payload + 2], "big"),
                                   int.from_bytes(data[payload + 2:payload + 4], "big")),
                                  _kind(protocol, data, payload, ip_end, captured)))
        except Unread as unread:
            raise ResultError(f"{pcap}: not a pcap of Ethernet frames this reader reads"
                              ) from unread
    return sorted(out, key=lambda p: p.time_s)


def _address(data: bytes, at: int) -> str:
    return ".".join(str(b) for b in data[at:at + 4])


def _kind(protocol: int, data: bytes, payload: int, ip_end: int, captured: int) -> str:
    if protocol == SCTP:
        chunk = data[payload + 12] if payload + 12 < captured else -1
        return CHUNK_NAMES.get(chunk, f"chunk {chunk}")
    flags = data[payload + 13]
    if flags & _RST:
        return "RST"
    if flags & _SYN:
        return "SYN-ACK" if flags & _ACK else "SYN"
    if flags & _FIN:
        return "FIN"
    return "data" if ip_end > payload + (data[payload + 12] >> 4) * 4 else "ack"


def crossings(run_id: str, client: list[Packet], server: list[Packet],
              client_addresses: frozenset[str]) -> list[Crossing]:
    out = []
    for direction, at_source, at_sink, from_client in (
            ("server to client", server, client, False),
            ("client to server", client, server, True)):
        sent = Counter(p.kind for p in at_source if (p.source in client_addresses) == from_client)
        arrived = Counter(p.kind for p in at_sink if (p.source in client_addresses) == from_client)
        out += [Crossing(run_id, direction, kind, sent[kind], arrived[kind])
                for kind in sorted(sent | arrived, key=lambda k: -sent[k])]
    return out


def handshakes(run_id: str, client: list[Packet], server: list[Packet],
               client_addresses: frozenset[str]) -> list[Handshake]:
    """Every SCTP association a side opened with an INIT, in the order they were opened."""
    out = []
    ends = {True: client, False: server}      # by whether the end is the client
    opened = [p for p in client + server if p.kind == "INIT"]
    seen: set[tuple[int, int]] = set()
    for init in sorted(opened, key=lambda p: p.time_s):
        if init.ports in seen:
            continue
        seen.add(init.ports)
        by_client = init.source in client_addresses
        at_opener, at_answerer = ends[by_client], ends[not by_client]
        forward, back = init.ports, init.ports[::-1]
        inits = _times(at_opener, forward, "INIT")
        start = inits[0] if inits else init.time_s
        acks_at_opener = _times(at_opener, back, "COOKIE ACK")
        init_acks_sent = _times(at_answerer, back, "INIT ACK")
        echoes_arrived = _times(at_answerer, forward, "COOKIE ECHO")
        # the INIT ACK whose cookie the first COOKIE ECHO to arrive carries: the last before it
        before_echo = [t for t in init_acks_sent if echoes_arrived and t <= echoes_arrived[0]]
        out.append(Handshake(
            run_id, "client" if by_client else "server", f"{forward[0]} -> {forward[1]}",
            len(inits), len(_times(at_answerer, forward, "INIT")),
            len(init_acks_sent), len(_times(at_opener, back, "INIT ACK")),
            len(_times(at_opener, forward, "COOKIE ECHO")), len(echoes_arrived),
            len(_times(at_answerer, back, "COOKIE ACK")), len(acks_at_opener),
            acks_at_opener[0] - start if acks_at_opener else None,
            echoes_arrived[0] - before_echo[-1] if before_echo else None))
    return out


def _times(found: list[Packet], ports: tuple[int, int], kind: str) -> list[float]:
    return [p.time_s for p in found if p.ports == ports and p.kind == kind]


def client_addresses(result_set: ResultSet) -> frozenset[str]:
    topology = topology_class(result_set.experiment.get("topology", "path"))
    return frozenset((topology.client_ip, *topology.client_also))


def server_pcap(result_set: ResultSet, run: dict[str, Any]) -> Path:
    return result_set.root / "pcaps" / f"{run['run_id']}.server.pcap"


def read(result_set: ResultSet) -> tuple[list[Crossing], list[Handshake]]:
    """Both tables over every run that has both pcaps; ResultError if none has."""
    if "server" not in result_set.experiment.get("capture_at", ["client"]):
        raise ResultError(f"{result_set.root}: its runs captured only at the client; run the "
                          'experiment with [run] capture_at = ["client", "server"]')
    clients = client_addresses(result_set)
    all_crossings: list[Crossing] = []
    all_handshakes: list[Handshake] = []
    for run in result_set.runs:
        if not run.get("pcap"):
            continue
        pcap, at_server = result_set.root / str(run["pcap"]), server_pcap(result_set, run)
        if not pcap.is_file() or not at_server.is_file():
            continue
        client, server = packets(pcap), packets(at_server)
        all_crossings += crossings(run["run_id"], client, server, clients)
        all_handshakes += handshakes(run["run_id"], client, server, clients)
    if not all_crossings:
        raise ResultError(f"{result_set.root}: no run with both its pcaps")
    return all_crossings, all_handshakes


def write(rows: list[Any], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    kind = type(rows[0]) if rows else Crossing
    with path.open("w", newline="") as out:
        writer = csv.DictWriter(out, [f.name for f in fields(kind)])
        writer.writeheader()
        writer.writerows(asdict(row) for row in rows)


def summary(all_crossings: list[Crossing], all_handshakes: list[Handshake]) -> list[str]:
    """A few lines: the share lost per direction and kind, the longest handshakes, and how
    far the answerers' first samples reach."""
    lines = []
    totals: dict[tuple[str, str], list[int]] = {}
    for c in all_crossings:
        total = totals.setdefault((c.direction, c.kind), [0, 0])
        total[0] += c.sent
        total[1] += c.arrived
    for (direction, kind), (sent, arrived) in sorted(totals.items(), key=lambda i: -i[1][0]):
        share = f"{1 - arrived / sent:6.1%} lost" if sent else "  none sent"
        lines.append(f"{direction:17s} {kind:18s} sent {sent:8d}  arrived {arrived:8d}  {share}")
    slow = sorted((h for h in all_handshakes if h.established_s is not None),
                  key=lambda h: -(h.established_s or 0))[:3]
    lines.append(f"{len(all_handshakes)} SCTP handshakes; the longest: " + ", ".join(
        f"{h.established_s:.1f} s ({h.run_id}, {h.ports})" for h in slow))
    samples = [h.answerer_sample_s for h in all_handshakes if h.answerer_sample_s is not None]
    if samples:
        inflated = [s for s in samples if s > 2 * min(samples)]
        lines.append(f"answerers' first RTT samples: {len(inflated)} of {len(samples)} over twice "
                     f"the least ({min(samples) * 1000:.0f} ms), the largest {max(samples):.2f} s")
    return lines
