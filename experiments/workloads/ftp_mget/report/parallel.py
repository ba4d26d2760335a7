"""E5's picture: what N parallel xftp connections do to a long fat path. Link utilization (the
file's bits over the session's interval and the path's rate) against N, a panel per loss ratio,
one line per router queue (the path) and TCP profile, error bars the 90% interval over the
runs; and a table with the throughput, the router's drops and the retransmissions per data
connection beside it. Everything from runs.csv (the runs that count)."""
from __future__ import annotations

import json
import math
from statistics import fmean
from typing import Any

import matplotlib

matplotlib.use("Agg")
from matplotlib.figure import Figure  # noqa: E402

from experiments.stats import interval  # noqa: E402
from experiments.workloads.ftp_mget.report.points import FtpResults  # noqa: E402
from experiments.workloads.ftp_mget.workload import STRIPED_VARIANTS  # noqa: E402

COLUMNS = ["path", "queue", "loss", "profile", "parallel", "n", "utilization_mean",
           "utilization_ci90_half", "throughput_mbps_mean", "queue_drops_mean",
           "retransmissions_per_connection_mean"]
LINESTYLES = ("-", "--", ":", "-.")


def striped_runs(results: FtpResults) -> list[dict[str, Any]]:
    return [r for r in results.runs if r["key"].variant in STRIPED_VARIANTS
            and r["status"] == "ok" and isinstance(r.get("transfer_time_s"), float)
            and isinstance(r.get("rate_bps"), float) and r["transfer_time_s"] > 0]


def has_figure(results: FtpResults) -> bool:
    return len({r["key"].parallel for r in striped_runs(results)}) > 1


def queue_label(value: Any) -> str:
    """'256 KB' or '50 packets' from runs.csv's queue column (JSON), or the text itself."""
    try:
        queue = json.loads(value) if isinstance(value, str) else value
    except json.JSONDecodeError:
        return str(value)
    if not isinstance(queue, dict):
        return str(value)
    if queue.get("unit") == "bytes":
        return f"{queue['limit'] / 1000:g} KB"
    return f"{queue.get('limit')} {queue.get('unit', '')}".strip()


def rows(results: FtpResults) -> list[dict[str, Any]]:
    """One row per point of the striped variant: utilization with its interval, and the
    means of throughput, router drops (data direction) and retransmissions per data
    connection (every connection but the control one)."""
    groups: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for run in striped_runs(results):
        k = run["key"]
        groups.setdefault((k.path, k.loss, k.profile, k.parallel), []).append(run)
    out = []
    for (path, loss, profile, parallel), runs in sorted(groups.items(), key=lambda g: g[0]):
        bits = [r["key"].files * r["key"].file_size * 8 for r in runs]
        use = [b / (r["transfer_time_s"] * r["rate_bps"]) for b, r in zip(bits, runs,
                                                                          strict=True)]
        ci = interval(use)
        drops = [float(r["queue_drops_data"]) for r in runs
                 if isinstance(r.get("queue_drops_data"), (int, float))]
        per_conn = [r["retransmissions"] / (r["connections"] - 1) for r in runs
                    if r.get("connections", 0) > 1]
        out.append({"path": path, "queue": queue_label(runs[0].get("queue")), "loss": loss,
                    "profile": profile, "parallel": parallel, "n": ci.n,
                    "utilization_mean": ci.mean, "utilization_ci90_half": ci.half_width,
                    "throughput_mbps_mean": fmean(b / r["transfer_time_s"] / 1e6
                                                  for b, r in zip(bits, runs, strict=True)),
                    "queue_drops_mean": fmean(drops) if drops else math.nan,
                    "retransmissions_per_connection_mean": fmean(per_conn) if per_conn
                    else math.nan})
    return out


def utilization_figure(results: FtpResults) -> Figure:
    table = rows(results)
    losses = sorted({r["loss"] for r in table})
    fig = Figure(figsize=(max(6.5, 5.5 * len(losses)), 4.4), layout="constrained")
    fig.analysis_data = table
    fig.suptitle(f"{results.name}: link utilization against parallel connections (xftp)")
    lines = sorted({(r["path"], r["queue"], r["profile"]) for r in table})
    for i, loss in enumerate(losses):
        ax = fig.add_subplot(1, len(losses), i + 1)
        ax.set_title(f"loss {100 * loss:g}% each way")
        ax.set_xlabel("parallel data connections N")
        if i == 0:
            ax.set_ylabel("utilization (file bits / interval / rate)")
        ax.set_ylim(0, 1.05)
        ax.grid(True, alpha=0.3)
        for j, (path, queue, profile) in enumerate(lines):
            mine = sorted((r for r in table if (r["path"], r["queue"], r["profile"]) ==
                           (path, queue, profile) and r["loss"] == loss),
                          key=lambda r: r["parallel"])
            if not mine:
                continue
            ax.errorbar([r["parallel"] for r in mine], [r["utilization_mean"] for r in mine],
                        yerr=[0.0 if math.isnan(r["utilization_ci90_half"]) or
                              math.isinf(r["utilization_ci90_half"])
                              else r["utilization_ci90_half"] for r in mine],
                        marker="o", capsize=3, linestyle=LINESTYLES[j % len(LINESTYLES)],
                        label=f"queue {queue}, {profile}")
        ax.legend(fontsize="small")
    return fig
