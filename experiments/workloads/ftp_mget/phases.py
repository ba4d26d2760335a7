"""Where an FTP session's time went, file by file, read from the client's capture.

The session's interval (the experiment's metric) is cut into consecutive slices, one per
transfer: the listing (NLST) first, then each file. A slice ends when its transfer is complete
at the client (its 226 and its last byte both in) and the next slice starts there, so the
slices add up to the session. Inside a slice the time is cut at the instants the capture shows,
in this order:

    gap       the previous transfer's end to this one's first command (the client's own time)
    retry     its failed attempts: a data connection that did not open (the server's 425, or
              no 150 within the client's open limit and then ABOR), from the first attempt's
              first command to the last attempt's, as a user's retry would cost
    request   its commands and their replies: PASV/EPSV, SIZE, RETR, up to its first data byte
              (less the set-up below)
    setup     the data connection's handshake: the client's SYN to its ACK of the SYN-ACK, or
              the client's INIT to the COOKIE ACK's arrival; under PORT/EPRT the server's SYN
              to its ACK's arrival, or its INIT's arrival to the client's COOKIE ACK
    data      the first data byte to the last new one
    close     the last data byte to the data connection's last packet before the 226: FIN
              exchange or SHUTDOWN, SHUTDOWN-ACK, SHUTDOWN-COMPLETE
    reply     from there to the slice's end (the 226, or its last byte if that came later)

In block mode (tcp-pipelined) one data connection carries every transfer, each as blocks of a
3-byte header and at most a write's worth of data ending with its EOF block; the transfers' byte
ranges on it follow from the sizes their 150s announce and ftpd's block size, the connection's
set-up falls in the first transfer's slice and its close in none.

A transfer's attempts are its commands for the same name (RETR f, then RETR f again), each
after its own PASV/EPSV and with a data connection of its own; the slice is the transfer's, from
the first attempt's first command, its data the last attempt's. Replies answer commands in
order (a 1xx before its command's final reply; the first reply is the greeting): a transfer
ends at its last attempt's final reply, so the 226 that answers an ABOR ends none.

An instant the variant does not have (no data connection: sctp-ms, sctp-ms-cp) or that lies
outside the slice (a pipelined command sent while the previous file still streamed) is moved
to the nearest edge, so its phase is zero and the slice's sum is unchanged.

A stall is a wait of more than one round trip between two pieces of new data of a transfer
(plus two packets' serialization at the path's rate: on a slow link that is the gap between
back-to-back packets); only its part inside the transfer's data phase is kept (a pipelined
transfer's bytes can arrive, and wait, while an earlier one still holds the slice). It is
put down to what ended it: a retransmission (`timeout` when it came at least the
retransmission timer's floor after the stall began, else `fast_retransmit`), the client's
acknowledgement held back by its delayed-ack timer (`delayed_ack`), a prompt acknowledgement
the sender had to wait for because its congestion or receive window was full (`window`: new
data about a round trip later), or else `application` (the sender had nothing to send)."""
from __future__ import annotations

import bisect
import csv
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from experiments.tshark import Host
from experiments.workloads.ftp_mget.flows import Arrival, Flow, client_flows
from experiments.workloads.ftp_mget.measure import FTP_PORT, ControlChannel

PHASES = ("gap", "retry", "request", "setup", "data", "close", "reply")
STALL_CAUSES = ("timeout", "fast_retransmit", "delayed_ack", "window", "application")
TRANSFER_COMMANDS = ("NLST", "LIST", "MLSD", "RETR")
PREPARING_COMMANDS = ("PASV", "EPSV", "PORT", "EPRT", "SIZE", "REST", "TYPE", "MODE")
DELAYED_ACK_S = 0.030   # an ack later than this after the data before it was held back
WINDOW_WAIT = 1.25      # new data this many round trips after a prompt ack answered it
BYTES_150 = re.compile(r"\((\d+) bytes\)")
BLOCK_HEADER = 3        # RFC 959 block mode: descriptor byte, 16-bit count


@dataclass
class Stall:
    start_s: float
    end_s: float
    ended_by: str


