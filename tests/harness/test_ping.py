"""ping-rtt's experiment (experiments/ping-dualpath.toml) end to end in virtual time: both paths
of dualpath at 10 Mbit/s and 10 ms one way, clean and at 5% loss. Every run measured from its
pcap and agreeing with ping; the RTT the two one-way delays; losses only where the links lose;
the common report drawn.

Its clock is inf-cpu (computing free), so its times are the links' and the stacks' alone: with
computing charged (wall-cpu), a host that deschedules the kernel between ping's send and the
packet's capture charges the wait, and beside the other test worker's kernels one run's pcap
and ping drifted past the agreement limit."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from experiments.workloads.ping_rtt.measure import pcap_echoes
from experiments.workloads.ping_rtt.workload import AGREEMENT_MS
from tests.harness.conftest import harness, rows

ONE_WAY_MS = 10.0
COUNT = 20
SERVERS = ("10.1.2.1", "10.2.2.1")


@pytest.fixture(scope="module")
def ping_results(tmp_path_factory) -> Path:
    results = tmp_path_factory.mktemp("results")
    run = harness("run", "ping-dualpath", "--kernel", "uml-virtual", "--workers", "1",
                  "--results", str(results), timeout=1800,
                  env={"TESTBED_TIME_TRAVEL": "inf-cpu"})
    assert run.returncode == 0, run.stderr[-3000:]
    meta = json.loads((results / "ping-dualpath" / "meta.json").read_text())
    assert meta["clock"] == "virtual (time-travel=inf-cpu)"
    return results / "ping-dualpath"


def test_every_run_is_measured_and_pcap_and_ping_agree(ping_results):
    table = rows(ping_results / "runs.csv")
    assert {float(r["loss"]) for r in table} == {0.0, 0.05}
    assert 4 <= len(table) <= 6                       # 2 points, min 2 and max 3 runs each
    for run in table:
        assert run["status"] == "ok" and run["flagged"] == "False", run
        assert abs(float(run["pcap_ping_diff_ms"])) < AGREEMENT_MS, run
        for prefix in ("", "path2_"):
            assert run[f"{prefix}lost"] == run[f"{prefix}ping_lost"], run
            assert float(run[f"{prefix}rtt_mean_ms"]) <= float(run[f"{prefix}rtt_max_ms"])


def test_the_rtt_is_the_two_one_way_delays(ping_results):
    """Every echo in each pcap: the two delays, to 5 us (measured: 0 to 1.2 us over). No
    serialization time: a lone 98-byte echo finds htb's bucket full and leaves at once; and
    with computing free, none for the stacks either."""
    for run in rows(ping_results / "runs.csv"):
        seen = pcap_echoes(ping_results / run["pcap"], SERVERS)
        for server in SERVERS:
            rtts = seen[server].rtts_ms
            assert all(abs(rtt - 2 * ONE_WAY_MS) < 0.005 for rtt in rtts), (run["run_id"],
                                                                              server, rtts)
            assert seen[server].requests == COUNT


def test_losses_only_where_the_links_lose(ping_results):
    table = rows(ping_results / "runs.csv")
    clean = [r for r in table if float(r["loss"]) == 0]
    lossy = [r for r in table if float(r["loss"]) > 0]
    assert all(r["lost"] == "0" and r["path2_lost"] == "0" for r in clean)
    # 5% each way: an echo is lost with 9.75%, so among 80 or more, none lost is 0.02%
    assert sum(int(r["lost"]) + int(r["path2_lost"]) for r in lossy) > 0


def test_the_common_report_is_drawn(ping_results):
    report = harness("report", str(ping_results), timeout=600)
    assert report.returncode == 0, report.stderr[-2000:]
    assert (ping_results / "report" / "report.html").stat().st_size > 0
