"""The figures, as matplotlib Figure objects (report.py saves them): what the studies published
(transfer time against loss ratio, per path, one panel per file size, one line per variant,
90% intervals as error bars) and the per-run diagnostics (counters per variant from runs.csv,
a time-sequence plot of chosen runs from their pcaps, the time per file by phase, and a
per-file timeline of chosen runs from their phases.csv).

Every figure keeps the numbers it plots in `fig.analysis_data` (a list of dicts), which the
report writes beside it as CSV and the tests compare with the result files."""
from __future__ import annotations

import math
from statistics import fmean
from typing import Any

import matplotlib

matplotlib.use("Agg")
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402

from experiments.tshark.transport import TimeSequence  # noqa: E402
from experiments.workloads.ftp_mget.phases import PHASES  # noqa: E402
from experiments.workloads.ftp_mget.report.points import FtpResults, size_label  # noqa: E402
from experiments.workloads.ftp_mget.workload import TCP_VARIANTS  # noqa: E402

SERIES_STYLE: dict[str, dict[str, str]] = {
    "tcp": {"color": "#1f77b4", "marker": "o"},
    "sctp-naive": {"color": "#d62728", "marker": "s"},
    "sctp-ms": {"color": "#2ca02c", "marker": "^"},
    "sctp-ms-cp": {"color": "#9467bd", "marker": "D"},
    "tcp-pipelined": {"color": "#ff7f0e", "marker": "v"},
}
LINESTYLES = ("-", "--", ":", "-.")
COUNTERS = (("connections", "connections / associations opened"),
            ("retransmissions", "retransmissions"), ("timeouts", "timeouts"))
TIME_LABEL = "transfer time (s)"
LOSS_LABEL = "packet loss ratio (each direction)"


def _style(series: str, index: int) -> dict[str, Any]:
    variant = series.split(" ")[0]
    style = dict(SERIES_STYLE.get(variant, {"marker": "x"}))
    # a second TCP profile or stack profile: same colour, other dash
    if (variant in TCP_VARIANTS and "(" in series) or "[" in series:
        style["linestyle"] = LINESTYLES[index % len(LINESTYLES)]
    return style


def _rate(bps: float) -> str:
    return f"{bps / 1e6:g} Mbit/s" if bps >= 1e6 else f"{bps / 1e3:g} kbit/s"


def path_title(results: FtpResults, path: str) -> str:
    info = results.path_info(path)
    if "rate_bps" in info:
        return f"{path} ({_rate(info['rate_bps'])}, {info['delay_s'] * 1000:g} ms one way)"
    return path


def figure_title(results: FtpResults, path: str) -> str:
    variants = results.variants()
    if set(variants) <= {"tcp", "sctp-naive"}:
        kind = "FTP over TCP vs FTP over SCTP"        # E2 (fcs)
    else:
        kind = "FTP variants"                          # E1 (multistream)
    return f"{results.name}: {kind}, {path_title(results, path)}"


def transfer_time_figure(results: FtpResults, path: str, log_scale: bool = False) -> Figure:
    """Transfer time against loss ratio on one path: a panel per file size, a line per variant
    (tcp per profile), error bars the 90% interval. Points with no finished interval are drawn
    hollow; points with no runs at all are absent (the report lists them)."""
    sizes = sorted({p.key.file_size for p in results.points if p.key.path == path} |
                   {k.file_size for k in results.expected if k.path == path})
    columns = min(len(sizes), 3) or 1
    rows = max(1, math.ceil(len(sizes) / columns))
    fig = Figure(figsize=(max(6.5, 5.2 * columns), 4.0 * rows), layout="constrained")
    fig.analysis_data = []
    fig.suptitle(figure_title(results, path))
    all_series = results.series()
    for i, size in enumerate(sizes or [0]):
        ax = fig.add_subplot(rows, columns, i + 1)
        files = {p.key.files for p in results.points if p.key.path == path} or \
                {k.files for k in results.expected}
        ax.set_title(f"{next(iter(files), '?')} files of {size_label(size)}")
        ax.set_xlabel(LOSS_LABEL)
        ax.set_ylabel(TIME_LABEL)
        ax.grid(True, alpha=0.3)
        for j, series in enumerate(all_series):
            points = sorted((p for p in results.points
                             if p.key.path == path and p.key.file_size == size
                             and p.key.series == series and p.usable), key=lambda p: p.key.loss)
            if not points:
                continue
            x = [p.key.loss for p in points]
            y = [p.mean_s for p in points]
            err = [p.ci90_half_s if math.isfinite(p.ci90_half_s) else 0.0 for p in points]
            style = _style(series, j)
            ax.errorbar(x, y, yerr=err, label=series, capsize=3, **style)
            hollow = [p for p in points if p.status not in ("tight", "capped")]
            if hollow:
                ax.plot([p.key.loss for p in hollow], [p.mean_s for p in hollow],
                        linestyle="none", marker=style["marker"], markersize=11,
                        markerfacecolor="white", markeredgecolor=style.get("color", "k"),
                        label="_unfinished")
            for p in points:
                fig.analysis_data.append({"path": path, "file_size": size, "series": series,
                                          "loss": p.key.loss, "mean_s": p.mean_s,
                                          "ci90_half_s": p.ci90_half_s, "n": p.n,
                                          "status": p.status})
        if log_scale:
            ax.set_yscale("log", nonpositive="clip")
        else:
            ax.set_ylim(bottom=0)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize="small")
    return fig


