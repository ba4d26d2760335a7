"""results/<experiment>/report/: the figures as PNG and PDF (with the numbers each plots as
CSV), the speed-up tables as CSV, and report.html, which holds all of it and opens anywhere."""
from __future__ import annotations

import csv
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from matplotlib.figure import Figure

from . import figures, html, speedup, tshark
from .results import ResultSet, size_label

TIMESEQ_FILE = "timeseq"


@dataclass
class Report:
    folder: Path
    figures: dict[str, Figure] = field(default_factory=dict)   # stem -> figure
    tables: dict[str, Path] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    @property
    def html(self) -> Path:
        return self.folder / "report.html"


def chosen_runs(results: ResultSet, run_ids: list[str] | None = None) -> list[dict[str, Any]]:
    """The runs drawn as time-sequence plots: those asked for, else one per series at the
    experiment's highest loss and smallest file size on its first path, the run closest to
    its point's mean (a typical run, not the best or worst)."""
    by_id = {r["run_id"]: r for r in results.runs}
    if run_ids:
        missing = [r for r in run_ids if r not in by_id]
        if missing:
            raise KeyError(f"no such run in {results.root}/runs.csv: {', '.join(missing)}")
        return [by_id[r] for r in run_ids]
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


def build_figures(results: ResultSet, log_scale: bool = False,
                  run_ids: list[str] | None = None, problems: list[str] | None = None
                  ) -> dict[str, Figure]:
    problems = problems if problems is not None else []
    out: dict[str, Figure] = {}
    for path in results.paths:
        if any(p.key.path == path for p in results.points):
            out[f"transfer_time_{path}"] = figures.transfer_time_figure(results, path, log_scale)
        if any(r["key"].path == path and r["status"] == "ok" for r in results.runs):
            out[f"counters_{path}"] = figures.counters_figure(results, path)
    panels = []
    for run in chosen_runs(results, run_ids):
        pcap = results.root / run["pcap"]
        transport = "tcp" if run["key"].variant == "tcp" else "sctp"
        try:
            seq = tshark.time_sequence(pcap, transport)
        except (tshark.TsharkError, OSError) as error:
            problems.append(f"time-sequence of {run['run_id']}: {error}")
            continue
        panels.append((f"{run['run_id']} ({run['transfer_time_s']:.3g} s)", seq))
    if panels:
        out[TIMESEQ_FILE] = figures.time_sequence_figure(
            f"{results.name}: time-sequence of chosen runs (data from the server, client's "
            "cumulative acks)", panels)
    return out


def write_csv(path: Path, rows: list[dict[str, Any]], columns: list[str] | None = None) -> Path:
    columns = columns or (list(rows[0]) if rows else ["empty"])
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, columns, extrasaction="ignore")
        writer.writeheader()
        for row in rows:
            writer.writerow({k: _csv_value(row.get(k)) for k in columns})
    return path


def _csv_value(value: Any) -> Any:
    if isinstance(value, float):
        return "" if math.isnan(value) else ("inf" if math.isinf(value) else f"{value:.6g}")
    return value


def write(results: ResultSet, out: Path | None = None, log_scale: bool = False,
          run_ids: list[str] | None = None) -> Report:
    report = Report(Path(out) if out else results.root / "report")
    report.folder.mkdir(parents=True, exist_ok=True)
    report.figures = build_figures(results, log_scale, run_ids, report.problems)
    for stem, fig in report.figures.items():
        fig.savefig(report.folder / f"{stem}.png", dpi=110)
        fig.savefig(report.folder / f"{stem}.pdf")
        write_csv(report.folder / f"{stem}.data.csv", fig.analysis_data)
    rows = [s.row() for s in speedup.speedups(results)]
    report.tables["speedup"] = write_csv(report.folder / "speedup.csv", rows, speedup.COLUMNS)
    report.html.write_text(render(results, report, log_scale))
    return report


def render(results: ResultSet, report: Report, log_scale: bool) -> str:
    meta = results.meta
    experiment = meta.get("experiment", {})
    sections = [("Completeness", _completeness(results)),
                ("Transfer time against loss", _figures(report, "transfer_time_", log_scale)),
                ("Speed-ups", _speedups(results)),
                ("Points", _points(results)),
                ("Per-run diagnostics", _figures(report, "counters_", False)
                 + _figures(report, TIMESEQ_FILE, False) + _diagnostics_note()),
                ("Parameters", html.key_values({k: v for k, v in experiment.items()})),
                ("Kernel, stack and tools", _environment(meta)),
                ("Link checks", _link_checks(meta)),
                ("Link fidelity", _fidelity(results)),
                ("Runs and pcaps", _runs(results, report))]
    if report.problems:
        sections.insert(1, ("Problems", "<ul>" + "".join(
            f"<li>{html.esc(p)}</li>" for p in report.problems) + "</ul>"))
    title = f"{results.name}: {experiment.get('description', 'experiment report')}"
    return html.page(title, sections)


def _completeness(results: ResultSet) -> str:
    missing, unfinished = results.missing(), results.unfinished()
    intro = (f"<p>Metric: {html.esc(experiment_metric(results))}. Full matrix: "
             f"{len(results.expected)} points (from {html.esc(results.expected_source)}); "
             f"summary.csv has {len(results.points)}, runs.csv {len(results.runs)} runs.</p>")
    if not missing and not unfinished:
        return intro + '<p class="ok">Complete: every point of the matrix has a finished ' \
                       "interval (tight or capped).</p>"
    rows = [[k.path, k.loss, size_label(k.file_size), k.files, k.series, "missing", 0]
            for k in missing]
    rows += [[p.key.path, p.key.loss, size_label(p.key.file_size), p.key.files, p.key.series,
              p.status or "unknown", p.n] for p in unfinished]
    return (intro + f'<p class="warn">Partial result set: {len(missing)} of {len(results.expected)} '
            f"points missing from summary.csv, {len(unfinished)} without a finished interval. Figures show what "
            "exists (unfinished points hollow); tables mark them.</p>"
            + html.table(["path", "loss", "size", "files", "variant", "state", "n"], rows))


