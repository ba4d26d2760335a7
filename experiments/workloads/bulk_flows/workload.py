"""bulk-flows: n long-lived one-way bulk flows across the `dumbbell`, half TCP and half SCTP,
sharing its bottleneck (E3, the fairness study).

    a `bulkflow recv` on every receiver d<i>, a capture of headers at the bottleneck (the
    receiving router's core interface, after the loss), then a `bulkflow send` on every
    sender s<i>, each starting at its own planned instant (a small random offset from the
    experiment's seed) and sending for the flow duration on the kernel's clock.

Pair i carries TCP when i is odd and SCTP when even. Each sender samples its congestion state
(cwnd, ssthresh where the socket gives it, RTT, retransmissions) every `sample_ms`; each
receiver counts what arrived every `sample_ms`.

Its keys: the [flows] table (duration_s, warmup_s, stagger_s, payload_bytes, rcvbuf_bytes,
delayed_ack, sample_ms) and [matrix] stacks and sctp_stacks (the kernel's SCTP, usrsctp: both
ends of every SCTP flow, usrsctp's inside UDP). Points: bottleneck x loss x TCP profile x
stack x SCTP stack.
A stack reaches the flows through the hosts' sysctls (its timers and the kernel's switches)
and routes (initial window, RTO floor); its socket buffers do not, since the flows' windows
are the experiment's own (rcvbuf_bytes), and neither does TCP's initial RTO (a long flow's
handshake, once). Metrics, over the steady-state
window [start + warmup, start + duration] common to every flow: Jain's fairness index of the
flows' throughputs (the deciding one), SCTP's mean throughput over TCP's as a percentage
increase, bottleneck utilization (delivered payload over the bottleneck's rate), the mean TCP
and SCTP flow throughputs. The receivers' counts are checked against the capture at the
bottleneck: a disagreement beyond 1% flags the run."""
from __future__ import annotations

import csv
import math
import os
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from experiments import procedure
from experiments.procedure import RunFailure
from experiments.stacks import DEFAULT_STACK
from experiments.workloads.base import (
    KERNEL_SCTP,
    Metric,
    Point,
    capture_immediate,
    read_events,
    read_sctp_stacks,
    read_stacks,
    require_programs,
    sctp_stack_key_suffix,
    stack_key_suffix,
    stack_records,
)
from topology.net.dumbbell import dumbbell_address

if TYPE_CHECKING:
    from experiments.spec import Experiment, Reader
    from topology.net.base import Topology

KIND = "bulk-flows"
BASE_PORT = 5000
CAPTURE_IF = "right-core"            # the receiving router's side of the bottleneck
CAPTURE_NODE = "right"
AGREEMENT = 0.01                     # receivers against the pcap, relative
ACK_SLACK_S = 0.002                  # an ack's queueing and wake-ups beyond the path's delays
TCP_TIMESTAMPS_BYTES = 12            # options on every segment of a Linux connection
UDP_HEADER_BYTES = 8                 # what usrsctp's encapsulation adds to each SCTP packet
SETUP_S_PER_FLOW = 0.6               # starting a program in the kernel, on its clock
SCTP_MESSAGE_CHUNKS = 8              # an SCTP sender's message: this many full DATA chunks
CWND_COLUMNS = ("t_s", "flow", "proto", "phase", "bytes", "cwnd", "ssthresh", "srtt_ms",
                "rto_ms", "unacked", "retrans")


@dataclass(frozen=True)
class Settings:
    duration_s: float
    warmup_s: float
    stagger_s: float
    payload_bytes: int
    rcvbuf_bytes: int
    delayed_ack: bool
    sample_ms: int
    stacks: tuple[str, ...] = (DEFAULT_STACK,)
    sctp_stacks: tuple[str, ...] = (KERNEL_SCTP,)


def proto_of(pair: int) -> str:
    return "tcp" if pair % 2 else "sctp"


def jain_index(values: list[float]) -> float | None:
    """(sum x)^2 / (n sum x^2): 1 when every flow has the same share, 1/n when one has all."""
    square_sum = sum(v * v for v in values)
    if not values or square_sum == 0:
        return None
    return sum(values) ** 2 / (len(values) * square_sum)


