"""The ftp-mget workload's part of a report (E1, E2): transfer time against loss per path, the
speed-ups of the variants with their confidence, per-run counters and time-sequences of chosen
runs (from the runs' time_sequence.json, which the workload writes from their pcaps before a
report: `runs_drawn` names them, `report_data` writes them; this module reads no pcap).

    points.py    the result set as ftp-mget points (path, loss, size, files, variant, profile)
    speedup.py   ratios of mean transfer times with their confidence, and whether they count
    figures.py   transfer time vs loss, counters, time-sequence, phases, timeline, and on
                 dualpath each path's delivery around a failure
    parallel.py  xftp (E5): link utilization against the number of parallel connections"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from matplotlib.figure import Figure

from analysis import html
from analysis.results import ResultSet, named_runs
from experiments.tshark.transport import TimeSequence
from experiments.workloads.ftp_mget import paths
from experiments.workloads.ftp_mget.phases import read_phases, read_stalls
from experiments.workloads.ftp_mget.report import figures, parallel, speedup
from experiments.workloads.ftp_mget.report.points import FtpResults, size_label
from experiments.workloads.ftp_mget.workload import TIME_SEQUENCE_FILE

if TYPE_CHECKING:
    from analysis.report import Report

TIMESEQ_FILE = "timeseq"
TIMELINE_FILE = "timeline"
PATHS_FILE = "two_paths"
PARALLEL_FILE = "parallel_utilization"
RUN_TABLE = (("connections", "connections"), ("retransmissions", "retransmissions"),
             ("timeouts", "timeouts"))


def chosen_runs(results: FtpResults, run_ids: list[str] | None = None) -> list[dict[str, Any]]:
    """The runs drawn as time-sequence plots: those asked for, else one per series at the
    experiment's highest loss and smallest file size on its first path, the run closest to
    its point's mean (a typical run, not the best or worst)."""
    if run_ids:
        return named_runs(results.runs, run_ids, results.root)
    ok = [r for r in results.runs if r["status"] == "ok" and r.get("pcap")]
    if not ok:
        return []
    path = next((p for p in results.paths if any(r["key"].path == p for r in ok)), None)
    ok = [r for r in ok if r["key"].path == path]
    loss = max(r["key"].loss for r in ok)
    size = min(r["key"].file_size for r in ok if r["key"].loss == loss)
    chosen = []
    for series in results.series():
        candidates = [r for r in ok if r["key"].series == series and r["key"].loss == loss
                      and r["key"].file_size == size]
        if not candidates:
            continue
        point = results.point(candidates[0]["key"])
        target = point.mean_s if point and point.usable else candidates[0]["transfer_time_s"]
        chosen.append(min(candidates, key=lambda r: abs(r["transfer_time_s"] - target)))
    return chosen


def runs_drawn(generic: ResultSet, run_ids: list[str] | None = None) -> list[str]:
    """The runs whose files `build_figures` reads beyond the tables (their time-sequences),
    for the workload to write first (`report_data`)."""
    return [run["run_id"] for run in chosen_runs(FtpResults(generic), run_ids)]


