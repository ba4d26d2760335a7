"""What ping-rtt reads: each echo request paired with its reply in the client's pcap (through
experiments/tshark), and the same echoes as ping itself reported them.

The pcap's RTT of an echo is its reply's capture time minus its request's, on the client's
interface: the path's round trip and nothing of ping's own scheduling. ping's is its send time
(written into the request before the send) to the reply's receive time, so it runs slightly
above the pcap's by the send's path through the client's stack; `compare` says how far apart
they are."""
from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

ECHO_REQUEST, ECHO_REPLY = "8", "0"
FIELDS = ["frame.time_epoch", "ip.src", "ip.dst", "icmp.type", "icmp.ident", "icmp.seq"]
# echoes only: an ICMP error quotes the request it answers, whose fields would come twice
ECHO_FILTER = "icmp.type == 8 || icmp.type == 0"

_REPLY_LINE = re.compile(r"from (\S+?):? icmp_seq=(\d+) .*time=([\d.]+) ms")
_COUNTS = re.compile(r"(\d+) packets transmitted, (\d+) received")
_SUMMARY = re.compile(r"= ([\d.]+)/([\d.]+)/([\d.]+)/([\d.]+) ms")


@dataclass(frozen=True)
class Echoes:
    """One peer's echoes: how many requests went out, and the RTT of each one answered."""

    requests: int
    rtts_ms: tuple[float, ...]

    @property
    def lost(self) -> int:
        return self.requests - len(self.rtts_ms)

    @property
    def mean_ms(self) -> float | None:
        return sum(self.rtts_ms) / len(self.rtts_ms) if self.rtts_ms else None

    @property
    def max_ms(self) -> float | None:
        return max(self.rtts_ms) if self.rtts_ms else None


def pair_echoes(rows: Iterable[Sequence[str]], peer: str) -> Echoes:
    """The echoes to `peer` from rows of FIELDS: a request and a reply pair by their identifier
    and sequence number; a reply with no request before it is not counted (the request was
    sent before the capture), a repeated reply only once."""
    sent: dict[tuple[str, str], float] = {}
    rtts: dict[tuple[str, str], float] = {}
    for row in rows:
        time_s, src, dst, kind, ident, seq = (cell.split("|")[0] for cell in row[:6])
        key = (ident, seq)
        if kind == ECHO_REQUEST and dst == peer:
            sent.setdefault(key, float(time_s))
        elif kind == ECHO_REPLY and src == peer and key in sent and key not in rtts:
            rtts[key] = 1000 * (float(time_s) - sent[key])
    return Echoes(len(sent), tuple(rtts[key] for key in sent if key in rtts))


def pcap_echoes(capture: Path, peers: Sequence[str]) -> dict[str, Echoes]:
    """Each peer's echoes in a capture, read by one tshark pass."""
    from experiments.tshark import fields

    rows = fields(capture, FIELDS, ECHO_FILTER)
    return {peer: pair_echoes(rows, peer) for peer in peers}


@dataclass(frozen=True)
class PingReport:
    """What ping printed: its counts and summary, and the RTT of each reply it saw."""

    transmitted: int
    received: int
    mean_ms: float | None
    max_ms: float | None
    rtts_ms: dict[int, float]

    @property
    def lost(self) -> int:
        return self.transmitted - self.received


def read_ping(text: str) -> PingReport | None:
    """ping's output (iputils, `-n`), None when it holds no summary (ping was killed or never
    started). Its summary's mean has three decimals, each reply's line fewer."""
    counts = _COUNTS.search(text)
    if counts is None:
        return None
    summary = _SUMMARY.search(text)
    rtts = {int(m.group(2)): float(m.group(3)) for m in _REPLY_LINE.finditer(text)}
    return PingReport(int(counts.group(1)), int(counts.group(2)),
                      float(summary.group(2)) if summary else None,
                      float(summary.group(3)) if summary else None, rtts)


def disagreement(pcap: Echoes, ping: PingReport, tolerance_ms: float,
                 tolerance_share: float) -> list[str]:
    """Why the pcap and ping disagree, empty when they agree: another count of requests or of
    losses, or means further apart than `tolerance_ms` and `tolerance_share` of the mean."""
    problems = []
    if pcap.requests != ping.transmitted:
        problems.append(f"{pcap.requests} requests in the pcap, {ping.transmitted} sent by ping")
    if pcap.lost != ping.lost:
        problems.append(f"{pcap.lost} lost in the pcap, {ping.lost} by ping")
    if pcap.mean_ms is not None and ping.mean_ms is not None:
        diff = ping.mean_ms - pcap.mean_ms
        if abs(diff) > max(tolerance_ms, tolerance_share * pcap.mean_ms):
            problems.append(f"mean RTT: ping's {diff:+.3f} ms off the pcap's")
    elif (pcap.mean_ms is None) != (ping.mean_ms is None):
        problems.append("one of pcap and ping saw no reply")
    return problems