def gain_pct(sctp: list[float], tcp: list[float]) -> float | None:
    """SCTP's mean throughput over TCP's, as a percentage increase."""
    if not sctp or not tcp or sum(tcp) == 0:
        return None
    return 100 * (sum(sctp) / len(sctp) - sum(tcp) / len(tcp)) / (sum(tcp) / len(tcp))


class BulkFlows:
    kind = KIND
    topologies = ("dumbbell",)
    data_direction = {"dumbbell": "bottleneck-up"}   # senders s<i> to receivers d<i>
    top_keys: dict[str, Any] = {}
    matrix_keys = {"stacks": list, "sctp_stacks": list}
    table = "flows"
    table_keys = {"duration_s": float, "warmup_s": float, "stagger_s": float,
                  "payload_bytes": int, "rcvbuf_bytes": int, "delayed_ack": bool,
                  "sample_ms": int}
    metrics = (
        Metric("jain_index", "Jain's fairness index of the flows' steady-state throughputs"),
        Metric("sctp_gain_pct", "SCTP's mean flow throughput over TCP's, percentage increase"),
        Metric("utilization", "payload delivered over the bottleneck's rate, steady state"),
        Metric("tcp_mbps", "mean steady-state throughput of the TCP flows, Mbit/s"),
        Metric("sctp_mbps", "mean steady-state throughput of the SCTP flows, Mbit/s"),
        Metric("tcp_timeouts", "retransmission timeouts per TCP flow (its cwnd fell to one "
                               "segment), whole flow"),
        Metric("sctp_timeouts", "retransmission timeouts per SCTP flow, whole flow"),
        Metric("tcp_needless_rtx", "TCP segments per flow that reached the bottleneck's far "
                                   "side twice: retransmitted although the first copy got "
                                   "through the lossy link"),
        Metric("sctp_needless_rtx", "SCTP DATA chunks per flow that reached the bottleneck's "
                                    "far side twice"),
        Metric("tcp_cwnd_segments", "a TCP flow's congestion window over the steady state, "
                                    "mean of its samples, in full segments"),
        Metric("sctp_cwnd_segments", "an SCTP flow's congestion window over the steady state, "
                                     "mean of its samples, in full DATA chunks"),
        Metric("tcp_segments_per_100s", "full segments of new data a TCP sender handed on "
                                        "per 100 s of the steady state"),
        Metric("sctp_segments_per_100s", "full DATA chunks of new data an SCTP sender handed "
                                         "on per 100 s of the steady state"),
    )
    default_metric = "jain_index"
    point_columns = ("bottleneck", "pairs", "loss", "profile", "stack", "sctp_stack")
    run_columns = ("jain_index", "sctp_gain_pct", "utilization", "tcp_mbps", "sctp_mbps",
                   "tcp_timeouts", "sctp_timeouts", "tcp_needless_rtx", "sctp_needless_rtx",
                   "tcp_cwnd_segments", "sctp_cwnd_segments", "tcp_segments_per_100s",
                   "sctp_segments_per_100s", "flows", "pcap_disagreement", "flagged")
    summary_aliases: dict[str, str] = {}
    analysis_version = 4   # 4: the steady state's congestion windows and segments
    simulators = ("ns-2",)  # besides the kernel: E3's own simulator (ns2.py)

    # -- the experiment file -------------------------------------------------------------------
    def read(self, reader: Reader, data: dict[str, Any]) -> Settings:
        table = reader.required(data, "flows", "")
        settings = Settings(
            duration_s=float(reader.required(table, "duration_s", "flows")),
            warmup_s=float(table.get("warmup_s", 0.0)),
            stagger_s=float(table.get("stagger_s", 1.0)),
            payload_bytes=table.get("payload_bytes", 1448),
            rcvbuf_bytes=table.get("rcvbuf_bytes", 0),
            delayed_ack=table.get("delayed_ack", True),
            sample_ms=table.get("sample_ms", 100),
            stacks=read_stacks(reader, data.get("matrix", {})),
            sctp_stacks=read_sctp_stacks(reader, data.get("matrix", {})))
        if not 1 <= settings.duration_s <= 86_400:
            raise reader.fail("flows.duration_s", "between 1 s and a day")
        if not 0 <= settings.warmup_s < settings.duration_s:
            raise reader.fail("flows.warmup_s", "at least 0 and shorter than duration_s")
        if not 0 <= settings.stagger_s <= settings.warmup_s or settings.stagger_s > 60:
            raise reader.fail("flows.stagger_s", "from 0 to warmup_s (every flow must run "
                                                 "through the whole window), at most 60 s")
        if not 536 <= settings.payload_bytes <= 8900:
            raise reader.fail("flows.payload_bytes", "from 536 to 8900 bytes")
        if settings.rcvbuf_bytes and not 2048 <= settings.rcvbuf_bytes <= 64 << 20:
            raise reader.fail("flows.rcvbuf_bytes", "0 (the kernel's) or 2 KiB to 64 MiB")
        if not 10 <= settings.sample_ms <= 10_000:
            raise reader.fail("flows.sample_ms", "from 10 to 10000 ms")
        if settings.sctp_stacks != (KERNEL_SCTP,) and settings.stacks != (DEFAULT_STACK,):
            raise reader.fail("matrix.sctp_stacks", "a stack profile's SCTP settings are the "
                                                    "kernel's sysctls, which usrsctp does not "
                                                    "read: run usrsctp with stacks = "
                                                    f"[\"{DEFAULT_STACK}\"]")
        if settings.sctp_stacks != (KERNEL_SCTP,) and data.get("sctp"):
            raise reader.fail("sctp", "the [sctp] knobs are the kernel's sysctls, which "
                                      "usrsctp does not read: drop them, or run usrsctp in "
                                      "an experiment of its own")
        return settings

    def record(self, settings: Settings) -> dict[str, Any]:
        no_delack = ("receivers' routes `quickack 1` and TCP_QUICKACK after every read; SCTP: "
                     "SCTP_DELAYED_SACK sack_freq 1") if not settings.delayed_ack else "kernel's"
        return {"stacks": stack_records(settings.stacks),
                "flows": {**vars(settings), "stacks": list(settings.stacks),
                          "sctp_stacks": list(settings.sctp_stacks),
                          "sctp_encapsulation": "kernel: SCTP over IP; usrsctp: SCTP over UDP "
                                                "port 9899 at both ends (RFC 6951), 8 bytes "
                                                "more per packet on the bottleneck",
                          "stack_applied": "the stack's sysctls (timers, the kernel's "
                                           "switches) and routes (initial window, RTO floor); "
                                           "not its socket buffers (the flows' own: "
                                           "rcvbuf_bytes) nor TCP's initial RTO",
                          "tcp_maxseg": settings.payload_bytes + TCP_TIMESTAMPS_BYTES,
                          "sctp_maxseg": settings.payload_bytes,
                          "acknowledgements": no_delack,
                          "protocols": "pair i: TCP when i is odd, SCTP when even",
                          "cwnd_source": "the senders' sockets every sample_ms (TCP_INFO; "
                                         "SCTP_STATUS, no ssthresh): the pinned kernels have no "
                                         "tracepoints (Debian's UML is built without tracing)"}}

    # -- the matrix ----------------------------------------------------------------------------
    def points(self, experiment: Experiment) -> list[Point]:
        points = []
        for entry in experiment.network.entries:
            for loss in experiment.losses:
                for profile in experiment.tcp_profiles:
                    for stack in experiment.settings.stacks:
                        for sctp_stack in experiment.settings.sctp_stacks:
                            key = (f"{entry.name}_loss{loss:g}_{entry.pairs}flows_{profile}"
                                   + stack_key_suffix(stack) + sctp_stack_key_suffix(sctp_stack))
                            points.append(Point(key, entry.name, loss, profile, (
                                ("bottleneck", entry.name), ("pairs", entry.pairs),
                                ("loss", loss), ("profile", profile), ("stack", stack),
                                ("sctp_stack", sctp_stack)), stack))
        return points

    def estimate_s(self, experiment: Experiment, point: Point) -> float:
        settings: Settings = experiment.settings
        return 10.0 + point.get("pairs") * 2 * SETUP_S_PER_FLOW + settings.duration_s \
            + settings.stagger_s

    # -- before the runs -----------------------------------------------------------------------
    def prepare(self, experiment: Experiment, data_root: Path) -> dict[str, str]:
        self._check_mtu(experiment)
        if experiment.simulator:
            return {}  # the simulator's agents stand in for the programs
        return require_programs("bulkflow")

    def _check_mtu(self, experiment: Experiment) -> None:
        from experiments.workloads.base import WorkloadError

        payload = experiment.settings.payload_bytes
        udp = UDP_HEADER_BYTES if experiment.settings.sctp_stacks != (KERNEL_SCTP,) else 0
        need = max(payload + TCP_TIMESTAMPS_BYTES + 40, payload + 48 + udp)
        if (experiment.network.mtu or 1500) < need:
            raise WorkloadError(f"{experiment.file}: [flows] payload_bytes = {payload} needs "
                                f"[network] mtu = {need} or more (TCP with timestamps: "
                                f"payload + 52; SCTP: payload + 48"
                                + (", and 8 more inside UDP on usrsctp)" if udp else ")"))

    def order(self, experiment: Experiment, point: Point, prepared: dict[str, str]
              ) -> dict[str, Any]:
        settings: Settings = experiment.settings
        return {"bulkflow": prepared.get("bulkflow"), "pairs": point.get("pairs"),
                "sctp_stack": point.get("sctp_stack"),
                "settings": vars(settings), "seed": experiment.seed}

    # -- in a simulator instead ----------------------------------------------------------------
    def check_simulated(self, reader: Reader, experiment: Experiment) -> None:
        """What the ns-2 model cannot give a run is refused before any run: a TCP profile
        without an ns-2 agent, a link that changes over a run, bursts, queues in bytes."""
        from experiments.workloads.bulk_flows import ns2

        for profile in experiment.tcp_profiles:
            if profile not in ns2.TCP_AGENTS:
                raise reader.fail("matrix.tcp_profiles", f"{profile!r} has no ns-2 agent here "
                                  f"(simulated: {', '.join(ns2.TCP_AGENTS)})")
        network = experiment.network
        if network.schedule or network.fade_s is not None or network.loss_burst is not None:
            raise reader.fail("network", "the ns-2 model shapes each link once per run: no "
                                         "schedule, trace, fades or loss bursts")
        queues = [e.queue for e in network.entries] + [network.queue, network.access.queue]
        units = {queue.unit for queue in queues if queue is not None}
        if units - {"packets"}:
            raise reader.fail("network", "the ns-2 model's DropTail queues count packets: give "
                                         "every queue in packets (\"10p\")")
        if experiment.sctp:
            raise reader.fail("sctp", "the kernel's SCTP knobs do not reach ns-2's agents")
        if not experiment.settings.rcvbuf_bytes:
            raise reader.fail("flows.rcvbuf_bytes", "the ns-2 model needs the receiver's "
                                                   "window: give rcvbuf_bytes")
        if experiment.settings.stacks != (DEFAULT_STACK,):
            raise reader.fail("matrix.stacks", "a kernel's stack profiles do not reach ns-2's "
                                               "agents: drop stacks for the simulator")
        if experiment.settings.sctp_stacks != (KERNEL_SCTP,):
            raise reader.fail("matrix.sctp_stacks", "ns-2 has its own SCTP agent: drop "
                                                    "sctp_stacks for the simulator")

    def simulate(self, simulator: str, run: dict[str, Any], run_dir: Path,
                 record: dict[str, Any]) -> None:
        from experiments.workloads.bulk_flows import ns2

        settings = Settings(**run["workload"]["settings"])
        flows = plan_flows(run["workload"]["pairs"], settings, run["id"])
        ns2.simulate(run, run_dir, record, flows, CWND_COLUMNS)

    # -- inside the kernel ---------------------------------------------------------------------
    def execute(self, net: Topology, run: dict[str, Any], run_dir: Path,
                record: dict[str, Any], mark: Callable[[str], None]) -> None:
        order = run["workload"]
        settings = Settings(**order["settings"])
        flows = plan_flows(order["pairs"], settings, run["id"])
        sctp_stack = order.get("sctp_stack") or KERNEL_SCTP
        record["sctp_stack"] = sctp_stack
        pcap_partial = Path(run["pcap"] + ".partial")
        receivers: dict[str, Any] = {}
        senders: dict[str, Any] = {}
        capture = None
        set_quick_acks(net, flows, not settings.delayed_ack)
        try:
            for flow in flows:
                argv = procedure.bulk_receiver_argv(
                    order["bulkflow"], flow["proto"], flow["address"], flow["port"],
                    receiver_options(settings, run["timeout_s"])
                    + _stack_options(flow, sctp_stack))
                receivers[flow["receiver"]] = (argv, procedure.launch_logged(
                    net.node(flow["receiver"]).popen, argv,
                    run_dir / f"receiver-{flow['receiver']}.jsonl"))
            capture = procedure.launch_capture(net.node(CAPTURE_NODE).popen, CAPTURE_IF,
                                               pcap_partial, run["snaplen"],
                                               immediate=capture_immediate())
            record["capture_mode"] = "immediate" if capture_immediate() else "block"
            for name, (argv, process) in receivers.items():
                procedure.await_ready(process, argv, run_dir / f"receiver-{name}.jsonl")
            procedure.await_capture(capture, CAPTURE_IF)
            mark("receivers_and_capture_start")
            start_at = time.monotonic() + 2.0 + SETUP_S_PER_FLOW * len(flows)
            record["flows"] = flows
            record["start_at"] = start_at
            record["realtime_minus_monotonic_s"] = time.time() - time.monotonic()
            for flow in flows:
                argv = procedure.bulk_sender_argv(
                    order["bulkflow"], flow["proto"], flow["address"], flow["port"],
                    settings.duration_s, start_at + flow["offset_s"],
                    sender_options(settings, flow["proto"], run["timeout_s"])
                    + _stack_options(flow, sctp_stack))
                senders[flow["sender"]] = procedure.launch_logged(
                    net.node(flow["sender"]).popen, argv,
                    run_dir / f"sender-{flow['sender']}.jsonl")
            statuses = procedure.wait_all(
                senders, start_at - time.monotonic() + settings.duration_s
                + settings.stagger_s + run["timeout_s"])
            mark("flows")
            statuses.update(procedure.wait_all(
                {name: process for name, (_, process) in receivers.items()}, 60))
            failed = {name: status for name, status in statuses.items() if status != 0}
            if failed:
                raise RunFailure("flows failed: " + "; ".join(
                    f"{name} exited {status}: {_error_of(run_dir, name)}"
                    for name, status in sorted(failed.items())))
            check_delivery(run_dir, flows)
            write_cwnd_trace(run_dir, flows)
            mark("verify")
        finally:
            for process in [*senders.values(), *[p for _, p in receivers.values()]]:
                procedure.stop(process)
            if capture is not None:
                record["capture"] = procedure.stop_capture(capture)
                if pcap_partial.exists():
                    os.replace(pcap_partial, run["pcap"])
                    record["pcap"] = run["pcap"]
        shortfall = procedure.capture_shortfall(record.get("capture", {}))
        if shortfall:
            raise RunFailure(shortfall)

    # -- on the host ---------------------------------------------------------------------------
    def analyse(self, experiment: Experiment, run_dir: Path, record: dict[str, Any],
                capture: Path | None) -> dict[str, Any]:
        settings: Settings = experiment.settings
        row: dict[str, Any] = {"notes": []}
        flows = record.get("flows")
        if not flows:
            return row
        window = (record["start_at"] + settings.warmup_s, record["start_at"] + settings.duration_s)
        per_flow = []
        for flow in flows:
            edges = receiver_window(receiver_samples(
                run_dir / f"receiver-{flow['receiver']}.jsonl"), window)
            counted = edges and edges[1][1] - edges[0][1]
            per_flow.append({**flow, "edges": edges, "window_bytes": counted,
                             "mbps": edges and counted * 8 / (edges[1][0] - edges[0][0]) / 1e6})
        timeouts = count_timeouts(run_dir, settings.payload_bytes)
        for flow in per_flow:
            flow["timeouts"] = timeouts.get(flow["pair"])
        if capture is not None and all(f["edges"] for f in per_flow):
            check_against_pcap(capture, per_flow, record, row)
        for proto in ("tcp", "sctp"):
            mine = [f for f in per_flow if f["proto"] == proto]
            for column, key in ((f"{proto}_timeouts", "timeouts"),
                                (f"{proto}_needless_rtx", "repeated")):
                counts = [f[key] for f in mine if f.get(key) is not None]
                row[column] = sum(counts) / len(counts) if counts and len(counts) == len(mine) \
                    else None
        congestion = steady_congestion(run_dir, window, settings.payload_bytes)
        for proto in ("tcp", "sctp"):
            mine = [congestion[f["pair"]] for f in per_flow
                    if f["proto"] == proto and f["pair"] in congestion]
            if mine:
                row[f"{proto}_cwnd_segments"] = sum(c[0] for c in mine) / len(mine)
                row[f"{proto}_segments_per_100s"] = sum(c[1] for c in mine) / len(mine)
        write_flows(run_dir, per_flow)
        rates = [f["mbps"] for f in per_flow]
        if any(rate is None for rate in rates):
            row["notes"].append("a receiver's counts do not cover the window")
            return row
        tcp = [f["mbps"] for f in per_flow if f["proto"] == "tcp"]
        sctp = [f["mbps"] for f in per_flow if f["proto"] == "sctp"]
        rate_bps = record["links"]["bottleneck-up"]["rate_bps"]
        row.update(jain_index=jain_index(rates), sctp_gain_pct=gain_pct(sctp, tcp),
                   utilization=sum(rates) * 1e6 / rate_bps, flows=len(rates),
                   tcp_mbps=sum(tcp) / len(tcp) if tcp else None,
                   sctp_mbps=sum(sctp) / len(sctp) if sctp else None)
        return row