def build_figures(generic: ResultSet, log_scale: bool = False,
                  run_ids: list[str] | None = None, problems: list[str] | None = None
                  ) -> dict[str, Figure]:
    results = FtpResults(generic)
    problems = problems if problems is not None else []
    out: dict[str, Figure] = {}
    for path in results.paths:
        if any(p.key.path == path for p in results.points):
            out[f"transfer_time_{path}"] = figures.transfer_time_figure(results, path, log_scale)
        if any(r["key"].path == path and r["status"] == "ok" for r in results.runs):
            out[f"counters_{path}"] = figures.counters_figure(results, path)
        if any(r["key"].path == path and r["status"] == "ok"
               and isinstance(r.get("phase_data_s"), float) for r in results.runs):
            out[f"phases_{path}"] = figures.phases_figure(results, path)
    if parallel.has_figure(results):
        out[PARALLEL_FILE] = parallel.utilization_figure(results)
    chosen = chosen_runs(results, run_ids)
    timelines = [(f"{run['run_id']} ({run['transfer_time_s']:.3g} s)",
                  read_phases(results.root / "runs" / run["run_id"]),
                  read_stalls(results.root / "runs" / run["run_id"])) for run in chosen]
    timelines = [t for t in timelines if t[1]]
    if timelines:
        out[TIMELINE_FILE] = figures.timeline_figure(
            f"{results.name}: per-file timeline of chosen runs, by phase (from phases.csv)",
            timelines)
    panels = []
    for run in chosen:
        saved = results.root / "runs" / run["run_id"] / TIME_SEQUENCE_FILE
        try:
            seq = TimeSequence.load(saved)
        except (OSError, ValueError, KeyError) as error:
            problems.append(f"time-sequence of {run['run_id']}: {error} (`testbed report` "
                            "writes it from the run's pcap)")
            continue
        panels.append((f"{run['run_id']} ({run['transfer_time_s']:.3g} s)", seq))
    if panels:
        out[TIMESEQ_FILE] = figures.time_sequence_figure(
            f"{results.name}: time-sequence of chosen runs (data from the server, client's "
            "cumulative acks)", panels)
    two_paths = []
    for run in chosen:
        saved = results.root / "runs" / run["run_id"] / paths.TRACE_FILE
        if saved.exists():
            try:
                two_paths.append((f"{run['run_id']} ({run['transfer_time_s']:.3g} s)",
                                  paths.load_trace(saved)))
            except (OSError, ValueError, KeyError) as error:
                problems.append(f"paths of {run['run_id']}: {error}")
    if two_paths:
        out[PATHS_FILE] = figures.two_paths_figure(
            f"{results.name}: new data delivered over each path, chosen runs", two_paths)
    return out


def tables(generic: ResultSet) -> dict[str, tuple[list[str], list[dict[str, Any]]]]:
    """CSV tables beside the report: name -> (columns, rows)."""
    results = FtpResults(generic)
    rows = [s.row() for s in speedup.speedups(results)]
    out = {"speedup": (speedup.COLUMNS, rows)}
    if parallel.has_figure(results):
        out["parallel"] = (parallel.COLUMNS, parallel.rows(results))
    return out


def sections(generic: ResultSet, report: Report, log_scale: bool) -> list[tuple[str, str]]:
    results = FtpResults(generic)
    scale = "logarithmic" if log_scale else "linear"
    return [
        ("Transfer time against loss", report.figure_block(
            "transfer_time_", f"<p>Mean transfer time per point, error bars the 90% Student-t "
                              f"interval (summary.csv ci90_half_s); {scale} time axis. Hollow "
                              "markers: points without a finished interval.</p>")),
        ("Speed-ups", _speedups(results)),
        *([("Parallel connections (xftp)", report.figure_block(PARALLEL_FILE)
            + _parallel_table(results))] if parallel.has_figure(results) else []),
        ("Where the time goes", report.figure_block("phases_") +
         report.figure_block(TIMELINE_FILE) + _phases_note()),
        ("Per-run diagnostics", report.figure_block("counters_") +
         report.figure_block(TIMESEQ_FILE) + _diagnostics_note()),
    ]


def _parallel_table(results: FtpResults) -> str:
    def num(value: float, digits: str = ".3g") -> str:
        return "-" if math.isnan(value) else format(value, digits)

    body = [[r["path"], r["queue"], f"{100 * r['loss']:g}%", r["profile"], r["parallel"],
             r["n"], f"{num(r['utilization_mean'])} ± {num(r['utilization_ci90_half'], '.2g')}",
             num(r["throughput_mbps_mean"]), num(r["queue_drops_mean"]),
             num(r["retransmissions_per_connection_mean"])] for r in parallel.rows(results)]
    return ("<p>Utilization: the file's bits over the session's interval (the experiment's "
            "metric, so the listing and the round trips around the transfer count against "
            "it) and the path's rate; mean ± the 90% half-width over the runs. Router drops: "
            "the data direction's queue (tc). Retransmissions per data connection: the "
            "pcap's count over every connection but the control one "
            "(<a href=\"parallel.csv\">parallel.csv</a>).</p>"
            + html.table(["path", "queue", "loss", "TCP profile", "N", "runs", "utilization",
                          "Mbit/s", "router drops", "retransmissions per connection"], body))


