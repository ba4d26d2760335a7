"""Every figure built from the tiny result set shows what the result files hold: axes, one
series per variant, plotted means and interval half-widths equal to summary.csv, bar heights
equal to runs.csv's counters, time-sequences with the streams each variant uses."""
from __future__ import annotations

import csv
import json
from statistics import fmean

import pytest

from analysis import results
from experiments.tshark import SCTP_OPTIONS, fields
from experiments.workloads.ftp_mget import report as ftp_mget
from experiments.workloads.ftp_mget.report import figures
from experiments.workloads.ftp_mget.report.points import FtpResults
from experiments.workloads.ftp_mget.workload import WORKLOAD
from tests.analysis.conftest import VARIANTS


def load(folder):
    return FtpResults(results.load(folder))


def summary_rows(folder):
    with (folder / "summary.csv").open() as handle:
        return list(csv.DictReader(handle))


def series_name(variant: str) -> str:
    return "tcp (tcp-newreno)" if variant == "tcp" else variant


def test_transfer_time_figure_plots_the_summary(tiny_results):
    rs = load(tiny_results)
    fig = figures.transfer_time_figure(rs, "lan")
    axes = fig.get_axes()
    assert len(axes) == 1                                   # one panel per file size
    ax = axes[0]
    assert ax.get_xlabel() == figures.LOSS_LABEL and ax.get_ylabel() == figures.TIME_LABEL
    assert "10K" in ax.get_title() and "lan" in fig._suptitle.get_text()
    assert ax.get_yscale() == "linear"
    containers = {c.get_label(): c for c in ax.containers}
    assert set(containers) == {series_name(v) for v in VARIANTS}
    rows = summary_rows(tiny_results)
    for variant in VARIANTS:
        expected = sorted((float(r["loss"]), float(r["mean_s"]), float(r["ci90_half_s"]))
                          for r in rows if r["variant"] == variant)
        container = containers[series_name(variant)]
        line = container.lines[0]
        assert list(line.get_xdata()) == pytest.approx([e[0] for e in expected])
        assert list(line.get_ydata()) == pytest.approx([e[1] for e in expected])
        # error bar segments run from mean - h to mean + h
        segments = container.lines[2][0].get_segments()
        for (_, mean, half), seg in zip(expected, segments, strict=True):
            assert seg[0][1] == pytest.approx(mean - half, rel=1e-5)
            assert seg[1][1] == pytest.approx(mean + half, rel=1e-5)
    # the numbers saved alongside are the same
    assert len(fig.analysis_data) == len(rows)


def test_log_scale_option(tiny_results):
    rs = load(tiny_results)
    fig = figures.transfer_time_figure(rs, "lan", log_scale=True)
    assert fig.get_axes()[0].get_yscale() == "log"


def test_e2_style_title_with_tcp_and_naive_only(results_copy):
    path = results_copy / "summary.csv"
    rows = summary_rows(results_copy)
    keep = [r for r in rows if r["variant"] in ("tcp", "sctp-naive")]
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, list(rows[0]))
        writer.writeheader()
        writer.writerows(keep)
    rs = load(results_copy)
    rs.expected = [k for k in rs.expected if k.variant in ("tcp", "sctp-naive")]
    fig = figures.transfer_time_figure(rs, "lan")
    assert "TCP vs FTP over SCTP" in fig._suptitle.get_text()
    assert {c.get_label() for c in fig.get_axes()[0].containers} == \
        {"tcp (tcp-newreno)", "sctp-naive"}


