"""bulk-flows in ns-2.35, the simulator E3's study ran: the same dumbbell, flows, start instants
and steady-state window as a kernel run, with ns-2's agents in place of the kernel's stacks.

A run writes what a kernel run's programs write, so the workload's analysis reads both alike:
`receiver-d<i>.jsonl` (each receiver's in-order payload every `sample_ms`, from the packets
that reached it), `cwnd.csv` (each sender's congestion window and the new data it had handed
on, every `sample_ms`) and the record's `flows` and `start_at`. Its clock is the simulator's.

The agents, as E3 states its hosts (STUDIES.md) and otherwise ns-2.35's own defaults
(tcl/lib/ns-default.tcl of the Debian source package ns2 2.35+dfsg-5), all recorded per run:

    TCP        Agent/TCP/Sack1 (tcp-sack-reno), Agent/TCP/Newreno (tcp-newreno), each with
               a sink of its kind that acknowledges every segment (Agent/TCPSink[/Sack1]) or,
               with delayed_ack, Agent/TCPSink/DelAck and its Sack1 form
    SCTP       Agent/SCTP at both ends, one outbound stream, useDelayedSacks_ 0 (or 1)
    payload    TCP packetSize_ and SCTP dataChunkSize_ = payload_bytes; mtu_ the link's MTU
    window     TCP window_ = rcvbuf_bytes / payload_bytes segments (the receiver's window);
               SCTP initialRwnd_ = rcvbuf_bytes
    ssthresh   TCP: TcpAgent::reset() sets ssthresh_ to window_ (tcp/tcp.cc); SCTP:
               initialSsthresh_ = rcvbuf_bytes. Both: initial ssthresh = rwnd, as E3 states
    fast rtx   SCTP fastRtxTrigger_ 4: E3's V-D names four missing reports, RFC 2960's rule
               (section 7.2.4); ns-2.35's default, 3, is RFC 4960's
    loss       an ErrorModel (unit pkt, uniform, its own RNG seeded from the run) on each
               bottleneck direction whose loss is above 0
    queue      DropTail, queue-limit in packets, on every link, as the experiment gives them
"""
from __future__ import annotations

import csv
import json
import subprocess
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

KIND = "ns-2"
TCP_AGENTS = {
    # profile: (sender, sink that acks every segment, sink with delayed acks)
    "tcp-sack-reno": ("Agent/TCP/Sack1", "Agent/TCPSink/Sack1", "Agent/TCPSink/Sack1/DelAck"),
    "tcp-newreno": ("Agent/TCP/Newreno", "Agent/TCPSink", "Agent/TCPSink/DelAck"),
}
SCTP_FAST_RTX_TRIGGER = 4
START_AT_S = 1.0              # the flows' common start, on the simulator's clock
DRAIN_S = 5.0                 # simulated past the last flow's end
# ns-2's one-way TCP numbers its SYN 0 (syn_ true) and its data from 1; SCTP's first TSN is 1
FIRST_DATA = 1
TCP_HEADER_BYTES = 40         # ns-2's tcpip_base_hdr_size_: a data packet is payload + 40


class SimulationError(RuntimeError):
    """ns-2 could not run or its output cannot be read; the message says which."""


@dataclass(frozen=True)
class Node:
    name: str
    index: int                # ns-2's node id: the order the script creates nodes in


def nodes(pairs: int) -> dict[str, Node]:
    names = ["left", "right"] + [n for i in range(1, pairs + 1) for n in (f"s{i}", f"d{i}")]
    return {name: Node(name, i) for i, name in enumerate(names)}


def directed_links(pairs: int) -> list[tuple[str, str, str]]:
    """(link name in the run's `links`, from node, to node), "up" toward the receivers."""
    out = [("bottleneck-up", "left", "right"), ("bottleneck-down", "right", "left")]
    for i in range(1, pairs + 1):
        out += [(f"s{i}-up", f"s{i}", "left"), (f"s{i}-down", "left", f"s{i}"),
                (f"d{i}-up", "right", f"d{i}"), (f"d{i}-down", f"d{i}", "right")]
    return out


def run_seed(run_id: str, seed: int) -> int:
    """The loss generator's seed: fixed by the run's id, so a rerun loses the same packets."""
    return zlib.crc32(f"{seed}-{run_id}".encode()) % 2_147_483_646 + 1


