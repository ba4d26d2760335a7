"""ping-rtt: the round-trip time of both paths of `dualpath`, by ping, measured twice.

    a capture of the client's ICMP echoes on all its interfaces (`-i any`: path 1 is
    client-eth0, path 2 client-eth1), then one `ping -c COUNT -i INTERVAL` from the client to
    the server's address on each path, side by side (the paths share no queue).

Its keys: [ping] count (20), interval_s (0.2). Points: path entry x loss (no TCP: one profile
at most). Metrics, path 1 first: the mean RTT from the pcap (each request to its reply; the
deciding one), the largest, the requests without a reply; path 2's the same (`path2_...`);
ping's own mean and losses beside them. A run whose pcap and ping disagree on either path
(another count of requests or losses, or means more than AGREEMENT_MS and AGREEMENT_SHARE
apart) is flagged."""
from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from experiments import procedure
from experiments.procedure import RunFailure
from experiments.workloads.base import Metric, Point, capture_immediate
from topology.net.dualpath import PATHS, server_address

if TYPE_CHECKING:
    from experiments.spec import Experiment, Reader
    from topology.net.base import Topology

KIND = "ping-rtt"
CAPTURE_IF = "any"        # both of the client's interfaces in one pcap
CAPTURE_FILTER = "icmp"
# ping's RTT runs from its own send (the time it writes into the request) to the reply's
# receive time: above the pcap's by the request's path through the client's stack (measured in
# the virtual-time kernel at 10 Mbit/s and 20 ms: 0.010 to 0.052 ms on the mean). Beyond
# 0.5 ms and 2% of the mean, one of the two read the wrong packets, and the run is flagged.
AGREEMENT_MS = 0.5
AGREEMENT_SHARE = 0.02
REPLY_WAIT_S = 2          # ping's -W: how long it waits for the last reply
MAX_COUNT = 10_000
INTERVAL_RANGE_S = (0.01, 10.0)


@dataclass(frozen=True)
class Settings:
    count: int = 20
    interval_s: float = 0.2


def path_columns(path: int) -> tuple[str, ...]:
    """A path's measured columns: path 1's unprefixed, path 2's as `path2_...`."""
    prefix = "" if path == 1 else f"path{path}_"
    return tuple(prefix + name for name in ("rtt_mean_ms", "rtt_max_ms", "lost",
                                            "ping_rtt_mean_ms", "ping_lost"))