@dataclass
class Slice:
    """One transfer of the session: its name, edges and phases (seconds)."""

    item: int                  # 0 for the listing, then the files in order
    name: str
    start_s: float
    end_s: float
    phases: dict[str, float]
    stalls: list[Stall] = field(default_factory=list)
    attempts: int = 1          # data connections it took (more after a retry)


@dataclass(frozen=True)
class _Transfer:
    """One transfer as the control channel shows it: its command, when its first attempt's
    first command went out and its last attempt's, its attempts' indexes among the transfer
    commands, the bytes its last 150 announced and when its last attempt's final reply (a 226)
    came (None: it did not complete)."""

    name: str
    first_s: float
    last_attempt_s: float
    attempts: tuple[int, ...]
    size: int | None
    completed_s: float | None


@dataclass(frozen=True)
class _Source:
    """Where a transfer's bytes travelled: a flow, a stream of it, a byte range."""

    flow: Flow
    stream: int
    first: int
    end: int
    own_connection: bool      # a data connection of its own (tcp, sctp-naive)
    opens_connection: bool = False   # the first transfer on a kept one (block mode)


def session_phases(pcap: Path, channel: ControlChannel, transport: str, client_ip: Host,
                   start_s: float, rtt_s: float, rto_floor_s: float,
                   whole_packets: bool = True, block_payload: int | None = None
                   ) -> list[Slice]:
    """The session's slices from `start_s` (the interval's start in the capture's clock).
    `rtt_s`: the wait that counts as a stall. `block_payload`: the most data bytes in one
    block when the transfers share one block-mode data connection."""
    flows = client_flows(pcap, transport, client_ip, whole_packets)
    transfers = _transfers(channel)
    sources = (_block_mode_sources(flows, transfers, block_payload) if block_payload
               else _sources(flows, transfers))
    slices, edge, index = [], start_s, _FlowIndex()
    for item, transfer in enumerate(transfers):
        if item >= len(sources) or transfer.size is None or transfer.completed_s is None:
            break
        source = sources[item]
        arrivals = index.of(source)
        last_data = arrivals[-1][0] if arrivals else None
        # a transfer complete before its slice could start (its bytes queued behind an
        # earlier one's lost chunk on the same stream, or the listing at E1's start) has a
        # slice of zero: its time was spent in the earlier one's
        end = max(transfer.completed_s, last_data or transfer.completed_s, edge)
        phases = _cut(edge, end, transfer, source, arrivals)
        data_from = end - phases["data"] - phases["close"] - phases["reply"]
        stalls = _within(_stalls(source, arrivals, rtt_s, rto_floor_s, index), data_from,
                         data_from + phases["data"])
        slices.append(Slice(item, transfer.name, edge, end, phases, stalls,
                            len(transfer.attempts)))
        edge = end
    return slices


def _answers(channel: ControlChannel) -> tuple[list[int | None], list[int | None]]:
    """Per command, the index in channel.replies of its final reply and of the 1xx before it
    (None: none in the capture). Replies come in the order of the commands they answer, the
    greeting first; a 1xx belongs to the oldest command still without its final reply."""
    finals: list[int | None] = [None] * len(channel.commands)
    prelims: list[int | None] = [None] * len(channel.commands)
    waiting = -1                                  # the greeting
    for n, (code, _) in enumerate(channel.replies):
        if waiting >= len(finals):
            break
        if code < 200:
            if waiting >= 0:
                prelims[waiting] = n
            continue
        if waiting >= 0:
            finals[waiting] = n
        waiting += 1
    return finals, prelims


def _transfers(channel: ControlChannel) -> list[_Transfer]:
    """The session's transfers in order, each of its attempts (the same command for the same
    name again, after its own preparing commands) gathered into one."""
    commands = channel.commands
    args = channel.command_args or [""] * len(commands)
    finals, prelims = _answers(channel)
    at = [i for i, (verb, _) in enumerate(commands) if verb in TRANSFER_COMMANDS]
    groups: list[list[int]] = []
    for n, index in enumerate(at):
        earlier = at[n - 1] if n else None
        if earlier is not None and (commands[earlier][0], args[earlier]) == \
                (commands[index][0], args[index]) and _failed(channel, finals[earlier],
                                                              prelims[earlier]):
            groups[-1].append(n)
        else:
            groups.append([n])
    out = []
    for group in groups:
        first, last = at[group[0]], at[group[-1]]
        final, prelim = finals[last], prelims[last]
        completed = (channel.replies[final][1] if final is not None
                     and channel.replies[final][0] == 226 else None)
        size = _announced(channel.reply_texts[prelim]) if prelim is not None else None
        out.append(_Transfer(commands[last][0], _first_command(commands, first, at, group[0]),
                             _first_command(commands, last, at, group[-1]), tuple(group), size,
                             completed))
    return out


