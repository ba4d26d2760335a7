"""results/<experiment>/report/: the figures as PNG and PDF (with the numbers each plots as
CSV), the workload's tables as CSV, and report.html, which holds all of it and opens anywhere.

What every report has (completeness against the matrix, every point's metrics, parameters,
kernel and tools, link checks, fidelity, runs and pcaps) is drawn here; what the workload
measures is drawn by the workload's own report (experiments/workloads/<name>/report/:
`build_figures`, `tables`, `sections`), which the `testbed` command hands in: this layer imports
no workload. A result folder of a workload without a report still gets the common report."""
from __future__ import annotations

import csv
import hashlib
import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from matplotlib.figure import Figure

from . import html
from .results import ResultSet


@dataclass
class Report:
    folder: Path
    figures: dict[str, Figure] = field(default_factory=dict)   # stem -> figure
    tables: dict[str, Path] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    @property
    def html(self) -> Path:
        return self.folder / "report.html"

    def figure_block(self, prefix: str, intro: str = "") -> str:
        """Every figure whose name starts with prefix, with links to its PDF and numbers."""
        parts = []
        for stem in self.figures:
            if stem.startswith(prefix):
                png = self.folder / f"{stem}.png"
                parts.append(f"<p>{html.image(png, stem)}<br>"
                             f'<a href="{stem}.pdf">{stem}.pdf</a> · '
                             f'<a href="{stem}.data.csv">plotted numbers</a></p>')
        return intro + "".join(parts) if parts else "<p>No data.</p>"


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


def build_figures(results: ResultSet, module: ModuleType | None, log_scale: bool = False,
                  run_ids: list[str] | None = None, problems: list[str] | None = None
                  ) -> dict[str, Figure]:
    if module is None:
        return {}
    return module.build_figures(results, log_scale, run_ids,
                                problems if problems is not None else [])


# in a report's folder: what it was drawn from (drawn_from), so that a command that draws it
# again from the same runs with the same code can leave it as it is
DRAWN_FROM = "drawn-from.json"
RESULT_FILES = ("runs.csv", "summary.csv", "meta.json", "matrix.json")