def counters_figure(results: FtpResults, path: str) -> Figure:
    """Per variant, the mean per counted run of connections/associations opened,
    retransmissions and timeouts (from runs.csv): a row per counter, a panel per file size,
    bars grouped by loss ratio."""
    runs = [r for r in results.runs if r["key"].path == path and r.get("status") == "ok"]
    sizes = sorted({r["key"].file_size for r in runs})
    losses = sorted({r["key"].loss for r in runs})
    all_series = [s for s in results.series() if any(r["key"].series == s for r in runs)]
    fig = Figure(figsize=(max(7.0, 4.6 * len(sizes)), 3.2 * len(COUNTERS)),
                 layout="constrained")
    fig.analysis_data = []
    fig.suptitle(f"{results.name}: per-run counters, {path_title(results, path)}")
    width = 0.8 / max(1, len(all_series))
    for row, (counter, label) in enumerate(COUNTERS):
        for col, size in enumerate(sizes or [0]):
            ax = fig.add_subplot(len(COUNTERS), max(1, len(sizes)),
                                 row * max(1, len(sizes)) + col + 1)
            ax.set_title(f"{label}, files of {size_label(size)}", fontsize="medium")
            ax.set_xlabel(LOSS_LABEL)
            ax.set_ylabel(f"{counter} per run (mean)")
            ax.set_xticks(range(len(losses)), [f"{loss:g}" for loss in losses])
            for j, series in enumerate(all_series):
                heights = []
                for loss in losses:
                    values = [r[counter] for r in runs if r["key"].series == series
                              and r["key"].file_size == size and r["key"].loss == loss]
                    heights.append(fmean(values) if values else 0.0)
                    if values:
                        fig.analysis_data.append({"path": path, "file_size": size,
                                                  "series": series, "loss": loss,
                                                  "counter": counter, "mean": heights[-1],
                                                  "runs": len(values)})
                offsets = [k + (j - (len(all_series) - 1) / 2) * width
                           for k in range(len(losses))]
                ax.bar(offsets, heights, width, label=series,
                       color=_style(series, j).get("color"))
            if row == 0 and col == 0 and all_series:
                ax.legend(fontsize="x-small", loc="best", framealpha=0.8)
    return fig


def _runs_grid(title: str, labels: list[str], panel_height: float) -> tuple[Figure, list[Any]]:
    """A figure of one panel per chosen run, two abreast, each titled with its run."""
    columns, rows = min(2, max(1, len(labels))), math.ceil(len(labels) / 2)
    fig = Figure(figsize=(6.0 * columns, panel_height * rows), layout="constrained")
    fig.analysis_data = []
    fig.suptitle(title)
    axes = []
    for i, label in enumerate(labels):
        ax = fig.add_subplot(rows, columns, i + 1)
        ax.set_title(label, fontsize="medium")
        axes.append(ax)
    return fig, axes