def experiment_metric(results: ResultSet) -> str:
    experiment = results.meta.get("experiment", {})
    return experiment.get("metric_definition") or results.metric


def _figures(report: Report, prefix: str, log_scale: bool) -> str:
    parts = []
    for stem in report.figures:
        if stem.startswith(prefix):
            png = report.folder / f"{stem}.png"
            parts.append(f"<p>{html.image(png, stem)}<br>"
                         f'<a href="{stem}.pdf">{stem}.pdf</a> · '
                         f'<a href="{stem}.data.csv">plotted numbers</a></p>')
    if prefix.startswith("transfer") and parts:
        scale = "logarithmic" if log_scale else "linear"
        parts.insert(0, f"<p>Mean transfer time per point, error bars the 90% Student-t "
                        f"interval (summary.csv ci90_half_s); {scale} time axis. Hollow "
                        "markers: points without a finished interval.</p>")
    return "".join(parts) or "<p>No data.</p>"


def _speedups(results: ResultSet) -> str:
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
            rows.append([html.cell(key.path), html.cell(f"{key.files} x {size_label(key.file_size)}"),
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


def _points(results: ResultSet) -> str:
    rows = [[p.key.path, p.key.loss, size_label(p.key.file_size), p.key.files, p.key.series,
             p.n, p.mean_s, p.sd_s, p.ci90_half_s, p.status, p.runs_failed, p.runs_flagged]
            for p in results.points]
    return html.table(["path", "loss", "size", "files", "variant", "n", "mean (s)", "sd (s)",
                       "90% half-width (s)", "status", "failed runs", "flagged runs"], rows)


def _diagnostics_note() -> str:
    return ("<p>Counters are the means per counted run of runs.csv's connections, "
            "retransmissions and timeouts. The capture is on the client's interface, so a "
            "packet lost on its way to the client is never seen there: in the time-sequence "
            "plots a retransmission is a TCP segment tshark flags as retransmitted or an SCTP "
            "DATA chunk whose TSN is at or below the highest already seen in its association. "
            "</p>")


def _environment(meta: dict[str, Any]) -> str:
    testbed = meta.get("testbed", {})
    head = {"backend": meta.get("backend"), "kernel release": meta.get("kernel_release"),
            "kernels seen": meta.get("kernels_seen"), "testbed commit": testbed.get("commit"),
            "tree dirty": testbed.get("dirty"), "seed": meta.get("seed")}
    parts = [html.key_values(head), "<h3>sysctls</h3>", html.key_values(meta.get("sysctls") or {}),
             "<h3>profiles</h3>", html.key_values(meta.get("profiles") or {}),
             "<h3>tools</h3>", html.key_values(meta.get("tools") or {})]
    return "".join(parts)


def _link_checks(meta: dict[str, Any]) -> str:
    checks = meta.get("link_checks") or []
    if not checks:
        return "<p>No link checks in meta.json.</p>"
    columns = ["rate_bps", "delay_s", "rtt_configured_ms", "min_ms", "avg_ms", "max_ms",
               "mdev_ms", "sent", "received"]
    return ("<p>Ping RTT of every rate and delay used, measured before the runs.</p>" +
            html.table(columns, [[c.get(k) for k in columns] for c in checks]))


def _fidelity(results: ResultSet) -> str:
    data = results.fidelity
    if not data:
        return f"<p>No {html.esc(results.root.parent / 'fidelity.json')} (run make fidelity).</p>"
    columns = ["path", "metric", "unit", "configured", "measured", "error", "error_rel",
               "within_target"]
    rows = []
    for item in data.get("items", []):
        row = [html.cell(item.get(k)) for k in columns[:-1]]
        within = item.get("within_target")
        css = "bad" if within is False else ""
        row.append(f'<td class="{css}">{html.esc("n/a" if within is None else within)}</td>')
        rows.append(row)
    metadata = data.get("metadata", {})
    return (f"<p>From results/fidelity.json (backend {html.esc(metadata.get('backend'))}, "
            f"kernel {html.esc(metadata.get('kernel_release'))}).</p>"
            + html.table(columns, rows, raw=True))


def _runs(results: ResultSet, report: Report) -> str:
    rows = []
    for run in results.runs:
        pcap = run.get("pcap") or ""
        link = ""
        if pcap:
            rel = Path(_relative(results.root / pcap, report.folder))
            link = f'<a href="{html.esc(rel.as_posix())}">{html.esc(Path(pcap).name)}</a>'
        rows.append([html.cell(run["run_id"]), html.cell(run["status"]),
                     html.cell(run["transfer_time_s"]), html.cell(run["connections"]),
                     html.cell(run["retransmissions"]), html.cell(run["timeouts"]),
                     html.cell(run["flagged"]), f"<td>{link}</td>",
                     html.cell(run.get("reasons") or run.get("notes") or "")])
    note = ("<p>Open a pcap in Wireshark with FTP over SCTP decoded: "
            "<code>wireshark -X lua_script:analysis/wireshark/ftp_sctp.lua FILE</code>.</p>")
    return note + html.table(["run", "status", "transfer time (s)", "connections",
                              "retransmissions", "timeouts", "flagged", "pcap", "notes"],
                             rows, raw=True)


def _relative(target: Path, start: Path) -> str:
    import os
    return os.path.relpath(target.resolve(), start.resolve())