def plan_flows(pairs: int, settings: Settings, run_id: str) -> list[dict[str, Any]]:
    """Who sends to whom over what, and each flow's start offset: drawn from the run's id,
    so a rerun of the same run starts its flows at the same instants."""
    rng = random.Random(f"stagger-{run_id}")
    return [{"pair": i, "sender": f"s{i}", "receiver": f"d{i}", "proto": proto_of(i),
             "address": dumbbell_address(f"d{i}"), "port": BASE_PORT + i,
             "offset_s": round(rng.uniform(0, settings.stagger_s), 6)}
            for i in range(1, pairs + 1)]


def set_quick_acks(net: Topology, flows: list[dict[str, Any]], quick: bool) -> None:
    """TCP without delayed acknowledgements, as far as Linux allows: the receiver's route back
    to its sender carries `quickack 1`, which acknowledges every segment (TCP_QUICKACK after
    each read, bulkflow's --no-delayed-ack, only holds while each read returns one segment).
    Set on every run, so that a run with delayed acks gets them back."""
    from topology.net.dumbbell import dumbbell_gateway
    from topology.net.node_exec import run_script

    for flow in flows:
        route = ["ip", "route", "replace", "default", "via", dumbbell_gateway(flow["receiver"])]
        run_script(net.node(flow["receiver"]), [route + (["quickack", "1"] if quick else [])])