def time_sequence_figure(title: str, panels: list[tuple[str, TimeSequence]]) -> Figure:
    """Data sent by the server and the client's cumulative acks over time, one panel per run;
    SCTP data coloured per stream (0: control, 1: data), retransmissions marked."""
    fig, axes = _runs_grid(title, [label for label, _ in panels], 4.2)
    stream_colors = {0: "#ff7f0e", 1: "#1f77b4"}
    for ax, (label, seq) in zip(axes, panels, strict=True):
        ax.set_xlabel("time since capture start (s)")
        ax.set_ylabel(seq.unit)
        names = ({0: "control connection", 1: "data connections"} if seq.transport == "tcp"
                 else {0: "stream 0", 1: "stream 1"})
        for stream in seq.streams():
            marks = [m for m in seq.data if m.stream == stream and not m.retransmission]
            ax.plot([m.time_s for m in marks], [m.value for m in marks], linestyle="none",
                    marker=".", markersize=3, color=stream_colors.get(stream, "#7f7f7f"),
                    label=f"data, {names.get(stream, f'stream {stream}')}")
        retrans = [m for m in seq.data if m.retransmission]
        if retrans:
            ax.plot([m.time_s for m in retrans], [m.value for m in retrans], linestyle="none",
                    marker="x", markersize=6, color="#d62728", label="retransmission")
        for flow in sorted({m.flow for m in seq.acks}):  # one step line per connection
            acks = [m for m in seq.acks if m.flow == flow]
            ax.step([m.time_s for m in acks], [m.value for m in acks], where="post",
                    color="#2ca02c", linewidth=1,
                    label="cumulative ack" if flow == seq.acks[0].flow else "_ack")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize="x-small", loc="upper left")
        fig.analysis_data.append({"run": label, "transport": seq.transport, "flows": seq.flows,
                                  "data_marks": len(seq.data), "acks": len(seq.acks),
                                  "retransmissions": len(retrans), "streams": seq.streams()})
    return fig


def two_paths_figure(title: str, panels: list[tuple[str, dict[str, Any]]]) -> Figure:
    """Each path's new data delivered over time (paths.TRACE_FILE), one panel per run: where
    the data went when path 1 failed, how long nothing came, and when path 1 came back."""
    fig, axes = _runs_grid(title, [label for label, _ in panels], 4.0)
    colors = {1: "#1f77b4", 2: "#ff7f0e"}
    for ax, (label, trace) in zip(axes, panels, strict=True):
        ax.set_xlabel("time since the first data (s)")
        ax.set_ylabel("new data delivered (MB)")
        for k in (1, 2):
            new = trace[f"path{k}"]["new"]
            if new:
                ax.step([t for t, _ in new], [b / 1e6 for _, b in new], where="post",
                        color=colors[k], label=f"path {k}")
            rtx = trace[f"path{k}"]["retransmissions"]
            if rtx:
                ax.plot(rtx, [0.0] * len(rtx), linestyle="none", marker="|", markersize=9,
                        color=colors[k], label=f"retransmissions, path {k}")
        for key, text in (("failed_s", "path 1 down"), ("restored_s", "path 1 back")):
            if trace.get(key) is not None:
                ax.axvline(trace[key], color="#d62728" if key == "failed_s" else "#2ca02c",
                           linestyle="--", linewidth=1, label=text)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize="x-small", loc="upper left")
        fig.analysis_data.append({"run": label, **{f"path{k}_new": len(trace[f"path{k}"]["new"])
                                                   for k in (1, 2)},
                                  "failed_s": trace.get("failed_s")})
    return fig


PHASE_STYLE = (("listing", "#c7c7c7"), ("gap", "#8c564b"), ("retry", "#e377c2"),
               ("request", "#ff7f0e"), ("setup", "#d62728"), ("data", "#1f77b4"),
               ("close", "#9467bd"), ("reply", "#2ca02c"))


