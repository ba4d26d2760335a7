"""The http-page workload's part of a report (E4, HTTP over SCTP streams): the page time
against loss, a panel per path (bandwidth), TCP against SCTP with 90% intervals; and, for one
lossy point, when each of the page's objects completed in a TCP run and in an SCTP run (the
picture of head-of-line blocking: on TCP every object waits behind a hole in the one byte
stream, on SCTP only the objects on the stream with the hole).

Everything comes from the result folder: summary.csv for the figure and the table,
runs/<run>/objects.csv (every object's instants from the client's pcap) for the timeline."""
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
from experiments.workloads.base import KERNEL_SCTP  # noqa: E402

if TYPE_CHECKING:
    from analysis.report import Report

COLORS = {"tcp": "#1f77b4", "sctp": "#d62728", "sctp on usrsctp": "#ff7f0e"}
# the page's transports as the figures draw them: SCTP once per SCTP stack
SERIES = ("tcp", "sctp", "sctp on usrsctp")
METRICS = (("page_time_s", "page"), ("document_time_s", "document"),
           ("objects_time_s", "objects"))


def metric_definition(results: ResultSet) -> str:
    metric = results.matrix.get("metric", "page_time_s")
    return f"{metric}: {results.matrix.get('metrics', {}).get(metric, '')}"


def _num(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and math.isfinite(value) else None


def series(row: dict[str, Any]) -> str:
    """The transport a row ran, with the SCTP stack where it is not the kernel's: "tcp",
    "sctp", "sctp on usrsctp" (a usrsctp with sysctls of its own keeps them in its name)."""
    transport, sctp_stack = str(row.get("transport")), row.get("sctp_stack")
    # an empty cell (TCP's, or a set from before the axis) is read as NaN
    if transport != "sctp" or not isinstance(sctp_stack, str) or sctp_stack in ("", KERNEL_SCTP):
        return transport
    return f"sctp on {sctp_stack}"


def _paths(results: ResultSet) -> list[dict[str, Any]]:
    return list(results.experiment.get("paths", []))


def tables(results: ResultSet) -> dict[str, tuple[list[str], list[dict[str, Any]]]]:
    """pages.csv: per point, each interval's mean and 90% half-width."""
    columns = ["path", "loss", "document_size", "objects", "transport", "sctp_stack", "profile",
               "n", "status"]
    for metric, _ in METRICS:
        columns += [f"{metric}_mean", f"{metric}_ci90_half"]
    rows = sorted(results.summary, key=lambda r: (str(r.get("path")), r.get("loss", 0),
                                                  r.get("document_size", 0),
                                                  series(r)))
    return {"pages": (columns, rows)}


def build_figures(results: ResultSet, log_scale: bool = False,
                  run_ids: list[str] | None = None, problems: list[str] | None = None
                  ) -> dict[str, Figure]:
    problems = problems if problems is not None else []
    out: dict[str, Figure] = {}
    for size in sorted({r.get("document_size") for r in results.summary}, key=str):
        out[f"page_time_{size}B"] = page_time_figure(results, size, log_scale)
    pair = chosen_runs(results, run_ids)
    if pair:
        try:
            out["objects_timeline"] = timeline_figure(results, pair)
        except (OSError, ValueError, KeyError) as error:
            problems.append(f"object timeline: {error}")
    return out


def page_time_figure(results: ResultSet, document_size: Any, log_scale: bool) -> Figure:
    """Page time against loss, one panel per path, TCP and SCTP with their 90% intervals;
    hollow markers where a point has no finished interval."""
    paths = [p["name"] for p in _paths(results)] or sorted(
        {str(r.get("path")) for r in results.summary})
    fig = Figure(figsize=(max(6.0, 4.2 * len(paths)), 4), layout="constrained")
    fig.analysis_data = []
    fig.suptitle(f"{results.name}: page time against loss ({document_size} B document)")
    for i, path in enumerate(paths):
        ax = fig.add_subplot(1, len(paths), i + 1)
        ax.set_title(path)
        ax.set_xlabel("loss each way (%)")
        if i == 0:
            ax.set_ylabel("page time (s)")
        if log_scale:
            ax.set_yscale("log")
        ax.grid(True, alpha=0.3)
        for transport in _series_of(results.summary):
            rows = sorted((r for r in results.summary if str(r.get("path")) == path
                           and series(r) == transport
                           and r.get("document_size") == document_size),
                          key=lambda r: r.get("loss", 0))
            rows = [r for r in rows if _num(r.get("page_time_s_mean")) is not None]
            if not rows:
                continue
            x = [100 * float(r["loss"]) for r in rows]
            y = [float(r["page_time_s_mean"]) for r in rows]
            err = [_num(r.get("page_time_s_ci90_half")) or 0.0 for r in rows]
            ax.errorbar(x, y, yerr=err, color=COLORS.get(transport), marker="o", capsize=3,
                        label=_label(transport))
            hollow = [(a, b) for a, b, r in zip(x, y, rows, strict=True)
                      if r.get("status") not in FINISHED]
            if hollow:
                ax.scatter(*zip(*hollow, strict=True), facecolors="white",
                           edgecolors=COLORS.get(transport), zorder=3)
            for r in rows:
                fig.analysis_data.append({"path": path, "transport": transport,
                                          "loss": r["loss"], "n": r.get("n"),
                                          "page_time_s_mean": r["page_time_s_mean"],
                                          "page_time_s_ci90_half": r.get("page_time_s_ci90_half"),
                                          "status": r.get("status")})
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize="small")
    return fig


