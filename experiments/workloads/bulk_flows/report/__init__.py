"""The bulk-flows workload's part of a report (E3, fairness): the study's tables (per number of
flows: SCTP's throughput gain over TCP, bottleneck utilization, Jain's fairness index, each
with its 90% interval over repetitions), the same against the number of flows as figures, and
for a chosen run the congestion window over time of one TCP and one SCTP flow and every flow's
throughput over time.

Everything comes from the result folder: summary.csv for the tables, runs/<run>/cwnd.csv (the
senders' samples) and runs/<run>/receiver-*.jsonl (the receivers' counts) for a run's traces."""
from __future__ import annotations

import csv
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

import matplotlib

matplotlib.use("Agg")
from matplotlib.figure import Figure  # noqa: E402

from analysis import html  # noqa: E402
from analysis.results import FINISHED, ResultSet, named_runs  # noqa: E402
from experiments.stacks import DEFAULT_STACK  # noqa: E402
from experiments.workloads.base import KERNEL_SCTP, read_events  # noqa: E402

if TYPE_CHECKING:
    from analysis.report import Report

METRICS = (("sctp_gain_pct", "SCTP throughput over TCP (% increase)"),
           ("utilization", "bottleneck utilization"),
           ("jain_index", "Jain's fairness index"))
PROTO_COLORS = {"tcp": "#1f77b4", "sctp": "#d62728"}
RUN_TABLE = (("tcp_mbps", "TCP Mbit/s"), ("sctp_mbps", "SCTP Mbit/s"),
             ("pcap_disagreement", "receivers vs pcap"))
THROUGHPUT_BIN_S = 1.0


def series_of(bottleneck: str) -> str:
    """The set a bottleneck belongs to: its name without the trailing number of pairs."""
    head, _, tail = bottleneck.rpartition("-")
    return head if head and tail.isdigit() else bottleneck


def group_of(row: dict[str, Any]) -> str:
    """What a line and a figure stand for: the TCP profile, and the stack and the SCTP stack
    where they are not today's and the kernel's (result sets from before those axes have
    none)."""
    stack = str(row.get("stack") or DEFAULT_STACK)
    sctp_stack = str(row.get("sctp_stack") or KERNEL_SCTP)
    parts = [str(row.get("profile"))] + ([stack] if stack != DEFAULT_STACK else []) \
        + ([sctp_stack] if sctp_stack != KERNEL_SCTP else [])
    return " / ".join(parts)


def metric_definition(results: ResultSet) -> str:
    metric = results.matrix.get("metric", "jain_index")
    flows = results.experiment.get("flows", {})
    return (f"{metric}: {results.matrix.get('metrics', {}).get(metric, '')}; steady state from "
            f"{flows.get('warmup_s', '?')} s to {flows.get('duration_s', '?')} s after the "
            "flows' common start")


def _cell(row: dict[str, Any], metric: str) -> str:
    mean, half = row.get(f"{metric}_mean"), row.get(f"{metric}_ci90_half")
    if not isinstance(mean, (int, float)) or math.isnan(mean):
        return "-"
    if not isinstance(half, (int, float)) or not math.isfinite(half):
        return f"{mean:.3g}"
    return f"{mean:.3g} ± {half:.2g}"


def _short(row: dict[str, Any], metric: str) -> str:
    mean = row.get(f"{metric}_mean")
    return f"{mean:.2g}" if isinstance(mean, (int, float)) and not math.isnan(mean) else "-"


def _rows(results: ResultSet) -> list[dict[str, Any]]:
    return sorted(results.summary, key=lambda r: (group_of(r),
                                                  series_of(str(r.get("bottleneck"))),
                                                  r.get("pairs", 0)))


def tables(results: ResultSet) -> dict[str, tuple[list[str], list[dict[str, Any]]]]:
    """fairness.csv: one row per point with every metric's mean and 90% half-width."""
    columns = ["profile", "stack", "sctp_stack", "bottleneck", "pairs", "rate_bps", "n",
               "status"]
    for metric, _ in METRICS:
        columns += [f"{metric}_mean", f"{metric}_ci90_half"]
    rates = _rates(results)
    rows = [{**row, "rate_bps": rates.get(str(row.get("bottleneck")))} for row in _rows(results)]
    return {"fairness": (columns, rows)}


def _rates(results: ResultSet) -> dict[str, float]:
    return {b["name"]: b["rate_bps"] for b in results.experiment.get("bottlenecks", [])}


def build_figures(results: ResultSet, log_scale: bool = False,
                  run_ids: list[str] | None = None, problems: list[str] | None = None
                  ) -> dict[str, Figure]:
    problems = problems if problems is not None else []
    out: dict[str, Figure] = {}
    for group in sorted({group_of(r) for r in results.summary}):
        out[f"fairness_{group.replace(' / ', '_')}"] = against_flows_figure(results, group)
    for run in chosen_runs(results, run_ids):
        folder = results.root / "runs" / run["run_id"]
        try:
            out[f"cwnd_{run['run_id']}"] = cwnd_figure(run["run_id"], folder)
            out[f"throughput_{run['run_id']}"] = throughput_figure(run["run_id"], folder)
        except (OSError, ValueError, KeyError) as error:
            problems.append(f"traces of {run['run_id']}: {error}")
    return out