def _failed(channel: ControlChannel, final: int | None, prelim: int | None) -> bool:
    """An attempt that a retry followed: refused before any 1xx (425), or never answered
    before the client gave up on it."""
    return prelim is None and (final is None or channel.replies[final][0] >= 400)


def _first_command(commands: list[tuple[str, float]], index: int, at: list[int], n: int
                   ) -> float:
    """When the first of a transfer command's preparing commands (PASV, SIZE, ...) went out:
    back from it, not past the transfer command before it (nor an ABOR)."""
    floor = at[n - 1] if n else -1
    first = index
    while first - 1 > floor and commands[first - 1][0] in PREPARING_COMMANDS:
        first -= 1
    return commands[first][1]


def _announced(text: str) -> int | None:
    counts = BYTES_150.findall(text)
    return int(counts[-1]) if counts else None


def _sources(flows: list[Flow], transfers: list[_Transfer]) -> list[_Source]:
    """A data connection per attempt in the order they were opened, a transfer's data on
    its last attempt's; with none (multistreaming), the control association's stream 1,
    transfers end to end. Only flows the capture saw opening count: the previous session's
    may still be closing when the capture starts."""
    opened = [f for f in flows if f.opened_s is not None]
    data_flows = [f for f in opened if FTP_PORT not in (f.server_port, f.client_port)]
    if data_flows:
        attempts = sum(len(t.attempts) for t in transfers)
        # an attempt of the active mode whose connection never reached the client has no
        # flow: then a flow per transfer, as the retries were not there
        lasts = ([t.attempts[-1] for t in transfers] if len(data_flows) >= attempts
                 else list(range(len(transfers))))
        return [_Source(data_flows[n], 0, 0, t.size or 0, True)
                for n, t in zip(lasts, transfers, strict=True) if n < len(data_flows)]
    control = next((f for f in opened if f.server_port == FTP_PORT), None)
    if control is None:
        return []
    out, offset = [], 0
    for transfer in transfers:
        out.append(_Source(control, 1, offset, offset + (transfer.size or 0), False))
        offset += transfer.size or 0
    return out


