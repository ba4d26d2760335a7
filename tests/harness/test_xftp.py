"""E5's smoke experiment (experiments/xftp-smoke.toml) end to end in virtual time: one 1 MB file
over the T1 GEO path with the period's 64 KB window, over 1 and over 4 xftp connections. Every
run byte-exact and measured from its pcap; the server's data connections counted in the pcap;
and the study's effect read from the runs: one connection is held to its window (64 KB per
558 ms round trip, 61% of the link), four add their windows and fill the link."""
from __future__ import annotations

import csv
import json
import subprocess
from pathlib import Path

import pytest

from tests.harness.conftest import harness, run_in_virtual_time
from topology.net.path import SERVER_IP

RATE_BPS = 1_536_000
RTT_S = 0.558
WINDOW_BYTES = 65_535
FILE_BYTES = 1 << 20


@pytest.fixture(scope="module")
def xftp_smoke(tmp_path_factory) -> Path:
    results = tmp_path_factory.mktemp("results")
    return run_in_virtual_time("xftp-smoke", results)


def runs(results: Path) -> list[dict[str, str]]:
    with (results / "runs.csv").open() as handle:
        return list(csv.DictReader(handle))


def opened_by_server(pcap: Path) -> int:
    """Distinct TCP connections whose SYN the server sent: xftp's data connections."""
    out = subprocess.run(["tshark", "-r", str(pcap), "-Y",
                          f"ip.src=={SERVER_IP} && tcp.flags.syn==1 && tcp.flags.ack==0",
                          "-T", "fields", "-e", "tcp.srcport", "-e", "tcp.dstport"],
                         capture_output=True, text=True, check=True, timeout=120).stdout
    return len(set(out.split("\n")) - {""})


def unclosed(pcap: Path) -> set[tuple[str, str]]:
    """The TCP connections of a pcap (by stream) and the ends of each whose FIN it lacks."""
    out = subprocess.run(["tshark", "-r", str(pcap), "-T", "fields", "-e", "tcp.stream",
                          "-e", "ip.src", "-e", "tcp.flags.fin", "-Y", "tcp"],
                         capture_output=True, text=True, check=True, timeout=120).stdout
    ends, closed = set(), set()
    for stream, source, fin in (line.split("\t") for line in out.splitlines() if line):
        ends.add((stream, source))
        if fin in ("1", "True"):
            closed.add((stream, source))
    return ends - closed


def test_every_run_is_whole_and_measured(xftp_smoke):
    table = runs(xftp_smoke)
    assert sorted((r["variant"], r["parallel"]) for r in table) == \
        [("xftp", "1")] * 2 + [("xftp", "4")] * 2
    for run in table:
        # the pcap and the client's clock agree (a run is flagged past 1 ms; the client's
        # reads of 4 connections' accepts and blocks cost the kernel's clock a little)
        assert run["status"] == "ok" and abs(float(run["pcap_client_diff_ms"])) < 5, run
        assert float(run["transfer_time_s"]) > 0
        record = json.loads((xftp_smoke / "runs" / run["run_id"] / "result.json").read_text())
        assert record["status"] == "ok" and not record["reasons"]
        assert record["params"]["parallel"] == int(run["parallel"])
        # in virtual time the capture runs in block mode: drained, it wrote all it was handed
        # while the run's pcap was open, the connections' closes with it
        capture = record["capture"]
        assert record["capture_mode"] == "block" and capture["drain_ms"] >= 0
        assert capture["dropped"] == 0 and capture["captured"] == capture["received"] > 0
        # the listing and the file, each over N connections the server opened
        pcap = xftp_smoke / run["pcap"]
        assert opened_by_server(pcap) == 2 * int(run["parallel"]), run["run_id"]
        assert unclosed(pcap) == set(), run["run_id"]
        assert int(run["queue_drops_data"]) >= 0


def test_one_window_caps_one_connection_and_four_fill_the_link(xftp_smoke):
    times: dict[str, list[float]] = {"1": [], "4": []}
    for run in runs(xftp_smoke):
        times[run["parallel"]].append(float(run["transfer_time_s"]))
    one, four = min(times["1"]), max(times["4"])
    # N = 1: at most a window per round trip, so the file takes at least this long
    window_bound_s = FILE_BYTES / WINDOW_BYTES * RTT_S
    assert one > 0.9 * window_bound_s, (one, window_bound_s)
    # N = 4: close to the link's own serialization time (plus slow start and round trips)
    link_s = FILE_BYTES * 8 / RATE_BPS
    assert four < one / 1.3, (four, one)
    assert four < 2 * link_s, (four, link_s)


def test_the_report_draws_utilization_against_parallel_connections(xftp_smoke):
    report = harness("report", str(xftp_smoke), timeout=600)
    assert report.returncode == 0, report.stderr[-2000:]
    folder = xftp_smoke / "report"
    assert (folder / "parallel_utilization.png").stat().st_size > 10_000
    with (folder / "parallel.csv").open() as handle:
        table = {row["parallel"]: row for row in csv.DictReader(handle)}
    assert sorted(table) == ["1", "4"]
    for n, row in table.items():
        times = [float(r["transfer_time_s"]) for r in runs(xftp_smoke) if r["parallel"] == n]
        expected = sum(FILE_BYTES * 8 / (t * RATE_BPS) for t in times) / len(times)
        assert float(row["utilization_mean"]) == pytest.approx(expected, rel=1e-4)
        assert row["queue"] == "256 KB" and int(row["n"]) == len(times)
    assert float(table["4"]["utilization_mean"]) > float(table["1"]["utilization_mean"])
    assert "Parallel connections (xftp)" in (folder / "report.html").read_text()