def chosen_runs(results: ResultSet, run_ids: list[str] | None = None) -> list[dict[str, Any]]:
    """The runs whose traces are drawn: those asked for, else one: at the largest number of
    flows of the first profile and stack, the run whose Jain's index is closest to its
    point's mean."""
    if run_ids:
        return named_runs(results.runs, run_ids, results.root)
    ok = [r for r in results.runs if r.get("status") == "ok"
          and isinstance(r.get("jain_index"), float) and not math.isnan(r["jain_index"])]
    if not ok:
        return []
    group = min(group_of(r) for r in ok)
    ok = [r for r in ok if group_of(r) == group]
    most = max(r["pairs"] for r in ok)
    candidates = [r for r in ok if r["pairs"] == most]
    point = next((p for p in results.summary if p.get("point") == candidates[0]["run_id"]
                  .rsplit("_r", 1)[0]), {})
    target = point.get("jain_index_mean", candidates[0]["jain_index"])
    return [min(candidates, key=lambda r: abs(r["jain_index"] - target))]


def against_flows_figure(results: ResultSet, group: str) -> Figure:
    """The study's three numbers against the number of flows, a line per set of bottlenecks,
    error bars the 90% interval; hollow markers where a point has no finished interval."""
    fig = Figure(figsize=(13, 4), layout="constrained")
    fig.analysis_data = []
    fig.suptitle(f"{results.name}: TCP and SCTP sharing the bottleneck ({group})")
    rows = [r for r in _rows(results) if group_of(r) == group]
    for i, (metric, label) in enumerate(METRICS):
        ax = fig.add_subplot(1, len(METRICS), i + 1)
        ax.set_xlabel("flows (half TCP, half SCTP)")
        ax.set_ylabel(label)
        ax.grid(True, alpha=0.3)
        for series in dict.fromkeys(series_of(str(r["bottleneck"])) for r in rows):
            points = [r for r in rows if series_of(str(r["bottleneck"])) == series
                      and isinstance(r.get(f"{metric}_mean"), float)
                      and not math.isnan(r[f"{metric}_mean"])]
            if not points:
                continue
            x = [r["pairs"] for r in points]
            y = [r[f"{metric}_mean"] for r in points]
            err = [r[f"{metric}_ci90_half"] if math.isfinite(r[f"{metric}_ci90_half"]) else 0.0
                   for r in points]
            bars = ax.errorbar(x, y, yerr=err, label=series, capsize=3, marker="o")
            hollow = [r for r in points if r.get("status") not in FINISHED]
            if hollow:
                ax.plot([r["pairs"] for r in hollow], [r[f"{metric}_mean"] for r in hollow],
                        linestyle="none", marker="o", markersize=11, markerfacecolor="white",
                        markeredgecolor=bars.lines[0].get_color(), label="_unfinished")
            for r, mean, half in zip(points, y, err, strict=True):
                fig.analysis_data.append({"profile": group, "set": series,
                                          "bottleneck": r["bottleneck"], "pairs": r["pairs"],
                                          "metric": metric, "mean": mean, "ci90_half": half,
                                          "n": r.get("n"), "status": r.get("status")})
        if metric == "jain_index":
            ax.set_ylim(top=1.02)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize="small")
    return fig


def _one_panel(title: str, xlabel: str, ylabel: str) -> tuple[Figure, Any]:
    fig = Figure(figsize=(9, 4.2), layout="constrained")
    fig.analysis_data = []
    fig.suptitle(title)
    ax = fig.add_subplot(1, 1, 1)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(True, alpha=0.3)
    return fig, ax


def read_cwnd(folder: Path) -> list[dict[str, Any]]:
    with (folder / "cwnd.csv").open(newline="") as handle:
        return list(csv.DictReader(handle))


def cwnd_figure(run_id: str, folder: Path) -> Figure:
    """The congestion window over time of the run's first TCP and first SCTP flow, with TCP's
    ssthresh where the socket gave it."""
    rows = read_cwnd(folder)
    if not rows:
        raise ValueError("cwnd.csv has no samples")
    start = min(float(r["t_s"]) for r in rows)
    fig, ax = _one_panel(f"{run_id}: congestion window over time",
                         "time since the first sample (s)", "bytes")
    for proto in ("tcp", "sctp"):
        flow = next((r["flow"] for r in rows if r["proto"] == proto), None)
        if flow is None:
            continue
        mine = [r for r in rows if r["flow"] == flow and r.get("cwnd") not in ("", None)]
        t = [float(r["t_s"]) - start for r in mine]
        ax.plot(t, [float(r["cwnd"]) for r in mine], color=PROTO_COLORS[proto],
                label=f"{proto.upper()} flow {flow} cwnd")
        thresholds = [(x, float(r["ssthresh"])) for x, r in zip(t, mine, strict=True)
                      if r.get("ssthresh") not in ("", None) and float(r["ssthresh"]) < 1e9]
        if thresholds:
            ax.plot([x for x, _ in thresholds], [y for _, y in thresholds], linestyle="--",
                    color=PROTO_COLORS[proto], alpha=0.6, label=f"{proto.upper()} ssthresh")
        fig.analysis_data.append({"run": run_id, "flow": flow, "proto": proto,
                                  "samples": len(mine),
                                  "max_cwnd": max(float(r["cwnd"]) for r in mine),
                                  "min_cwnd": min(float(r["cwnd"]) for r in mine)})
    ax.legend(fontsize="small")
    return fig