def phases_figure(results: FtpResults, path: str) -> Figure:
    """Where the time per file went on one path: a panel per file size, a stacked bar per
    series and loss ratio of the mean time per file in each phase (runs.csv's phase_*_s,
    averaged over the point's counted runs), so a bar is as tall as the transfer time per
    file."""
    runs = [r for r in results.runs if r["key"].path == path and r.get("status") == "ok"
            and isinstance(r.get("phase_data_s"), float)]
    sizes = sorted({r["key"].file_size for r in runs})
    losses = sorted({r["key"].loss for r in runs})
    all_series = [s for s in results.series() if any(r["key"].series == s for r in runs)]
    fig = Figure(figsize=(max(7.0, 1.2 * len(losses) * max(1, len(all_series))),
                          3.6 * max(1, len(sizes))), layout="constrained")
    fig.analysis_data = []
    fig.suptitle(f"{results.name}: time per file by phase, {path_title(results, path)}")
    width = 0.8 / max(1, len(all_series))
    for row, size in enumerate(sizes or [0]):
        ax = fig.add_subplot(max(1, len(sizes)), 1, row + 1)
        files = next((r["key"].files for r in runs if r["key"].file_size == size), "?")
        ax.set_title(f"{files} files of {size_label(size)}; bars left to right: "
                     f"{', '.join(all_series)}", fontsize="medium")
        ax.set_xlabel(LOSS_LABEL)
        ax.set_ylabel("time per file (s)")
        ax.set_xticks(range(len(losses)), [f"{loss:g}" for loss in losses])
        for j, series in enumerate(all_series):
            for k, loss in enumerate(losses):
                chosen = [r for r in runs if r["key"].series == series
                          and r["key"].file_size == size and r["key"].loss == loss]
                if not chosen:
                    continue
                x = k + (j - (len(all_series) - 1) / 2) * width
                bottom = 0.0
                entry: dict[str, Any] = {"path": path, "file_size": size, "series": series,
                                         "loss": loss, "runs": len(chosen)}
                for phase, color in PHASE_STYLE:
                    # (a run analysed before retries had a phase has none: 0)
                    height = fmean(r.get(f"phase_{phase}_s") or 0.0 for r in chosen)
                    ax.bar(x, height, width * 0.92, bottom=bottom, color=color,
                           edgecolor=_style(series, j).get("color", "k"), linewidth=0.8,
                           label=phase if j == 0 and k == 0 else "_phase")
                    bottom += height
                    entry[f"{phase}_s"] = height
                entry["total_s"] = bottom
                fig.analysis_data.append(entry)
        ax.grid(True, axis="y", alpha=0.3)
        if row == 0:
            ax.legend(fontsize="x-small", loc="upper left", ncols=4)
    return fig


def timeline_figure(title: str, panels: list[tuple[str, list[dict[str, Any]],
                                                  list[dict[str, Any]]]]) -> Figure:
    """One run per panel: a row per transfer (the listing, then each file) from its slice's
    start to its end, coloured by phase in order, and its stalls marked below it."""
    fig = Figure(figsize=(11.0, 1.2 + sum(0.9 + 0.22 * len(p[1]) for p in panels)),
                 layout="constrained")
    fig.analysis_data = []
    fig.suptitle(title)
    colors = dict(PHASE_STYLE)
    heights = [max(1, len(p[1])) for p in panels]
    axes = fig.subplots(len(panels), 1, squeeze=False, gridspec_kw={"height_ratios": heights})
    for ax, (label, phases, stalls) in zip(axes[:, 0], panels, strict=True):
        ax.set_title(label, fontsize="medium")
        for row in phases:
            y = -row["item"]
            start = row["start_s"]
            for phase in PHASES:
                span = row.get(f"{phase}_s", 0.0)
                if span > 0:
                    ax.barh(y, span, left=start, height=0.7,
                            color=colors["listing" if row["item"] == 0 else phase])
                start += span
            fig.analysis_data.append({"run": label, "item": int(row["item"]),
                                      "start_s": row["start_s"], "end_s": row["end_s"]})
        for stall in stalls:
            ax.plot([stall["start_s"], stall["end_s"]], [-stall["item"] - 0.45] * 2,
                    color="black", linewidth=2.5, solid_capstyle="butt")
        ax.set_yticks([-r["item"] for r in phases],
                      ["listing" if r["item"] == 0 else f"file {int(r['item'])}"
                       for r in phases], fontsize="x-small")
        ax.set_xlabel("time since the session's start (s)")
        ax.grid(True, axis="x", alpha=0.3)
    handles = [Patch(color=c, label=p) for p, c in PHASE_STYLE]
    handles.append(Line2D([], [], color="black", linewidth=2.5,
                                           label="stall"))
    axes[0, 0].legend(handles=handles, loc="upper right", ncols=len(handles) // 2 + 1,
                      fontsize="x-small", framealpha=0.85)
    return fig
