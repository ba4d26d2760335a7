"""The experiment's tidy outputs, rebuilt from the run records and their analyses alone:
runs.csv (one row per run), summary.csv (one row per point: every metric's mean and interval),
matrix.json (the expanded matrix, so that a report never reads the experiment file again) and
meta.json."""
from __future__ import annotations

import csv
import json
import os
import platform
import subprocess
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from experiments import stats
from experiments.onhost.analyze import analyses
from experiments.onhost.ledger import Ledger
from experiments.spec import Experiment
from experiments.stacks import COMMON_SYSCTLS, SCTP_KNOBS, TCP_PROFILES
from topology.kernel.base import REPO_ROOT

RUN_TAIL = ["rate_bps", "delay_s", "queue", "queue_drops_data", "queue_drops_other",
            "loss_drops_data", "loss_drops_other", "pcap", "pcap_bytes", "host", "started", "ended",
            "reasons", "notes"]
SUMMARY_STATS = ("mean", "sd", "ci90_half", "ci90_rel", "ci_half")
SUMMARY_TAIL = ["metric", "status", "runs_failed", "runs_flagged"]


def run_columns(experiment: Experiment) -> list[str]:
    workload = experiment.kind
    metrics = [m.name for m in workload.metrics if m.name not in workload.run_columns]
    return ["run_id", *workload.point_columns, "rep", "status", *workload.run_columns,
            *metrics, *RUN_TAIL]


def summary_columns(experiment: Experiment) -> list[str]:
    workload = experiment.kind
    per_metric = [f"{m.name}_{stat}" for m in workload.metrics for stat in SUMMARY_STATS]
    return ["point", *workload.point_columns, "n", *workload.summary_aliases, "ci_level",
            *per_metric, *SUMMARY_TAIL]


def run_rows(experiment: Experiment, ledger: Ledger) -> list[dict[str, Any]]:
    rows = []
    records = ledger.counted()  # a record that cannot count is set aside, named on stderr
    analysis_rows = analyses(experiment, ledger, records)  # new pcaps read in parallel
    metric = experiment.repetitions.metric
    for run_id, record in sorted(records.items()):
        # records from before workloads name one shaped link as `shape`
        links = record.get("links") or {"up": record.get("shape", {})}
        link = experiment.network.link_row(links)
        row = {"run_id": run_id, **record.get("params", {}), "rep": record["rep"],
               "status": record["status"], **link, "queue": json.dumps(link["queue"]),
               # the ledger's own copy: a merged run's record names another host's directory
               "pcap": os.path.relpath(ledger.pcap(run_id), ledger.root)
               if record.get("pcap") else "",
               "host": record.get("host", ""), "started": record.get("started"),
               "ended": record.get("ended"),
               "reasons": "; ".join(record.get("reasons", [])), **analysis_rows[run_id],
               **experiment.network.queue_row(
                   record.get("queues"), experiment.kind.data_direction[experiment.topology])}
        premise_broken(experiment, row)
        if row["status"] == "ok" and row.get(metric) is None:
            row["status"] = "failed"  # verified data but no measurement: not a number
        rows.append(row)
    return rows


def summary_rows(experiment: Experiment, runs: list[dict[str, Any]],
                 states: dict[str, Any]) -> list[dict[str, Any]]:
    reps = experiment.repetitions
    workload = experiment.kind
    rows = []
    for key, state in states.items():
        point_runs = [r for r in runs if r["run_id"].startswith(key + "_r")]
        ok = [r for r in point_runs if r["status"] == "ok"]
        row: dict[str, Any] = {"point": key, **state.point.as_row(), "n": len(ok),
                               "ci_level": reps.confidence, "metric": reps.metric}
        for metric in workload.metrics:
            values = [r[metric.name] for r in ok if r.get(metric.name) is not None]
            at90 = stats.interval(values, 0.90)
            at_level = stats.interval(values, reps.confidence)
            row.update({f"{metric.name}_mean": at90.mean, f"{metric.name}_sd": at90.sd,
                        f"{metric.name}_ci90_half": at90.half_width,
                        f"{metric.name}_ci90_rel": at90.relative,
                        f"{metric.name}_ci_half": at_level.half_width})
        deciding = stats.interval(state.samples, reps.confidence)
        if stats.is_tight(deciding, reps.target_half_width):
            status = "tight"
        elif len(state.samples) >= reps.max:
            status = "capped"
        elif state.needed(experiment) == 0 and len(state.samples) < reps.min:
            status = "failed"
        else:
            status = "incomplete"
        row.update({alias: row[column] for alias, column in workload.summary_aliases.items()})
        row.update(status=status, runs_failed=len(point_runs) - len(ok),
                   runs_flagged=sum(bool(r.get("flagged")) for r in ok))
        rows.append(row)
    return rows


def matrix(experiment: Experiment) -> dict[str, Any]:
    """The full matrix as the experiment file expanded it when the tables were written."""
    workload = experiment.kind
    return {"experiment": experiment.name, "workload": experiment.workload,
            "topology": experiment.topology, "point_columns": list(workload.point_columns),
            "metric": experiment.repetitions.metric,
            "metrics": {m.name: m.description for m in workload.metrics},
            "points": [{"key": p.key, **p.as_row()} for p in experiment.points()]}


def write_csv(path: Path, columns: list[str], rows: list[dict[str, Any]]) -> None:
    partial = path.with_suffix(".csv.tmp")
    try:
        with partial.open("w", newline="") as out:
            writer = csv.DictWriter(out, columns, extrasaction="ignore")
            writer.writeheader()
            for row in rows:
                writer.writerow({k: _cell(row.get(k)) for k in columns})
    except BaseException:
        partial.unlink(missing_ok=True)  # the old table stays whole; no half of a new one
        raise
    os.replace(partial, path)