def receiver_options(settings: Settings, timeout_s: float) -> list[str]:
    options = ["--sample-ms", str(settings.sample_ms), "--stall-timeout", str(int(timeout_s)),
               "--accept-timeout", str(int(timeout_s))]
    if settings.rcvbuf_bytes:
        options += ["--rcvbuf", str(settings.rcvbuf_bytes)]
    if not settings.delayed_ack:
        options.append("--no-delayed-ack")
    return options


def sender_options(settings: Settings, proto: str, timeout_s: float) -> list[str]:
    """The payload per packet through the maximum segment: TCP's MSS option counts the
    timestamps a Linux connection carries, SCTP's fragmentation point is the payload. The send
    buffer holds twice the receive window, so that the window, not the buffer, limits a flow
    and a flow's last bytes drain in a few round trips."""
    maxseg = settings.payload_bytes + (TCP_TIMESTAMPS_BYTES if proto == "tcp" else 0)
    options = ["--maxseg", str(maxseg), "--sample-ms", str(settings.sample_ms),
               "--stall-timeout", str(int(timeout_s))]
    if proto == "sctp":  # whole chunks: a message that is not a multiple leaves a runt
        options += ["--write-size", str(SCTP_MESSAGE_CHUNKS * settings.payload_bytes)]
    if settings.rcvbuf_bytes:
        options += ["--sndbuf", str(2 * settings.rcvbuf_bytes)]
    return options


