"""What each path of a two-path session carried, and how the session failed over (dualpath).

A packet's path is its source address's (the topology's address plan: on dualpath the end
hosts' path-k addresses are 10.k.x.x, and a host sends to a peer's path-k address from its
own). The counts are of the server's data as the client's interfaces received it: DATA chunks
for SCTP, segments with payload for TCP, each new or a retransmission (its TSN, or its bytes,
seen before in the same direction of the same association or connection).

Given the instant the primary path (path 1) failed, in the capture's clock, and the instant it
came back (if it did):

    failover_s        the failure to the first data on path 2 (None: none came)
    failover_gap_s    the last data that came over path 1 (what its queues still held after
                      the failure drains for a while) to that first data on path 2: what the
                      client saw of the switch
    stall_s           the longest wait for new data from the failure on: between two pieces
                      of it, or from the last to the session's last packet when the transfer
                      never got going again
    stalled_s         all the waits from the failure on that were longer than a stall (the
                      path's round trip and two packets), together: the time the failure cost
                      where it came in bursts (retransmissions to path 2 every RTO while path
                      1 was not yet declared failed)
    back_to_primary_s the return of path 1 to the first new data on it again

and, with or without a failure, the moves of new data from path 1 to path 2: every one
(`switches_to_path2`), and those made while path 1 was up (`spurious_switches`: before the
failure or after its return), and the share of new data bytes that came over path 2. "New"
is the client's view: data it had not received before. A chunk whose first copy was lost
before it reached the client (a router's queue, the link's loss) and whose retransmission came
over path 2 is new there too, so on a lossy path 1 a retransmission over path 2 is a move;
the share of bytes tells the few such chunks from new data sent over path 2."""
from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from experiments.tshark import SCTP_OPTIONS, fields, values
from experiments.tshark.transport import SeqTracker, TsnTracker

DATA_CHUNK = "0"
COLUMNS = ("data_path1", "rtx_path1", "data_path2", "rtx_path2", "path2_new_share",
           "switches_to_path2", "spurious_switches", "failover_s", "failover_gap_s",
           "stall_s", "stalled_s", "back_to_primary_s")


@dataclass(frozen=True)
class Arrival:
    """One piece of the server's data as the client received it."""

    t: float
    path: int
    size: int
    new: bool


@dataclass
class PathReading:
    arrivals: list[Arrival] = field(default_factory=list)
    last_packet_s: float | None = None


def read(pcap: Path, transport: str, server: frozenset[str],
         path_of: Callable[[str], int | None]) -> PathReading:
    """The server's data in capture order, each with its path (`server`: the server's
    addresses, `path_of`: an address's path)."""
    if transport == "tcp":
        return _tcp(pcap, server, path_of)
    return _sctp(pcap, server, path_of)


def _sctp(pcap: Path, server: frozenset[str], path_of: Callable[[str], int | None]
          ) -> PathReading:
    rows = fields(pcap, ["frame.time_epoch", "ip.src", "sctp.srcport", "sctp.dstport",
                         "sctp.chunk_type", "sctp.chunk_length", "sctp.data_tsn_raw"],
                  "sctp", SCTP_OPTIONS)
    reading, trackers = PathReading(), {}
    for time_text, src, sport, dport, kinds, lengths, tsns in rows:
        t = float(time_text)
        reading.last_packet_s = t
        path = path_of(src)
        if src not in server or path is None:
            continue
        tracker = trackers.setdefault((sport, dport), TsnTracker())
        data_lengths = [int(n) - 16 for kind, n in zip(kinds.split("|"), values(lengths),
                                                         strict=False) if kind == DATA_CHUNK]
        for tsn, size in zip(values(tsns), data_lengths, strict=False):
            reading.arrivals.append(Arrival(t, path, size, tracker.see(int(tsn), t) is None))
    return reading


def _tcp(pcap: Path, server: frozenset[str], path_of: Callable[[str], int | None]
         ) -> PathReading:
    rows = fields(pcap, ["frame.time_epoch", "ip.src", "tcp.srcport", "tcp.dstport",
                         "tcp.seq_raw", "tcp.len"], "tcp")
    reading, trackers = PathReading(), {}
    for time_text, src, sport, dport, seq, length in rows:
        t = float(time_text)
        reading.last_packet_s = t
        size, path = int(length or 0), path_of(src)
        if src not in server or path is None or size == 0:
            continue
        tracker = trackers.setdefault((sport, dport), SeqTracker())
        start = int(seq)
        reading.arrivals.append(Arrival(t, path, size, tracker.see(start, start + size, t)
                                        is None))
    return reading