def premise_broken(experiment: Experiment, row: dict[str, Any]) -> None:
    """Flags a run whose queues dropped packets where its experiment says none may."""
    dropped = (row.get("queue_drops_data") or 0) + (row.get("queue_drops_other") or 0)
    if experiment.network.queue_never_drops and dropped > 0:
        row["flagged"] = True
        note = (f"the router's queues dropped {dropped} packets ({row['queue_drops_data']} in "
                "the data direction); the experiment says they never overflow")
        row["notes"] = "; ".join(n for n in (row.get("notes"), note) if n)


def _cell(value: Any) -> Any:
    if isinstance(value, float):
        return "" if value != value or value in (float("inf"), float("-inf")) else f"{value:.6g}"
    return "" if value is None else value


def testbed_commit() -> dict[str, Any]:
    def git(*args: str) -> str:
        proc = subprocess.run(["git", "-C", str(REPO_ROOT), *args], capture_output=True,
                              text=True)
        return proc.stdout.strip() if proc.returncode == 0 else ""
    return {"commit": git("rev-parse", "HEAD") or "unknown",
            "dirty": bool(git("status", "--porcelain", "--untracked-files=no"))}


def host_tools() -> dict[str, str]:
    proc = subprocess.run(["tshark", "--version"], capture_output=True, text=True)
    first = proc.stdout.splitlines()[0] if proc.stdout else "absent"
    return {"tshark": first, "host_python": platform.python_version(),
            "host_kernel": platform.release()}


def hosts(batches: list[dict[str, Any]], runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Which host ran how many runs, on which kernel and testbed commit: runs merged from
    several hosts keep each host's own. Runs and batches from before hosts were recorded are
    counted under "unknown"."""
    counts = Counter(r.get("host") or "unknown" for r in runs)
    kernels: dict[str, set[tuple[Any, ...]]] = defaultdict(set)
    commits: dict[str, set[str]] = defaultdict(set)
    containers: dict[str, set[str]] = defaultdict(set)
    for batch in batches:
        host = batch.get("host") or "unknown"
        containers[host].add(batch.get("container") or "none")
        kernels[host].add((batch.get("backend"), batch.get("kernel_release"), batch.get("clock")))
        if batch.get("testbed"):
            commits[host].add(batch["testbed"].get("commit", "unknown"))
    return [{"host": host, "runs": counts.get(host, 0),
             "kernels": [{"backend": b, "kernel_release": k, "clock": c}
                         for b, k, c in sorted(kernels[host], key=str)],
             "testbed_commits": sorted(commits[host]),
             # the container engine the batches ran in ("none": on the host itself)
             "containers": sorted(containers[host])}
            for host in sorted(set(counts) | set(kernels))]


def meta(experiment: Experiment, ledger: Ledger,
         runs: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """The experiment as run and how: kernels, clocks, sysctls, profiles, tools, hosts."""
    batches = ledger.batch_metadata()
    if runs is None:
        runs = run_rows(experiment, ledger)
    kernels = sorted({(b["backend"], b["kernel_release"]) for b in batches})
    first = batches[0] if batches else {}
    return {
        "experiment": experiment.as_record(),
        "backend": first.get("backend"), "kernel_release": first.get("kernel_release"),
        "clock": first.get("clock"),
        # the wall-cpu clock's wake-up latency table (GAP_NS/LATENCY_NS,...), as each batch booted
        "wake_latency_ns": sorted({b["wake_latency_ns"] for b in batches
                                   if b.get("wake_latency_ns")}),
        "kernels_seen": [{"backend": b, "kernel_release": k} for b, k in kernels],
        # batches whose kernel had a host CPU of its own (topology/kernel/cpu_slots.py)
        "cpu_pinning": {"pinned_batches": sum(b.get("host_cpu") is not None for b in batches),
                        "unpinned_batches": sum(b.get("host_cpu") is None for b in batches)},
        "sysctls": first.get("sysctls"), "tools": {**first.get("tools", {}), **host_tools()},
        "profiles": {"tcp": {p: TCP_PROFILES[p] for p in experiment.tcp_profiles},
                     "common": COMMON_SYSCTLS,
                     "sctp": {SCTP_KNOBS[k]["sysctl"]: v for k, v in experiment.sctp.items()}},
        "testbed": testbed_commit(), "seed": experiment.seed,
        "link_checks": [c for b in batches for c in b.get("link_checks", [])],
        # per end host and topology, what its TCP metrics cache held after the runs: empty
        "tcp_metrics_cached": [c for b in batches for c in b.get("tcp_metrics_cached", [])],
        "topology_build_s": [t for b in batches for t in _as_list(b.get("topology_build_s"))],
        "hosts": hosts(batches, runs),
    }


def _as_list(value: Any) -> list[Any]:
    """A batch's topology build times (one number in batches from before workloads)."""
    if value is None:
        return []
    return value if isinstance(value, list) else [value]


def write_json(path: Path, data: dict[str, Any]) -> None:
    partial = path.with_suffix(".json.tmp")
    try:
        partial.write_text(json.dumps(data, indent=2) + "\n")
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    os.replace(partial, path)


def write(experiment: Experiment, ledger: Ledger, states) -> Path:
    runs = run_rows(experiment, ledger)
    write_csv(ledger.root / "runs.csv", run_columns(experiment), runs)
    write_csv(ledger.root / "summary.csv", summary_columns(experiment),
              summary_rows(experiment, runs, states))
    write_json(ledger.root / "matrix.json", matrix(experiment))
    write_json(ledger.root / "meta.json", meta(experiment, ledger, runs))
    return ledger.root
