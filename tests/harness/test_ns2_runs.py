"""bulk-flows in ns-2 through the harness (`testbed run` on a file with `simulator = "ns-2"`),
with no pinned kernel allowed to boot: every run recorded and analysed as a kernel run is, the
simulator and its pinned release in meta.json, a saturated clean bottleneck measured at the
payload's share of its rate, loss that costs throughput and causes timeouts, runs that repeat
exactly, and a second command that resumes and runs nothing again."""
from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from tests.harness.conftest import harness

pytestmark = pytest.mark.host

EXPERIMENT = """\
name = "ns2-check"
topology = "dumbbell"
workload = "bulk-flows"
simulator = "ns-2"
seed = 3

[network]
access_rate = "100Mbit"
access_delay = "2ms"
mtu = 1540
loss_on = "data"

# Two flows of 44 segments' window on a path of 83 packets' bandwidth-delay product: together
# they keep the bottleneck busy, and 100 packets of queue never overflow.
[[network.bottlenecks]]
name = "geo"
pairs = 2
rate = "2Mbit"
delay = "250ms"
queue = "100p"

[matrix]
loss = [0.0, 0.015]
tcp_profiles = ["tcp-sack-reno"]

[flows]
duration_s = 40
warmup_s = 10
stagger_s = 1.0
payload_bytes = 1488
rcvbuf_bytes = 65536
delayed_ack = false
sample_ms = 100

[repetitions]
min = 2
max = 2

[run]
timeout_s = 120
"""
METRICS = ("jain_index", "sctp_gain_pct", "utilization", "tcp_mbps", "sctp_mbps",
           "tcp_timeouts", "sctp_timeouts", "tcp_cwnd_segments", "sctp_cwnd_segments",
           "tcp_segments_per_100s", "sctp_segments_per_100s")


def rows(folder: Path) -> dict[str, dict[str, str]]:
    with (folder / "runs.csv").open() as handle:
        return {row["run_id"]: row for row in csv.DictReader(handle)}


def run_into(tmp_path: Path, results: Path):
    experiment = tmp_path / "ns2-check.toml"
    experiment.write_text(EXPERIMENT)
    return harness("run", str(experiment), "--results", str(results), "--workers", "2",
                   timeout=600)


@pytest.fixture(scope="module")
def twice(tmp_path_factory) -> tuple[Path, Path]:
    """The experiment into two results roots."""
    folders = []
    for name in ("first", "second"):
        tmp = tmp_path_factory.mktemp(name)
        done = run_into(tmp, tmp / "results")
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
        folders.append(tmp / "results" / "ns2-check")
    return folders[0], folders[1]


def test_every_run_is_recorded_and_analysed_with_no_kernel(twice):
    first, _ = twice
    runs = rows(first)
    assert len(runs) == 4 and {r["status"] for r in runs.values()} == {"ok"}
    for run_id, row in runs.items():
        assert all(row[m] not in ("", None) for m in METRICS), (run_id, row)
        assert row["notes"] == "no pcap"
        record = json.loads((first / "runs" / run_id / "result.json").read_text())
        assert record["simulator"]["name"] == "ns-2"
        assert record["simulator"]["agents"]["sctp"]["fastRtxTrigger_"] == 4
        assert (first / "runs" / run_id / "run.tcl").is_file()


def test_meta_names_the_simulator_and_its_pinned_release(twice):
    meta = json.loads((twice[0] / "meta.json").read_text())
    assert meta["backend"] == "ns-2" and meta["clock"] == "simulated"
    assert meta["kernel_release"].startswith("ns-2 2.35")
    assert meta["tools"]["ns2"].startswith("2.35")
    assert meta["experiment"]["simulator"] == "ns-2"


def test_a_saturated_clean_bottleneck_carries_the_payload_s_share_of_its_rate(twice):
    clean = [r for r in rows(twice[0]).values() if float(r["loss"]) == 0]
    for row in clean:
        # TCP's packets are 1488 + 40 bytes, SCTP's 1488 + 48: at most 97.4% is payload
        assert 0.95 <= float(row["utilization"]) <= 1488 / 1528 + 0.005, row
        assert float(row["jain_index"]) > 0.95
        assert float(row["tcp_timeouts"]) == 0 and float(row["sctp_timeouts"]) == 0


def test_loss_on_the_bottleneck_costs_throughput_and_causes_timeouts(twice):
    runs = rows(twice[0]).values()
    clean = min(float(r["utilization"]) for r in runs if float(r["loss"]) == 0)
    lossy = [r for r in runs if float(r["loss"]) > 0]
    assert all(float(r["utilization"]) < 0.6 * clean for r in lossy)
    assert sum(float(r["tcp_timeouts"]) + float(r["sctp_timeouts"]) for r in lossy) > 0


def test_the_runs_repeat_exactly(twice):
    first, second = (rows(folder) for folder in twice)
    assert first.keys() == second.keys()
    for run_id in first:
        assert [first[run_id][m] for m in METRICS] == [second[run_id][m] for m in METRICS]


def test_a_second_command_resumes_and_runs_nothing_again(twice, tmp_path):
    first = twice[0]
    records = sorted(first.glob("runs/*/result.json"))
    written = [p.stat().st_mtime_ns for p in records]
    done = run_into(tmp_path, first.parent)
    assert done.returncode == 0, done.stderr[-2000:]
    assert [p.stat().st_mtime_ns for p in records] == written
    assert "round 1" not in done.stdout


def test_slurm_is_refused_with_what_to_do(tmp_path):
    experiment = tmp_path / "ns2-check.toml"
    experiment.write_text(EXPERIMENT)
    refused = harness("run", str(experiment), "--results", str(tmp_path / "results"), "--slurm",
                      timeout=120)
    assert refused.returncode == 2
    assert refused.stderr.strip() == ("error: ns2-check runs in ns-2 on this host, a run in "
                                      "seconds: drop --slurm (or [run.slurm])")