def drawn_from(results: ResultSet, module: ModuleType | None, log_scale: bool = False,
               run_ids: list[str] | None = None) -> str:
    """A digest of what a report is drawn from: the result folder's tables and records, the
    options, and the code that draws it (this package's and the workload's report's)."""
    digest = hashlib.sha256(json.dumps([log_scale, run_ids]).encode())
    for name in RESULT_FILES:
        path = results.root / name
        digest.update(name.encode() + b"\0" + (path.read_bytes() if path.exists() else b""))
    code = sorted(Path(__file__).parent.rglob("*.py"))
    if module is not None and getattr(module, "__file__", None):
        code += sorted(Path(module.__file__).parent.rglob("*.py"))
    for path in code:
        digest.update(str(path).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def is_current(results: ResultSet, module: ModuleType | None, out: Path | None = None) -> bool:
    """Whether the report in `out` was drawn from these runs by this code (and is whole)."""
    folder = Path(out) if out else results.root / "report"
    try:
        stamp = json.loads((folder / DRAWN_FROM).read_text())
    except (OSError, ValueError):
        return False
    return (folder / "report.html").is_file() and stamp.get("digest") == drawn_from(results,
                                                                                    module)


def write(results: ResultSet, module: ModuleType | None, out: Path | None = None,
          log_scale: bool = False, run_ids: list[str] | None = None) -> Report:
    """The report of `results`; `module` is its workload's report (None: the common report)."""
    report = Report(Path(out) if out else results.root / "report")
    report.folder.mkdir(parents=True, exist_ok=True)
    (report.folder / DRAWN_FROM).unlink(missing_ok=True)
    if module is None:
        report.problems.append(f"no figures for the {results.workload!r} workload in this "
                               "version of the testbed: the common report only")
    report.figures = build_figures(results, module, log_scale, run_ids, report.problems)
    for stem, fig in report.figures.items():
        fig.savefig(report.folder / f"{stem}.png", dpi=110)
        fig.savefig(report.folder / f"{stem}.pdf")
        write_csv(report.folder / f"{stem}.data.csv", fig.analysis_data)
    for name, (columns, rows) in (module.tables(results) if module else {}).items():
        report.tables[name] = write_csv(report.folder / f"{name}.csv", rows, columns)
    report.html.write_text(render(results, report, log_scale, module))
    if not report.problems:
        # a report with problems is drawn again next time: they may be gone
        (report.folder / DRAWN_FROM).write_text(json.dumps(
            {"digest": drawn_from(results, module, log_scale, run_ids)}) + "\n")
    return report


def render(results: ResultSet, report: Report, log_scale: bool,
           module: ModuleType | None) -> str:
    meta = results.meta
    sections = [("Completeness", _completeness(results, module))]
    if module is not None:
        sections += module.sections(results, report, log_scale)
    sections += [("Points", _points(results)),
                 ("Parameters", html.key_values(dict(results.experiment))),
                 ("Kernel, stack and tools", _environment(meta)),
                 ("Link checks", _link_checks(meta)),
                 ("Link fidelity", _fidelity(results)),
                 ("Runs and pcaps", _runs(results, report, module))]
    if report.problems:
        sections.insert(1, ("Problems", "<ul>" + "".join(
            f"<li>{html.esc(p)}</li>" for p in report.problems) + "</ul>"))
    title = f"{results.name}: {results.experiment.get('description', 'experiment report')}"
    return html.page(title, sections)


def _metric_text(results: ResultSet, module: ModuleType | None) -> str:
    if module is not None and hasattr(module, "metric_definition"):
        return module.metric_definition(results)
    metric = results.matrix.get("metric", "")
    return f"{metric}: {results.matrix.get('metrics', {}).get(metric, '')}"


def _completeness(results: ResultSet, module: ModuleType | None) -> str:
    missing, unfinished = results.missing(), results.unfinished()
    intro = (f"<p>Workload: {html.esc(results.workload)}. Metric: "
             f"{html.esc(_metric_text(results, module))}. Full matrix: {len(results.expected)} "
             f"points (from {html.esc(results.expected_source)}); summary.csv has "
             f"{len(results.summary)}, runs.csv {len(results.runs)} runs.</p>")
    if not missing and not unfinished:
        return intro + '<p class="ok">Complete: every point of the matrix has a finished ' \
                       "interval (tight or capped).</p>"
    columns = results.point_columns
    rows = [[p["key"], *[p.get(c) for c in columns], "missing", 0] for p in missing]
    rows += [[p.get("point", ""), *[p.get(c) for c in columns], p.get("status") or "unknown",
              p.get("n")] for p in unfinished]
    return (intro + f'<p class="warn">Partial result set: {len(missing)} of '
            f"{len(results.expected)} points missing from summary.csv, {len(unfinished)} "
            "without a finished interval. Figures show what exists (unfinished points "
            "hollow); tables mark them.</p>"
            + html.table(["point", *columns, "state", "n"], rows))


def _points(results: ResultSet) -> str:
    """Every point with the deciding metric's mean and interval and every other metric's
    mean; all of them in summary.csv."""
    metric = results.matrix.get("metric") or "transfer_time_s"
    others = [m for m in results.matrix.get("metrics", {}) if m != metric]
    columns = results.point_columns
    headers = [*columns, "n", f"{metric} mean", "sd", "90% half-width",
               *[f"{m} mean" for m in others], "status", "failed runs", "flagged runs"]
    rows = [[*[p.get(c) for c in columns], p.get("n"), p.get(f"{metric}_mean"),
             p.get(f"{metric}_sd"), p.get(f"{metric}_ci90_half"),
             *[p.get(f"{m}_mean") for m in others], p.get("status"), p.get("runs_failed"),
             p.get("runs_flagged")] for p in results.summary]
    return html.table(headers, rows)


def _environment(meta: dict[str, Any]) -> str:
    testbed = meta.get("testbed", {})
    head = {"backend": meta.get("backend"), "kernel release": meta.get("kernel_release"),
            "clock": meta.get("clock"), "kernels seen": meta.get("kernels_seen"),
            "testbed commit": testbed.get("commit"), "tree dirty": testbed.get("dirty"),
            "seed": meta.get("seed")}
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
    return ("<p>Ping RTT of every link setting used, measured before the runs.</p>" +
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


def _runs(results: ResultSet, report: Report, module: ModuleType | None) -> str:
    metric = results.matrix.get("metric") or "transfer_time_s"
    extra = list(getattr(module, "RUN_TABLE", ()))
    rows = []
    for run in results.runs:
        pcap = run.get("pcap") or ""
        link = ""
        if pcap:
            rel = Path(os.path.relpath((results.root / pcap).resolve(), report.folder.resolve()))
            link = f'<a href="{html.esc(rel.as_posix())}">{html.esc(Path(pcap).name)}</a>'
        rows.append([html.cell(run["run_id"]), html.cell(run["status"]),
                     html.cell(run.get(metric)),
                     *[html.cell(run.get(column)) for column, _ in extra],
                     html.cell(run.get("queue_drops_data")), html.cell(run.get("loss_drops_data")),
                     html.cell(run.get("flagged")), f"<td>{link}</td>",
                     html.cell(run.get("reasons") or run.get("notes") or "")])
    note = module.pcap_note() if module is not None and hasattr(module, "pcap_note") else ""
    return note + html.table(["run", "status", metric, *[label for _, label in extra],
                              "queue drops (data direction)", "losses (data direction)",
                              "flagged", "pcap", "notes"], rows, raw=True)