def _stack_options(flow: dict[str, Any], sctp_stack: str) -> list[str]:
    return procedure.sctp_stack_options(sctp_stack) if flow["proto"] == "sctp" else []


def _error_of(run_dir: Path, name: str) -> str:
    role = "sender" if name.startswith("s") else "receiver"
    for event in reversed(read_events(run_dir / f"{role}-{name}.jsonl")):
        if event.get("event") == "error":
            return str(event.get("reason", ""))[:200]
    return (run_dir / f"{role}-{name}.jsonl").read_text(errors="replace")[-200:] \
        if (run_dir / f"{role}-{name}.jsonl").exists() else "no output"


def check_delivery(run_dir: Path, flows: list[dict[str, Any]]) -> None:
    """Every byte a sender wrote reached its receiver, and the sender saw it acknowledged."""
    problems = []
    for flow in flows:
        sent = next((e for e in read_events(run_dir / f"sender-{flow['sender']}.jsonl")
                     if e.get("event") == "end"), None)
        got = next((e for e in read_events(run_dir / f"receiver-{flow['receiver']}.jsonl")
                    if e.get("event") == "end"), None)
        if sent is None or got is None:
            problems.append(f"{flow['sender']}->{flow['receiver']}: no end event")
        elif sent["bytes"] != got["bytes"]:
            problems.append(f"{flow['sender']}->{flow['receiver']}: sent {sent['bytes']} bytes, "
                            f"received {got['bytes']}")
        elif sent.get("delivered_confirmed") is False:
            problems.append(f"{flow['sender']}: delivery never confirmed")
    if problems:
        raise RunFailure("; ".join(problems))