def _block_mode_sources(flows: list[Flow], transfers: list[_Transfer],
                        payload: int) -> list[_Source]:
    """The transfers' framed byte ranges on the one data connection, end to end; none when
    the connection's bytes do not add up to them (a framing other than ftpd's)."""
    data_flows = [f for f in flows if f.opened_s is not None
                  and FTP_PORT not in (f.server_port, f.client_port)]
    if len(data_flows) != 1:
        return []
    flow, out, offset = data_flows[0], [], 0
    for n, transfer in enumerate(transfers):
        size = transfer.size
        if size is None:
            break
        framed = size + BLOCK_HEADER * max(1, -(-size // payload))
        out.append(_Source(flow, 0, offset, offset + framed, False, opens_connection=n == 0))
        offset += framed
    received = max((a.offset + a.length for a in flow.arrivals), default=0)
    return out if received == offset else []


class _Times:
    """Capture times in capture order; `ordered` when they never go back (a capture's clock
    can, by a hair, between packets stamped on different CPUs), so that they can be bisected."""

    def __init__(self, values: list[float]) -> None:
        self.values = values
        self.ordered = all(a <= b for a, b in zip(values, values[1:], strict=False))


class _FlowIndex:
    """The arrivals that brought new bytes, per flow and stream, ordered by offset, so that a
    transfer's are found by bisection; and the stream's arrival and ack times, read once for
    all its stalls. E1's multistreamed sessions carry 100 files on one association, and a scan
    of its 75,000 chunks for each file was a fifth of the run's analysis."""

    def __init__(self) -> None:
        self._index: dict[tuple[int, int], tuple[list[int], list[tuple[int, Arrival]], int]] = {}
        self._times: dict[tuple[int, int], _Times] = {}

    def of(self, source: _Source) -> list[tuple[float, bool]]:
        """(time, whether a retransmission) of every arrival that brought new bytes of the
        transfer, in capture order."""
        offsets, new, longest = self._stream(source.flow, source.stream)
        # an arrival overlaps [first, end) when offset < end and offset + length > first, so
        # its offset is above first - longest
        low = bisect.bisect_left(offsets, source.first - longest + 1)
        high = bisect.bisect_left(offsets, source.end)
        hits = sorted((n, a) for n, a in new[low:high] if a.offset + a.length > source.first)
        return [(a.time_s, a.retransmission) for _, a in hits]

    def times(self, flow: Flow, stream: int) -> _Times:
        """The capture times of every arrival of a flow's stream."""
        key = (id(flow), stream)
        if key not in self._times:
            self._times[key] = _Times([a.time_s for a in flow.arrivals if a.stream == stream])
        return self._times[key]

    def acks(self, flow: Flow) -> _Times:
        key = (id(flow), -1)
        if key not in self._times:
            self._times[key] = _Times(flow.acks)
        return self._times[key]

    def _stream(self, flow: Flow, stream: int
                ) -> tuple[list[int], list[tuple[int, Arrival]], int]:
        key = (id(flow), stream)
        if key not in self._index:
            new = sorted(((n, a) for n, a in enumerate(flow.arrivals)
                          if a.new and a.stream == stream), key=lambda item: item[1].offset)
            self._index[key] = ([a.offset for _, a in new], new,
                                max((a.length for _, a in new), default=0))
        return self._index[key]


def _cut(start: float, end: float, transfer: _Transfer, source: _Source,
         arrivals: list[tuple[float, bool]]) -> dict[str, float]:
    flow = source.flow if source.own_connection else None
    opened = source.flow if source.own_connection or source.opens_connection else None
    instants = [transfer.first_s,
                transfer.last_attempt_s,
                opened.opened_s if opened else None,
                opened.set_up_s if opened else None,
                arrivals[0][0] if arrivals else None,
                arrivals[-1][0] if arrivals else None,
                flow.last_packet(end) if flow else None]
    edges, previous = [start], start
    for instant in instants:
        previous = min(max(instant if instant is not None else previous, previous), end)
        edges.append(previous)
    edges.append(end)
    gap, retry, to_open, setup, to_first, data, close, reply = (
        later - earlier for earlier, later in zip(edges, edges[1:], strict=False))
    return {"gap": gap, "retry": retry, "request": to_open + to_first, "setup": setup,
            "data": data, "close": close, "reply": reply}


def _stalls(source: _Source, arrivals: list[tuple[float, bool]], rtt_s: float,
            rto_floor_s: float, index: _FlowIndex) -> list[Stall]:
    out: list[Stall] = []
    for (before, _), (after, retransmission) in zip(arrivals, arrivals[1:], strict=False):
        if after - before <= rtt_s:
            continue
        out.append(Stall(before, after, _ended_by(
            retransmission, index.acks(source.flow), index.times(source.flow, source.stream),
            before, after, rtt_s, rto_floor_s)))
    return out


def _within(stalls: list[Stall], start: float, end: float) -> list[Stall]:
    """The stalls' parts inside a data phase: a pipelined transfer's bytes can arrive, and
    wait, while an earlier transfer on the same stream still holds the slice."""
    out = []
    for stall in stalls:
        clipped = Stall(max(stall.start_s, start), min(stall.end_s, end), stall.ended_by)
        if clipped.end_s > clipped.start_s:
            out.append(clipped)
    return out


def _ended_by(retransmission: bool, acks: list[float], data_times: list[float], start: float,
              end: float, rtt_s: float, rto_floor_s: float) -> str:
    """What ended a stall: a retransmission; else the client's last ack inside it, held back
    (delayed ack) or prompt and followed by new data within about a round trip (the sender
    had waited for it: its window was full); else the sender itself."""
    if retransmission:
        return "timeout" if end - start >= rto_floor_s else "fast_retransmit"
    last_ack = _last_within(acks, start, end)
    if last_ack is None:
        return "application"
    data_before = _latest_until(data_times, last_ack, start)
    if last_ack - data_before > DELAYED_ACK_S:
        return "delayed_ack"
    if end - last_ack <= WINDOW_WAIT * rtt_s:
        return "window"
    return "application"


def _last_within(times: _Times, start: float, end: float) -> float | None:
    """The last (in capture order) of the times in [start, end)."""
    if times.ordered:
        at = bisect.bisect_left(times.values, end)
        return times.values[at - 1] if at and times.values[at - 1] >= start else None
    inside = [t for t in times.values if start <= t < end]
    return inside[-1] if inside else None


def _latest_until(times: _Times, until: float, default: float) -> float:
    """The latest of the times at or before `until`, or `default`."""
    if times.ordered:
        at = bisect.bisect_right(times.values, until)
        return times.values[at - 1] if at else default
    return max((t for t in times.values if t <= until), default=default)


# -- what a run keeps ------------------------------------------------------------------------------
def run_summary(slices: list[Slice], files: int) -> dict[str, Any]:
    """runs.csv's phase columns: each phase's mean time per file (the listing's slice spread
    over the files, so the columns add up to the session's time per file), the stalls per
    file and the sum of all slices."""
    file_slices = [s for s in slices if s.item > 0]
    row: dict[str, Any] = {"phase_listing_s": sum(s.end_s - s.start_s for s in slices
                                                  if s.item == 0) / files}
    for phase in PHASES:
        row[f"phase_{phase}_s"] = sum(s.phases[phase] for s in file_slices) / files
    stalls = [stall for s in file_slices for stall in s.stalls]
    row["retries"] = sum(s.attempts - 1 for s in slices)
    row["stalls_per_file"] = len(stalls) / files
    row["stall_s_per_file"] = sum(st.end_s - st.start_s for st in stalls) / files
    row["phases_total_s"] = sum(s.end_s - s.start_s for s in slices)
    return row


PHASE_COLUMNS = ("item", "name", "start_s", "end_s", *(f"{p}_s" for p in PHASES), "stalls",
                 "stall_s", *(f"stalls_{c}" for c in STALL_CAUSES), "attempts")
STALL_COLUMNS = ("item", "start_s", "end_s", "length_s", "ended_by")


def write_csvs(run_dir: Path, slices: list[Slice], origin_s: float) -> None:
    """runs/<id>/phases.csv (a row per transfer) and stalls.csv (a row per stall); times from
    the session's start."""
    with open(run_dir / "phases.csv", "w", newline="") as out:
        writer = csv.writer(out)
        writer.writerow(PHASE_COLUMNS)
        for s in slices:
            causes = [sum(st.ended_by == c for st in s.stalls) for c in STALL_CAUSES]
            writer.writerow([s.item, s.name, _f(s.start_s - origin_s), _f(s.end_s - origin_s),
                             *(_f(s.phases[p]) for p in PHASES), len(s.stalls),
                             _f(sum(st.end_s - st.start_s for st in s.stalls)), *causes,
                             s.attempts])
    with open(run_dir / "stalls.csv", "w", newline="") as out:
        writer = csv.writer(out)
        writer.writerow(STALL_COLUMNS)
        for s in slices:
            for st in s.stalls:
                writer.writerow([s.item, _f(st.start_s - origin_s), _f(st.end_s - origin_s),
                                 _f(st.end_s - st.start_s), st.ended_by])


def read_phases(run_dir: Path) -> list[dict[str, Any]]:
    return _read(run_dir / "phases.csv")


def read_stalls(run_dir: Path) -> list[dict[str, Any]]:
    return _read(run_dir / "stalls.csv")


def _read(path: Path) -> list[dict[str, Any]]:
    """A per-run table written above, numbers parsed; a run analysed before phases existed
    has none."""
    if not path.exists():
        return []
    with open(path, newline="") as source:
        return [{k: (v if k in ("name", "ended_by") else float(v)) for k, v in row.items()}
                for row in csv.DictReader(source)]


def _f(value: float) -> str:
    return f"{value:.6f}"