def metric_definition(generic: ResultSet) -> str:
    experiment = generic.experiment
    return experiment.get("metric_definition") or experiment.get("metric", "")


def _speedups(results: FtpResults) -> str:
    items = speedup.speedups(results)
    if not items:
        return "<p>No pair of variants to compare in this result set.</p>"
    parts = ["<p>Speed-up of a variant over a baseline = baseline mean / variant mean (above 1: "
             "the variant is faster). The interval is the range of ratios the two 90% "
             "intervals allow; a ratio whose intervals overlap is <span class=ns>not "
             "significant</span>. Also in <a href=\"speedup.csv\">speedup.csv</a>.</p>"]
    for name in dict.fromkeys(s.comparison for s in items):
        rows = []
        for s in (s for s in items if s.comparison == name):
            key = s.variant.key
            css = "sig" if s.significant else "ns"
            high = "inf" if not math.isfinite(s.high) else f"{s.high:.2f}"
            rows.append([html.cell(key.path),
                         html.cell(f"{key.files} x {size_label(key.file_size)}"),
                         html.cell(key.loss), html.cell(s.variant.mean_s),
                         html.cell(s.baseline.mean_s),
                         f'<td class="num {css}">{s.ratio:.2f}</td>',
                         f'<td class="num">[{s.low:.2f}, {high}]</td>',
                         f'<td class="{css}">{html.esc(s.verdict)}</td>',
                         html.cell("" if s.complete else "unfinished point")])
        parts.append(f"<h3>{html.esc(name)}</h3>" + html.table(
            ["path", "files", "loss", f"mean {s.variant.key.variant} (s)", "mean baseline (s)",
             "speed-up", "90% range", "verdict", "note"], rows, raw=True))
    return "".join(parts)


def _diagnostics_note() -> str:
    return ("<p>Counters are the means per counted run of runs.csv's connections, "
            "retransmissions and timeouts. The capture is on the client's interface, so a "
            "packet lost on its way to the client is never seen there: in the time-sequence "
            "plots a retransmission is a TCP segment tshark flags as retransmitted or an SCTP "
            "DATA chunk whose TSN is at or below the highest already seen in its association. "
            "</p>")


def _phases_note() -> str:
    return ("<p>Each run's session is cut into a slice per transfer (the listing, then each "
            "file), from the previous transfer's end to its own (its 226 and its last byte "
            "both in), and each slice into phases at instants read from the client's pcap: "
            "<b>gap</b> (the client's time before its first command), <b>request</b> "
            "(commands and replies up to the first data byte), <b>setup</b> (the data "
            "connection's handshake), <b>data</b> (first to last data byte), <b>close</b> "
            "(to the data connection's last packet: FIN exchange or SCTP SHUTDOWN), "
            "<b>reply</b> (to the 226). The listing's slice is spread over the files, so a bar "
            "is the transfer time per file. Per run: <code>runs/&lt;id&gt;/phases.csv</code> "
            "and <code>stalls.csv</code> (waits of over a round trip with no new data, and "
            "what ended them: timeout, fast retransmit, delayed ack, a full window, or the "
            "sender).</p>")


def pcap_note() -> str:
    return ("<p>Open a pcap in Wireshark with FTP over SCTP decoded: "
            "<code>wireshark -X lua_script:analysis/wireshark/ftp_sctp.lua FILE</code>.</p>")