def write_cwnd_trace(run_dir: Path, flows: list[dict[str, Any]]) -> None:
    """cwnd.csv: every sender's samples of its congestion state, one row per sample."""
    with open(run_dir / "cwnd.csv", "w", newline="") as out:
        writer = csv.DictWriter(out, CWND_COLUMNS, extrasaction="ignore")
        writer.writeheader()
        for flow in flows:
            for event in read_events(run_dir / f"sender-{flow['sender']}.jsonl"):
                if event.get("event") == "sample":
                    writer.writerow({**event, "t_s": event["t"], "flow": flow["pair"],
                                     "proto": flow["proto"]})


def receiver_samples(log: Path) -> list[tuple[float, float]]:
    return sorted((e["t"], float(e["bytes"])) for e in read_events(log)
                  if e.get("event") == "sample" and "bytes" in e)


def receiver_window(samples: list[tuple[float, float]], window: tuple[float, float]
                    ) -> list[tuple[float, float]] | None:
    """A receiver's count at its first sample at or after the window's start and at its last
    at or before the window's end: [(time, bytes), (time, bytes)]. None when its samples do
    not cover the window."""
    inside = [s for s in samples if window[0] <= s[0] <= window[1]]
    if len(inside) < 2 or samples[-1][0] < window[1] - 1.0 or inside[0][0] > window[0] + 1.0:
        return None
    return [inside[0], inside[-1]]