def agent_settings(settings: dict[str, Any], profile: str, mtu: int) -> dict[str, Any]:
    """Every agent parameter the script sets, by agent, as meta.json records it."""
    payload, rcvbuf = settings["payload_bytes"], settings["rcvbuf_bytes"]
    sender, quick_sink, delayed_sink = TCP_AGENTS[profile]
    tcp: dict[str, Any] = {"agent": sender, "packetSize_": payload,
                           "sink": delayed_sink if settings["delayed_ack"] else quick_sink}
    if rcvbuf:
        tcp["window_"] = max(1, rcvbuf // payload)
    sctp: dict[str, Any] = {"agent": "Agent/SCTP", "mtu_": mtu, "dataChunkSize_": payload,
                            "numOutStreams_": 1,
                            "useDelayedSacks_": int(bool(settings["delayed_ack"])),
                            "fastRtxTrigger_": SCTP_FAST_RTX_TRIGGER}
    if rcvbuf:
        sctp.update(initialRwnd_=rcvbuf, initialSsthresh_=rcvbuf)
    return {"tcp": tcp, "sctp": sctp}


def script(run: dict[str, Any], flows: list[dict[str, Any]], agents: dict[str, Any],
           files: dict[str, Path], seed: int) -> str:
    """The Tcl program of one run."""
    settings = run["workload"]["settings"]
    pairs = run["workload"]["pairs"]
    placed = nodes(pairs)
    dt = settings["sample_ms"] / 1000
    end = START_AT_S + settings["stagger_s"] + settings["duration_s"] + DRAIN_S
    lines = ["set ns [new Simulator]", "Trace set show_sctphdr_ 1",
             f"set tr [open {{{files['trace']}}} w]",
             f"set tcpcw [open {{{files['tcp_cwnd']}}} w]",
             "set rng [new RNG]", f"$rng seed {seed}"]
    lines += [f"set n({node.name}) [$ns node]" for node in placed.values()]
    for name, a, b in directed_links(pairs):
        shape = run["links"][name]
        if shape["queue"]["unit"] != "packets":
            raise SimulationError(f"{name}: ns-2's DropTail here counts packets, not "
                                  f"{shape['queue']['unit']}")
        lines += [f"$ns simplex-link $n({a}) $n({b}) {shape['rate_bps']:.0f}b "
                  f"{shape['delay_s'] * 1000:.6f}ms DropTail",
                  f"$ns queue-limit $n({a}) $n({b}) {shape['queue']['limit']}"]
        if shape["loss"] > 0:
            lines += [f"set em({name}) [new ErrorModel]", f"$em({name}) set rate_ {shape['loss']}",
                      f"$em({name}) unit pkt", f"set u({name}) [new RandomVariable/Uniform]",
                      f"$u({name}) use-rng $rng", f"$em({name}) ranvar $u({name})",
                      f"$em({name}) drop-target [new Agent/Null]",
                      f"$ns lossmodel $em({name}) $n({a}) $n({b})"]
    for flow in flows:
        i, sender, receiver = flow["pair"], flow["sender"], flow["receiver"]
        lines += [f"$ns trace-queue $n({sender}) $n(left) $tr",
                  f"$ns trace-queue $n(right) $n({receiver}) $tr"]
        if flow["proto"] == "tcp":
            tcp = agents["tcp"]
            lines += [f"set snd({i}) [new {tcp['agent']}]", f"set rcv({i}) [new {tcp['sink']}]"]
            lines += [f"$snd({i}) set {k} {v}" for k, v in tcp.items() if k.endswith("_")]
        else:
            sctp = agents["sctp"]
            lines += [f"set snd({i}) [new {sctp['agent']}]", f"set rcv({i}) [new {sctp['agent']}]"]
            for end_name in ("snd", "rcv"):
                lines += [f"${end_name}({i}) set {k} {v}" for k, v in sctp.items()
                          if k.endswith("_")]
            lines += [f"set cw({i}) [open {{{files['sctp_cwnd']}.{i}}} w]",
                      f"$snd({i}) set trace_all_ 0", f"$snd({i}) trace cwnd_",
                      f"$snd({i}) attach $cw({i})"]
        lines += [f"$snd({i}) set fid_ {i}", f"$ns attach-agent $n({sender}) $snd({i})",
                  f"$ns attach-agent $n({receiver}) $rcv({i})", f"$ns connect $snd({i}) $rcv({i})",
                  f"set app({i}) [new Application/FTP]", f"$app({i}) attach-agent $snd({i})",
                  f"$ns at {START_AT_S + flow['offset_s']:.6f} \"$app({i}) start\"",
                  f"$ns at {START_AT_S + flow['offset_s'] + settings['duration_s']:.6f} "
                  f"\"$app({i}) stop\""]
    tcp_flows = " ".join(str(f["pair"]) for f in flows if f["proto"] == "tcp")
    lines += [
        "proc sample {} {",
        "  global ns tcpcw snd",
        "  set now [$ns now]",
        f"  foreach i {{{tcp_flows}}} {{",
        "    puts $tcpcw \"$now $i [$snd($i) set cwnd_] [$snd($i) set ssthresh_] "
        "[$snd($i) set maxseq_]\"",
        "  }",
        f"  $ns at [expr $now + {dt}] sample",
        "}",
        f"$ns at {START_AT_S} sample",
        f"$ns at {end:.6f} \"flush $tr; close $tr; flush $tcpcw; close $tcpcw; exit 0\"",
        "$ns run"]
    return "\n".join(lines) + "\n"


def simulate(run: dict[str, Any], run_dir: Path, record: dict[str, Any],
             flows: list[dict[str, Any]], cwnd_columns: tuple[str, ...]) -> None:
    """One run in ns-2: its script, the simulation, and the files the analysis reads
    (`cwnd_columns`: those of the kernel runs' cwnd.csv)."""
    timeout_s = run["timeout_s"]
    settings = run["workload"]["settings"]
    profile = run["params"]["profile"]
    agents = agent_settings(settings, profile, run["topology"].get("mtu") or 1500)
    files = {"trace": run_dir / "ns2-links.tr", "tcp_cwnd": run_dir / "ns2-tcp-cwnd.tr",
             "sctp_cwnd": run_dir / "ns2-sctp-cwnd.tr"}
    seed = run_seed(run["id"], run["workload"].get("seed", 1))
    program = run_dir / "run.tcl"
    program.write_text(script(run, flows, agents, files, seed))
    record.update(start_at=START_AT_S, flows=flows)
    record["simulator"] = {"name": KIND, "agents": agents, "loss_seed": seed,
                           "script": program.name}
    try:
        done = subprocess.run(["ns", program.name], cwd=run_dir, capture_output=True,
                              text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        raise SimulationError(f"ns-2 ran past the run's limit of {timeout_s:g} s") from None
    if done.returncode != 0:
        raise SimulationError(f"ns exited {done.returncode}: {done.stderr.strip()[-400:]}")
    try:
        delivered, sent = read_links(files["trace"], flows, settings)
        write_receivers(run_dir, flows, delivered, settings)
        write_cwnd(run_dir, flows, settings, sent, files, cwnd_columns)
    finally:
        files["trace"].unlink(missing_ok=True)   # hundreds of MB at 11 Mbit/s: read, not kept


@dataclass
class FlowCounts:
    """One flow's packets as they crossed its two traced links."""
    next_in_order: int = FIRST_DATA
    arrived: set[int] = field(default_factory=set)
    highest_sent: int = FIRST_DATA - 1
    repeated: int = 0

    def arrive(self, number: int) -> None:
        if number in self.arrived or number < self.next_in_order:
            self.repeated += 1
            return
        self.arrived.add(number)
        while self.next_in_order in self.arrived:
            self.arrived.discard(self.next_in_order)
            self.next_in_order += 1

    def in_order(self) -> int:
        return self.next_in_order - FIRST_DATA

    def sent(self) -> int:
        return self.highest_sent - FIRST_DATA + 1


def read_links(trace: Path, flows: list[dict[str, Any]], settings: dict[str, Any]
               ) -> tuple[dict[int, list[tuple[float, int]]], dict[int, list[tuple[float, int]]]]:
    """Per flow, every `sample_ms`: the segments delivered in order to its receiver and the
    highest segment its sender had put on its access link. ns-2 writes events in time order."""
    placed = nodes(len(flows))
    by_sender = {placed[f["sender"]].index: f["pair"] for f in flows}
    by_receiver = {placed[f["receiver"]].index: f["pair"] for f in flows}
    counts = {f["pair"]: FlowCounts() for f in flows}
    dt = settings["sample_ms"] / 1000
    tick = START_AT_S
    delivered: dict[int, list[tuple[float, int]]] = {f["pair"]: [] for f in flows}
    sent: dict[int, list[tuple[float, int]]] = {f["pair"]: [] for f in flows}

    def sample(at: float) -> None:
        for pair, flow in counts.items():
            delivered[pair].append((round(at, 6), flow.in_order()))
            sent[pair].append((round(at, 6), flow.sent()))
    if not trace.exists():
        raise SimulationError(f"{trace.name}: ns-2 wrote no trace")
    with trace.open() as lines:
        for line in lines:
            fields = line.split()
            if len(fields) < 12:
                continue
            event, t = fields[0], float(fields[1])
            while t >= tick:
                sample(tick)
                tick += dt
            number = data_number(fields)
            if number is None:
                continue
            if event == "+" and int(fields[2]) in by_sender:
                flow = counts[by_sender[int(fields[2])]]
                flow.highest_sent = max(flow.highest_sent, number)
            elif event == "r" and int(fields[3]) in by_receiver:
                counts[by_receiver[int(fields[3])]].arrive(number)
    sample(tick)
    for flow in flows:
        flow["repeated"] = counts[flow["pair"]].repeated
    return delivered, sent


def data_number(fields: list[str]) -> int | None:
    """A data packet's segment number (TCP) or TSN (SCTP DATA chunk); None for anything else:
    ns-2's one-way TCP sends a header-only SYN first, SCTP its handshake and heartbeats."""
    kind, size, flags = fields[4], int(fields[5]), fields[6]
    if kind == "tcp" and size > TCP_HEADER_BYTES:
        return int(fields[10])
    if kind == "sctp" and flags.endswith("D") and len(fields) >= 13:
        return int(fields[11])
    return None


def write_receivers(run_dir: Path, flows: list[dict[str, Any]],
                    delivered: dict[int, list[tuple[float, int]]],
                    settings: dict[str, Any]) -> None:
    payload = settings["payload_bytes"]
    for flow in flows:
        with open(run_dir / f"receiver-{flow['receiver']}.jsonl", "w") as out:
            for t, segments in delivered[flow["pair"]]:
                out.write(json.dumps({"event": "sample", "t": t, "bytes": segments * payload})
                          + "\n")


def write_cwnd(run_dir: Path, flows: list[dict[str, Any]], settings: dict[str, Any],
               sent: dict[int, list[tuple[float, int]]], files: dict[str, Path],
               columns: tuple[str, ...]) -> None:
    """cwnd.csv in the kernel runs' columns, in bytes: TCP's window as the script sampled it,
    SCTP's as its trace of changes stood at each sample."""
    payload = settings["payload_bytes"]
    tcp = read_tcp_cwnd(files["tcp_cwnd"])
    # a sender samples itself while it sends: an idle agent's window after its flow's end
    # (ns-2 restarts slow start after idle) is no timeout
    ends = {f["pair"]: START_AT_S + f["offset_s"] + settings["duration_s"] for f in flows}
    with open(run_dir / "cwnd.csv", "w", newline="") as out:
        writer = csv.DictWriter(out, columns, extrasaction="ignore")
        writer.writeheader()
        for flow in flows:
            pair = flow["pair"]
            if flow["proto"] == "tcp":
                for t, cwnd, ssthresh, maxseq in tcp.get(pair, []):
                    if t > ends[pair]:
                        break
                    writer.writerow({"t_s": t, "flow": pair, "proto": "tcp",
                                     "cwnd": cwnd * payload, "ssthresh": ssthresh * payload,
                                     "bytes": max(0, maxseq) * payload})
                continue
            changes = read_sctp_cwnd(Path(f"{files['sctp_cwnd']}.{pair}"))
            at = 0
            for t, segments in sent[pair]:
                if t > ends[pair]:
                    break
                while at + 1 < len(changes) and changes[at + 1][0] <= t:
                    at += 1
                if changes and changes[at][0] <= t:
                    writer.writerow({"t_s": t, "flow": pair, "proto": "sctp",
                                     "cwnd": changes[at][1], "ssthresh": changes[at][2],
                                     "bytes": segments * payload})


def read_tcp_cwnd(path: Path) -> dict[int, list[tuple[float, float, float, int]]]:
    out: dict[int, list[tuple[float, float, float, int]]] = {}
    if not path.exists():
        return out
    for line in path.read_text().splitlines():
        t, flow, cwnd, ssthresh, maxseq = line.split()
        out.setdefault(int(flow), []).append((float(t), float(cwnd), float(ssthresh),
                                              int(maxseq)))
    return out


def read_sctp_cwnd(path: Path) -> list[tuple[float, float, float]]:
    """(time, cwnd, ssthresh) in bytes from an SCTP agent's trace of its cwnd_, e.g.
    `time: 2.23975  saddr: 1 ... cwnd: 5868 pba: 0 out: 4464 ssthresh: 65536 peerRwnd: 61072`.
    ns-2.35 writes stray bytes from an unset buffer before most lines' `time:`: each line is
    read from there."""
    out = []
    if not path.exists():
        return out
    for line in path.read_text(errors="replace").splitlines():
        fields = line[max(0, line.find("time:")):].split()
        if "cwnd:" not in fields or fields[:1] != ["time:"]:
            continue
        value = {fields[i][:-1]: fields[i + 1] for i in range(len(fields) - 1)
                 if fields[i].endswith(":")}
        out.append((float(value["time"]), float(value["cwnd"]), float(value["ssthresh"])))
    return out