class PingRtt:
    kind = KIND
    topologies = ("dualpath",)
    data_direction = {"dualpath": "path1-up"}   # the echo requests on path 1
    top_keys: dict[str, Any] = {}
    matrix_keys: dict[str, Any] = {}
    table = "ping"
    table_keys = {"count": int, "interval_s": float}
    metrics = tuple(
        Metric(prefix + name, f"path {path}: {what}")
        for path, prefix in ((1, ""), (2, "path2_"))
        for name, what in (
            ("rtt_mean_ms", "mean RTT of the answered echoes, request to reply in the "
                            "client's pcap, ms"),
            ("rtt_max_ms", "largest RTT of an answered echo in the client's pcap, ms"),
            ("lost", "echo requests without a reply in the client's pcap"),
            ("ping_rtt_mean_ms", "mean RTT as ping reported it, ms"),
            ("ping_lost", "echo requests ping saw no reply to")))
    default_metric = "rtt_mean_ms"
    point_columns = ("path", "loss", "count", "interval_s")
    run_columns = (*path_columns(1), *path_columns(2), "pcap_ping_diff_ms", "flagged")
    summary_aliases: dict[str, str] = {}
    analysis_version = 1

    # -- the experiment file -------------------------------------------------------------------
    def read(self, reader: Reader, data: dict[str, Any]) -> Settings:
        if len(data["matrix"].get("tcp_profiles", [])) > 1:
            raise reader.fail("matrix.tcp_profiles", "ping sends no TCP: name one profile at "
                                                     "most (it only sets the hosts' sysctls)")
        table = data.get("ping", {})
        settings = Settings(count=table.get("count", 20),
                            interval_s=float(table.get("interval_s", 0.2)))
        if not 1 <= settings.count <= MAX_COUNT:
            raise reader.fail("ping.count", f"1 to {MAX_COUNT} echo requests per path")
        low, high = INTERVAL_RANGE_S
        if not low <= settings.interval_s <= high:
            raise reader.fail("ping.interval_s", f"{low} s to {high} s between requests")
        return settings

    def record(self, settings: Settings) -> dict[str, Any]:
        return {"ping": {**vars(settings),
                         "targets": {f"path{k}": server_address(k) for k in PATHS},
                         "metric_source": "the client's pcap on all its interfaces: each echo "
                                          "request to its reply; ping's own output beside it",
                         "agreement": f"flagged beyond {AGREEMENT_MS} ms and "
                                      f"{AGREEMENT_SHARE:.0%} of the mean, or another count"}}

    # -- the matrix ----------------------------------------------------------------------------
    def points(self, experiment: Experiment) -> list[Point]:
        settings: Settings = experiment.settings
        profile = experiment.tcp_profiles[0]
        return [Point(f"{entry.name}_loss{loss:g}", entry.name, loss, profile, (
                    ("path", entry.name), ("loss", loss), ("count", settings.count),
                    ("interval_s", settings.interval_s)))
                for entry in experiment.network.entries for loss in experiment.losses]

    def estimate_s(self, experiment: Experiment, point: Point) -> float:
        settings: Settings = experiment.settings
        entry = experiment.network.entry(point.network)
        return 3.0 + settings.count * settings.interval_s + 2 * entry.delay_s + REPLY_WAIT_S

    # -- before the runs -----------------------------------------------------------------------
    def prepare(self, experiment: Experiment, data_root: Path) -> None:
        """Nothing to make: ping and tcpdump are the system's."""
        return None

    def order(self, experiment: Experiment, point: Point, prepared: None) -> dict[str, Any]:
        settings: Settings = experiment.settings
        return {"count": settings.count, "interval_s": settings.interval_s,
                "targets": [[k, server_address(k)] for k in PATHS]}

    # -- inside the kernel ---------------------------------------------------------------------
    def execute(self, net: Topology, run: dict[str, Any], run_dir: Path,
                record: dict[str, Any], mark: Callable[[str], None]) -> None:
        order = run["workload"]
        client = net.node("client")
        pcap_partial = Path(run["pcap"] + ".partial")
        ring_kb = procedure.capture_buffer_kb([s.get("rate_bps") for s in run["links"].values()])
        capture = procedure.launch_capture(client.popen, CAPTURE_IF, pcap_partial,
                                           run["snaplen"], CAPTURE_FILTER, ring_kb,
                                           immediate=capture_immediate())
        record["capture_mode"] = "immediate" if capture_immediate() else "block"
        pings: dict[str, Any] = {}
        try:
            procedure.await_capture(capture, CAPTURE_IF)
            mark("capture_start")
            for path, address in order["targets"]:
                argv = ping_argv(address, order["count"], order["interval_s"])
                pings[f"path{path}"] = procedure.launch_logged(
                    client.popen, argv, run_dir / f"ping-path{path}.out")
            statuses = procedure.wait_all(pings, order["count"] * order["interval_s"]
                                          + REPLY_WAIT_S + procedure.RUN_GRACE_S)
            mark("ping")
            record["ping_status"] = statuses
            failed = {name: status for name, status in statuses.items() if status not in (0, 1)}
            if failed:   # 1: some requests went unanswered, which is what loss does
                raise RunFailure("ping failed: " + "; ".join(
                    f"{name} exited {status}: {_tail(run_dir / f'ping-{name}.out')}"
                    for name, status in sorted(failed.items())))
        finally:
            for process in pings.values():
                procedure.stop(process)
            record["capture"] = procedure.stop_capture(capture)
            if pcap_partial.exists():
                os.replace(pcap_partial, run["pcap"])
                record["pcap"] = run["pcap"]
        shortfall = procedure.capture_shortfall(record["capture"])
        if shortfall:
            raise RunFailure(shortfall)

    # -- on the host ---------------------------------------------------------------------------
    def analyse(self, experiment: Experiment, run_dir: Path, record: dict[str, Any],
                capture: Path | None) -> dict[str, Any]:
        return measure(run_dir, capture)


def ping_argv(address: str, count: int, interval_s: float) -> list[str]:
    """ping with numeric output, waiting REPLY_WAIT_S for the last reply (not its default
    10 s)."""
    return ["ping", "-n", "-c", str(count), "-i", f"{interval_s:g}", "-W", str(REPLY_WAIT_S),
            address]


def _tail(path: Path, limit: int = 200) -> str:
    return path.read_text(errors="replace").strip()[-limit:] if path.exists() else "no output"


def measure(run_dir: Path, capture: Path | None) -> dict[str, Any]:
    """A run's row: each path's echoes from the pcap and from ping's output, flagged where
    they disagree (pcap_ping_diff_ms: the larger difference of the means, ping minus pcap)."""
    from experiments.workloads.ping_rtt.measure import disagreement, pcap_echoes, read_ping

    row: dict[str, Any] = {**dict.fromkeys(PingRtt.run_columns), "flagged": False, "notes": []}
    seen = pcap_echoes(capture, [server_address(k) for k in PATHS]) if capture else {}
    for k in PATHS:
        rtt_mean, rtt_max, lost, ping_mean, ping_lost = path_columns(k)
        ping_out = run_dir / f"ping-path{k}.out"
        ping = read_ping(ping_out.read_text(errors="replace")) if ping_out.exists() else None
        echoes = seen.get(server_address(k))
        if echoes is not None:
            row.update({rtt_mean: echoes.mean_ms, rtt_max: echoes.max_ms, lost: echoes.lost})
        if ping is not None:
            row.update({ping_mean: ping.mean_ms, ping_lost: ping.lost})
        if echoes is None or ping is None:
            row["notes"].append(f"path {k}: " + ("no pcap" if echoes is None else
                                                 "no summary in ping's output"))
            continue
        problems = disagreement(echoes, ping, AGREEMENT_MS, AGREEMENT_SHARE)
        if problems:
            row["flagged"] = True
            row["notes"] += [f"path {k}: {p}" for p in problems]
        if echoes.mean_ms is not None and ping.mean_ms is not None:
            diff = ping.mean_ms - echoes.mean_ms
            if row["pcap_ping_diff_ms"] is None or abs(diff) > abs(row["pcap_ping_diff_ms"]):
                row["pcap_ping_diff_ms"] = diff
    return row


WORKLOAD = PingRtt()