def check_against_pcap(capture: Path, per_flow: list[dict[str, Any]], record: dict[str, Any],
                       row: dict[str, Any]) -> None:
    """The receivers' counts against what their acknowledgements said as they crossed the
    bottleneck's capture point (`AGREEMENT`). An acknowledgement reaches the capture point
    after the receiver's access link and the bottleneck's delay line on the way back (the
    capture sees the router's egress after its qdisc), plus a fraction of a millisecond of
    queueing and wake-ups: each boundary is read at the instant within that fraction where
    the pcap comes closest to the receiver's count."""
    from experiments.tshark.transport import flow_traffic

    offset = record["realtime_minus_monotonic_s"]
    traffic = flow_traffic(capture, [(dumbbell_address(f["receiver"]), f["port"], f["proto"])
                                     for f in per_flow])
    worst = 0.0
    for flow, seen in zip(per_flow, traffic, strict=True):
        flow["repeated"] = seen.repeated
        acked = seen.delivered
        back = record["links"][f"{flow['receiver']}-down"]["delay_s"] + \
            record["links"]["bottleneck-down"]["delay_s"] + offset
        if not acked:
            row["notes"].append(f"no acknowledgement of {flow['receiver']} in the pcap")
            worst = math.inf
            continue
        edges = [_closest(acked, t + back, count) for t, count in flow["edges"]]
        flow["pcap_window_bytes"] = edges[1] - edges[0]
        worst = max(worst, abs(flow["pcap_window_bytes"] - flow["window_bytes"])
                    / max(flow["window_bytes"], 1))
    row["pcap_disagreement"] = worst if math.isfinite(worst) else None
    if worst > AGREEMENT:
        row["flagged"] = True
        if math.isfinite(worst):
            row["notes"].append(f"receivers and the bottleneck pcap disagree by "
                                f"{100 * worst:.2f}% on a flow's bytes")