def summary(reading: PathReading, failed_s: float | None = None,
            restored_s: float | None = None, wait_s: float = 0.0) -> dict[str, Any]:
    """The columns of COLUMNS; those about a failure None without one. `wait_s`: the wait
    that counts as a stall."""
    row: dict[str, Any] = dict.fromkeys(COLUMNS)
    arrivals = reading.arrivals
    for path in (1, 2):
        on = [a for a in arrivals if a.path == path]
        row[f"data_path{path}"] = sum(a.new for a in on)
        row[f"rtx_path{path}"] = sum(not a.new for a in on)
    new = [a for a in arrivals if a.new]
    total = sum(a.size for a in new)
    row["path2_new_share"] = (sum(a.size for a in new if a.path == 2) / total) if total else None
    switches = [b.t for a, b in zip(new, new[1:], strict=False) if a.path == 1 and b.path == 2]
    row["switches_to_path2"] = len(switches)
    primary_up = [t for t in switches if failed_s is None or t < failed_s
                  or (restored_s is not None and t >= restored_s)]
    row["spurious_switches"] = len(primary_up)
    if failed_s is None:
        return row
    alternate = next((a.t for a in arrivals if a.path == 2 and a.t >= failed_s), None)
    if alternate is not None:
        row["failover_s"] = alternate - failed_s
        primary = [a.t for a in arrivals if a.path == 1 and a.t <= alternate]
        if primary:
            row["failover_gap_s"] = alternate - primary[-1]
    resumed = any(a.t >= failed_s for a in new if a.path == 2) or (
        restored_s is not None and any(a.t >= restored_s for a in new if a.path == 1))
    waits = _waits(new, failed_s, None if resumed else reading.last_packet_s)
    if waits:
        row["stall_s"] = max(waits)
        row["stalled_s"] = sum(w for w in waits if w > wait_s)
    if restored_s is not None:
        back = [a.t for a in new if a.path == 1 and a.t >= restored_s]
        row["back_to_primary_s"] = back[0] - restored_s if back else None
    return row


def _waits(new: list[Arrival], failed_s: float, end_s: float | None) -> list[float]:
    """The waits between new data from the last piece before the failure on, and (`end_s`:
    the transfer never got going again) the wait from the last piece to the session's last
    packet."""
    times = [a.t for a in new]
    start = max((i for i, t in enumerate(times) if t <= failed_s), default=None)
    if start is None:
        return []
    edges = times[start:]
    if end_s is not None and end_s > edges[-1]:
        edges.append(end_s)
    return [b - a for a, b in zip(edges, edges[1:], strict=False)]


# what report_data writes per dualpath run (runs/<id>/paths.json) and the report draws;
# bumped when it is read differently
TRACE_FILE = "paths.json"
TRACE_VERSION = 1


def save_trace(reading: PathReading, failed_s: float | None, restored_s: float | None,
               path: Path) -> None:
    """Each path's new data delivered over time (bytes, cumulative, from the capture's first
    data) and its retransmissions, with the failure and the return, written whole by rename."""
    start = reading.arrivals[0].t if reading.arrivals else 0.0
    trace: dict[str, Any] = {"version": TRACE_VERSION, "start_epoch": start,
                             "failed_s": None if failed_s is None else failed_s - start,
                             "restored_s": None if restored_s is None else restored_s - start}
    for k in (1, 2):
        total, new, rtx = 0, [], []
        for a in reading.arrivals:
            if a.path != k:
                continue
            if a.new:
                total += a.size
                new.append([round(a.t - start, 6), total])
            else:
                rtx.append(round(a.t - start, 6))
        trace[f"path{k}"] = {"new": new, "retransmissions": rtx}
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(trace))
    tmp.replace(path)


def load_trace(path: Path) -> dict[str, Any]:
    trace = json.loads(path.read_text())
    if trace.get("version") != TRACE_VERSION:
        raise ValueError(f"{path} is of another version than this reading's ({TRACE_VERSION})")
    return trace