def throughput_figure(run_id: str, folder: Path) -> Figure:
    """Every flow's throughput over time, from its receiver's counts, in bins of a second."""
    fig, ax = _one_panel(f"{run_id}: throughput of every flow",
                         "time since the first byte of the first flow (s)", "Mbit/s (1 s bins)")
    flows = {}
    for log in sorted(folder.glob("receiver-*.jsonl")):
        events = read_events(log)
        samples = [(e["t"], e["bytes"]) for e in events if e.get("event") == "sample"]
        proto = next((e["proto"] for e in events if e.get("event") == "ready"), "?")
        if samples:
            flows[log.stem.removeprefix("receiver-")] = (proto, samples)
    if not flows:
        raise ValueError("no receiver samples")
    origin = min(s[0][0] for _, s in flows.values())
    for name, (proto, samples) in flows.items():
        bins: dict[int, float] = {}
        for (_, b0), (t1, b1) in zip(samples, samples[1:], strict=False):
            bins[int((t1 - origin) // THROUGHPUT_BIN_S)] = \
                bins.get(int((t1 - origin) // THROUGHPUT_BIN_S), 0.0) + (b1 - b0)
        x = sorted(bins)
        y = [bins[k] * 8 / THROUGHPUT_BIN_S / 1e6 for k in x]
        ax.plot([k * THROUGHPUT_BIN_S for k in x], y, label=f"{name} ({proto})",
                color=PROTO_COLORS.get(str(proto)), alpha=0.8,
                linestyle="-" if proto == "tcp" else "--")
        fig.analysis_data.append({"run": run_id, "receiver": name, "proto": proto,
                                  "mean_mbps": sum(y) / len(y) if y else None,
                                  "bins": len(y)})
    ax.legend(fontsize="small", ncol=2)
    return fig


def sections(results: ResultSet, report: Report, log_scale: bool) -> list[tuple[str, str]]:
    return [("Fairness, utilization and SCTP's gain", _tables_html(results)
             + report.figure_block("fairness_")),
            ("Congestion windows and throughput of a run", report.figure_block("cwnd_")
             + report.figure_block("throughput_") + _trace_note())]


def _tables_html(results: ResultSet) -> str:
    """The study's two tables: one per set of bottlenecks (the published one, and the second
    at 0.2 Mbit/s), a row per number of flows and TCP profile."""
    rates = _rates(results)
    parts = ["<p>Per point: mean over the runs that count, ± the half-width of the 90% "
             "Student-t interval (summary.csv; also <a href=\"fairness.csv\">fairness.csv</a>)."
             " Utilization is the payload the flows delivered in the steady state over the "
             "bottleneck's rate. A timeout is a flow's congestion window falling to one "
             "segment; a needless retransmission a segment or chunk that reached the "
             "bottleneck's far side twice (its first copy had passed the lossy link).</p>"]
    for series in dict.fromkeys(series_of(str(r.get("bottleneck"))) for r in _rows(results)):
        rows = []
        mine = [r for r in results.summary if series_of(str(r.get("bottleneck"))) == series]
        for row in sorted(mine, key=lambda r: (r.get("pairs", 0), group_of(r))):
            rate = rates.get(str(row.get("bottleneck")))
            rows.append([row.get("pairs"), row.get("bottleneck"),
                         f"{rate / 1e6:g}" if rate else "", group_of(row), row.get("n"),
                         *[_cell(row, metric) for metric, _ in METRICS],
                         *[f"{_short(row, f'tcp_{k}')} / {_short(row, f'sctp_{k}')}"
                           for k in ("timeouts", "needless_rtx")], row.get("status")])
        parts.append(f"<h3>Bottlenecks {html.esc(series)}-n</h3>" + html.table(
            ["flows", "bottleneck", "Mbit/s", "TCP profile (/ stack / SCTP stack)", "runs",
             *[label for _, label in METRICS], "timeouts per flow, TCP / SCTP",
             "needless retransmissions per flow, TCP / SCTP", "status"], rows))
    return "".join(parts)


def _trace_note() -> str:
    return ("<p>Congestion windows come from the senders' own samples of their sockets every "
            "sample period (TCP_INFO; SCTP_GET_PEER_ADDR_INFO and SCTP_STATUS, which give no "
            "ssthresh), runs/&lt;run&gt;/cwnd.csv; throughputs from the receivers' counts, "
            "runs/&lt;run&gt;/receiver-*.jsonl.</p>")