def _closest(acked: list[tuple[float, int]], t: float, count: float,
             slack_s: float = ACK_SLACK_S) -> float:
    """The pcap's delivered bytes at t, or within slack after it, closest to `count`; nothing
    acknowledged yet is nothing delivered (a flow still setting up when the window opens)."""
    before = [v for s, v in acked if s <= t]
    candidates = [before[-1] if before else 0] + [v for s, v in acked if t < s <= t + slack_s]
    return float(min(candidates, key=lambda v: abs(v - count)))


def count_timeouts(run_dir: Path, payload_bytes: int) -> dict[int, int]:
    """Per flow, how often its sampled cwnd fell to about one segment: what a retransmission
    timeout does to TCP and SCTP alike (a fast retransmit halves it, and neither goes below
    two segments then)."""
    one_segment = 1.5 * (payload_bytes + 52)
    falls: dict[int, int] = {}
    last: dict[int, float] = {}
    trace = run_dir / "cwnd.csv"
    if not trace.exists():
        return falls
    with trace.open(newline="") as handle:
        for row in csv.DictReader(handle):
            if not row.get("cwnd"):
                continue
            flow, cwnd = int(row["flow"]), float(row["cwnd"])
            falls.setdefault(flow, 0)
            if cwnd < one_segment <= last.get(flow, 0.0):
                falls[flow] += 1
            last[flow] = cwnd
    return falls


def steady_congestion(run_dir: Path, window: tuple[float, float], payload_bytes: int
                      ) -> dict[int, tuple[float, float]]:
    """Per flow, over the steady state (the window the throughputs are read in): its sampled
    congestion window's mean in full segments, and the segments of new data its sender handed
    on per 100 s (from the sender's byte count at the window's first and last samples), as
    E3's V-B reads them for n = 2. A flow without two samples in the window is left out."""
    trace = run_dir / "cwnd.csv"
    if not trace.exists():
        return {}
    samples: dict[int, list[tuple[float, float, float]]] = {}
    with trace.open(newline="") as handle:
        for row in csv.DictReader(handle):
            t = float(row["t_s"])
            if row.get("cwnd") and row.get("bytes") and window[0] <= t <= window[1]:
                samples.setdefault(int(row["flow"]), []).append(
                    (t, float(row["cwnd"]), float(row["bytes"])))
    out = {}
    for flow, seen in samples.items():
        if len(seen) < 2 or seen[-1][0] <= seen[0][0]:
            continue
        cwnd = sum(s[1] for s in seen) / len(seen) / payload_bytes
        sent = (seen[-1][2] - seen[0][2]) / payload_bytes
        out[flow] = (cwnd, 100.0 * sent / (seen[-1][0] - seen[0][0]))
    return out


def write_flows(run_dir: Path, per_flow: list[dict[str, Any]]) -> None:
    columns = ["pair", "sender", "receiver", "proto", "offset_s", "window_bytes",
               "pcap_window_bytes", "mbps", "timeouts", "repeated"]
    with open(run_dir / "flows.csv", "w", newline="") as out:
        writer = csv.DictWriter(out, columns, extrasaction="ignore")
        writer.writeheader()
        for flow in per_flow:
            writer.writerow({k: ("" if flow.get(k) is None else flow.get(k)) for k in columns})


WORKLOAD = BulkFlows()