def _series_of(rows: list[dict[str, Any]]) -> list[str]:
    """The series the rows hold, TCP first, then SCTP on the kernel's and on other stacks."""
    present = {series(r) for r in rows}
    return [s for s in SERIES if s in present] + sorted(present - set(SERIES))


def _label(name: str) -> str:
    """"sctp on usrsctp" -> "SCTP on usrsctp": the transport in capitals, the stack as named."""
    transport, on, stack = name.partition(" on ")
    return transport.upper() + on + stack


def chosen_runs(results: ResultSet, run_ids: list[str] | None = None) -> list[dict[str, Any]]:
    """The runs whose objects are drawn: those asked for, else a TCP and an SCTP run of the
    lossiest point of the first path, each the run whose page time is nearest its point's
    mean."""
    if run_ids:
        return named_runs(results.runs, run_ids, results.root)
    ok = [r for r in results.runs if r.get("status") == "ok"
          and _num(r.get("page_time_s")) is not None]
    lossy = [r for r in ok if r.get("loss", 0) > 0]
    if not lossy:
        return []
    first_path = str(lossy[0].get("path"))
    worst = max(r["loss"] for r in lossy if str(r.get("path")) == first_path)
    out = []
    for transport in _series_of(lossy):
        mine = [r for r in lossy if str(r.get("path")) == first_path and r["loss"] == worst
                and series(r) == transport]
        if mine:
            mean = sum(r["page_time_s"] for r in mine) / len(mine)
            out.append(min(mine, key=lambda r: abs(r["page_time_s"] - mean)))
    return out


def read_objects(folder: Path) -> list[dict[str, str]]:
    with (folder / "objects.csv").open(newline="") as handle:
        return list(csv.DictReader(handle))


def timeline_figure(results: ResultSet, runs: list[dict[str, Any]]) -> Figure:
    """Per run, a bar per object from its request to its completion (a tick at its first
    byte), times from the document's request, read from the client's pcap."""
    fig = Figure(figsize=(10, 1.2 + 2.2 * len(runs)), layout="constrained")
    fig.analysis_data = []
    fig.suptitle("when each object completed (from the client's pcap)")
    for i, run in enumerate(runs):
        rows = read_objects(results.root / "runs" / run["run_id"])
        if not rows:
            raise ValueError(f"{run['run_id']}: objects.csv is empty")
        ax = fig.add_subplot(len(runs), 1, i + 1)
        ax.set_title(f"{run['run_id']} ({_label(series(run))})", fontsize="small")
        for row in rows:
            k = int(row["object"])
            start = float(row["request_s"])
            end = float(row["complete_s"]) if row["complete_s"] else math.nan
            ax.barh(k, end - start, left=start, color=COLORS.get(series(run)),
                    alpha=0.7)
            if row["first_byte_s"]:
                ax.plot([float(row["first_byte_s"])], [k], marker="|", color="black")
            fig.analysis_data.append({"run": run["run_id"], **row})
        ax.set_yticks(range(len(rows)), [f"{r['target']} (stream {r['stream']})" for r in rows],
                      fontsize="x-small")
        ax.invert_yaxis()
        ax.set_xlabel("seconds since the document's request")
        ax.grid(True, axis="x", alpha=0.3)
    return fig


def sections(results: ResultSet, report: Report, log_scale: bool) -> list[tuple[str, str]]:
    return [("Page time, TCP pipelining against SCTP streams", _table_html(results)
             + report.figure_block("page_time_")),
            ("Head-of-line blocking in one lossy run", report.figure_block("objects_")
             + "<p>Each bar runs from an object's request leaving the client to its last byte "
               "being deliverable there (TCP: in order on the connection; SCTP: in order on "
               "its stream); the tick is its first byte's arrival. "
               "runs/&lt;run&gt;/objects.csv holds the numbers, with httpc's own.</p>")]


def _table_html(results: ResultSet) -> str:
    rows = []
    for row in tables(results)["pages"][1]:
        cells = []
        for metric, _ in METRICS:
            mean, half = _num(row.get(f"{metric}_mean")), _num(row.get(f"{metric}_ci90_half"))
            cells.append("-" if mean is None else
                         f"{mean:.3g} ± {half:.2g}" if half is not None else f"{mean:.3g}")
        rows.append([row.get("path"), f"{100 * float(row.get('loss', 0)):g}%",
                     row.get("document_size"), row.get("objects"), series(row),
                     row.get("n"), *cells, row.get("status")])
    return ("<p>Per point: mean over the runs that count ± the half-width of the 90% "
            "Student-t interval (summary.csv; also <a href=\"pages.csv\">pages.csv</a>), "
            "seconds.</p>" + html.table(["path", "loss", "document B", "objects", "transport",
                                         "runs", *[f"{label} time" for _, label in METRICS],
                                         "status"], rows))