def test_counters_figure_bars_equal_runs_csv(tiny_results):
    rs = load(tiny_results)
    fig = figures.counters_figure(rs, "lan")
    axes = fig.get_axes()
    assert len(axes) == len(figures.COUNTERS)  # one row per counter, one size
    with (tiny_results / "runs.csv").open() as handle:
        runs = [r for r in csv.DictReader(handle) if r["status"] == "ok"]
    losses = sorted({float(r["loss"]) for r in runs})
    for ax, (counter, _) in zip(axes, figures.COUNTERS, strict=True):
        assert counter in ax.get_ylabel()
        bars = {c.get_label(): c for c in ax.containers}
        assert set(bars) == {series_name(v) for v in VARIANTS}
        for variant in VARIANTS:
            heights = [patch.get_height() for patch in bars[series_name(variant)]]
            expected = [fmean(int(r[counter]) for r in runs if r["variant"] == variant
                              and float(r["loss"]) == loss) for loss in losses]
            assert heights == pytest.approx(expected)
    connections = {c.get_label(): [p.get_height() for p in c] for c in axes[0].containers}
    assert connections["sctp-ms"] == [1, 1] and connections["sctp-ms-cp"] == [1, 1]
    assert all(h == 4 for h in connections["sctp-naive"])   # control + NLST + 2 files


def test_time_sequence_of_chosen_runs(results_copy):
    rs = load(results_copy)
    chosen = ftp_mget.chosen_runs(rs)
    assert [r["key"].variant for r in chosen] == list(VARIANTS)
    assert all(r["key"].loss == 0.03 for r in chosen)
    # the report reads no pcap: without the runs' time-sequence files it says what is missing
    problems: list[str] = []
    assert ftp_mget.TIMESEQ_FILE not in ftp_mget.build_figures(rs.generic, problems=problems)
    assert len(problems) == len(chosen) and "testbed report" in problems[0]
    # the workload writes them from the pcaps, for the runs the report draws
    assert ftp_mget.runs_drawn(rs.generic) == [r["run_id"] for r in chosen]
    assert WORKLOAD.report_data(results_copy, ftp_mget.runs_drawn(rs.generic)) == []
    # one saved by another version of the reading is written again, the others are kept
    first, second = (results_copy / "runs" / r["run_id"] / "time_sequence.json"
                     for r in chosen[:2])
    stale = json.loads(first.read_text())
    first.write_text(json.dumps({**stale, "version": 0}))
    kept = second.stat().st_mtime_ns
    assert WORKLOAD.report_data(results_copy, ftp_mget.runs_drawn(rs.generic)) == []
    assert json.loads(first.read_text()) == stale and second.stat().st_mtime_ns == kept
    figs = ftp_mget.build_figures(rs.generic)
    fig = figs[ftp_mget.TIMESEQ_FILE]
    data = {d["run"].split(" ")[0]: d for d in fig.analysis_data}
    assert set(data) == {r["run_id"] for r in chosen}
    for run in chosen:
        d = data[run["run_id"]]
        assert d["data_marks"] > 0 and d["acks"] > 0
        variant = run["key"].variant
        if variant in ("sctp-ms", "sctp-ms-cp"):
            assert d["streams"] == [0, 1] and d["flows"] == 1
        elif variant == "sctp-naive":
            assert d["streams"] == [0] and d["flows"] == 4
        else:
            assert d["transport"] == "tcp" and d["flows"] == 4
    for ax in fig.get_axes():
        assert ax.get_xlabel().startswith("time")
        labels = ax.get_legend_handles_labels()[1]
        assert "cumulative ack" in labels
        assert any(label.startswith("data") for label in labels)
    # every data mark is a packet (TCP) or DATA chunk (SCTP) the server sent, counted here
    # from the pcap with tshark directly
    for run in chosen:
        pcap = results_copy / run["pcap"]
        if run["key"].variant == "tcp":
            server_data = len(fields(pcap, ["frame.number"], "ip.src == 10.0.2.1 && tcp.len > 0"))
        else:
            rows = fields(pcap, ["sctp.data_tsn"], "ip.src == 10.0.2.1 && sctp.chunk_type == 0",
                          SCTP_OPTIONS)
            server_data = sum(len([t for t in r[0].split("|") if t]) for r in rows)
        assert data[run["run_id"]]["data_marks"] == server_data, run["run_id"]
