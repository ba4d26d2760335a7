"""An experiment through the Slurm job-array path on a real one-node Slurm: every run done
once, an array task cancelled in mid-run redone in the next round, results of the same kind as
a local run's, Ctrl-C cancelling the job it submitted and nothing else."""
from __future__ import annotations

import csv
import json
import re
import signal
import subprocess
import time
from pathlib import Path

from tests.slurm.cluster import OneNodeCluster

REPO = Path(__file__).resolve().parents[2]
PYTHON = "/usr/bin/python3"
EXPERIMENT = """\
name = "{name}"
description = "four runs through a Slurm job array"
metric = "nlst150-to-last226"

[network]
queue = "500KB"

[[network.paths]]
name = "lan"
rate = "3Mbit"
delay = "1ms"

[matrix]
loss = [0.0]
file_sizes = ["200K"]
files = 10
variants = ["tcp", "sctp-ms"]
tcp_profiles = ["tcp-newreno"]

[repetitions]
min = 2
max = 2

[run]
timeout_s = 120

[run.slurm]
task_runs = 1
memory = "1500M"
"""


def experiment(folder: Path, name: str) -> Path:
    path = folder / f"{name}.toml"
    path.write_text(EXPERIMENT.format(name=name))
    return path


def start(cluster: OneNodeCluster, toml: Path, results: Path, log: Path,
          *options: str) -> subprocess.Popen:
    return subprocess.Popen([PYTHON, "-m", "testbed", "run", str(toml), "--results",
                             str(results), *options], cwd=REPO, env=cluster.env,
                            stdout=log.open("w"), stderr=subprocess.STDOUT)


def wait_for(condition, limit_s: float, what: str):
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        found = condition()
        if found:
            return found
        time.sleep(0.2)
    raise AssertionError(f"not within {limit_s:.0f} s: {what}")


def rows(path: Path) -> list[dict[str, str]]:
    with path.open() as handle:
        return list(csv.DictReader(handle))


def test_every_run_once_and_a_cancelled_task_redone(cluster, tmp_path):
    toml = experiment(tmp_path, "array")
    results, log = tmp_path / "results", tmp_path / "coordinator.log"
    ledger = results / "array"
    coordinator = start(cluster, toml, results, log, "--slurm")
    try:
        job = wait_for(lambda: re.search(r"Slurm job (\d+), 4 tasks", log.read_text()), 60,
                       "the job submitted")[1]
        task1 = wait_for(lambda: sorted((ledger / ".work").glob("*round-1-slurm-*-task1.json")),
                         10, "task 1's batch file")[0]
        (victim,) = [run["id"] for run in json.loads(task1.read_text())["runs"]]
        # in mid-run: the kernel has booted and begun the run, whose record is not yet written
        wait_for(lambda: (ledger / "runs" / victim).is_dir(), 120, f"{victim} started")
        assert not (ledger / "runs" / victim / "result.json").exists()
        cancelled_at = time.time()
        subprocess.run(["scancel", f"{job}_1"], env=cluster.env, check=True)
        assert coordinator.wait(timeout=900) == 0, log.read_text()[-3000:]
    finally:
        if coordinator.poll() is None:
            coordinator.kill()
    output = log.read_text()
    assert f"Slurm task {job}_1 was cancelled" in output
    assert "round 2: Slurm job" in output
    # redone in round 2, once; every other run ran once, in round 1
    (redo,) = [p for p in (ledger / ".work").glob("*round-2-slurm-*")
               if re.fullmatch(r".*-task\d+\.json", p.name)]
    assert [run["id"] for run in json.loads(redo.read_text())["runs"]] == [victim]
    record = json.loads((ledger / "runs" / victim / "result.json").read_text())
    assert record["status"] == "ok" and record["started"] > cancelled_at
    runs = rows(ledger / "runs.csv")
    assert sorted(r["run_id"] for r in runs) == sorted(
        p.name for p in (ledger / "runs").iterdir())
    assert len(runs) == 4 and {r["status"] for r in runs} == {"ok"}
    assert all(float(r["transfer_time_s"]) > 5 for r in runs)  # 2 MB at 3 Mbit/s
    # each run names the node that ran it; each batch its Slurm job and task
    meta = json.loads((ledger / "meta.json").read_text())
    assert [h["host"] for h in meta["hosts"]] == [cluster_node(cluster)]
    batches = [json.loads(p.read_text()) for p in (ledger / ".work").glob("*.metadata.json")]
    tasks = {(b["slurm"]["array_job_id"], b["slurm"]["array_task_id"]) for b in batches}
    assert {(job, "0"), (job, "2"), (job, "3")} <= tasks
    assert cluster.squeue() == []

    # the same experiment run here: the same points, columns and kind of numbers
    local = tmp_path / "local"
    here = subprocess.run([PYTHON, "-m", "testbed", "run", str(toml), "--results", str(local),
                           "--workers", "2"], cwd=REPO, capture_output=True, text=True,
                          timeout=900)
    assert here.returncode == 0, here.stderr[-3000:]
    local_runs = rows(local / "array" / "runs.csv")
    assert list(local_runs[0]) == list(runs[0])
    assert sorted(r["run_id"] for r in local_runs) == sorted(r["run_id"] for r in runs)
    slurm_summary, local_summary = rows(ledger / "summary.csv"), rows(local / "array" /
                                                                       "summary.csv")
    assert list(slurm_summary[0]) == list(local_summary[0])
    for ours, theirs in zip(sorted(slurm_summary, key=lambda r: r["point"]),
                            sorted(local_summary, key=lambda r: r["point"]), strict=True):
        assert ours["point"] == theirs["point"]
        assert abs(float(ours["mean_s"]) / float(theirs["mean_s"]) - 1) < 0.05


def cluster_node(cluster: OneNodeCluster) -> str:
    out = subprocess.run(["sinfo", "-h", "-o", "%n"], env=cluster.env, capture_output=True,
                         text=True, check=True).stdout
    return out.strip()


def test_interrupt_cancels_its_own_job_only(cluster, tmp_path):
    other = subprocess.run(["sbatch", "--parsable", "--job-name=not-ours", "--mem=100M",
                            f"--output={tmp_path}/other.log", "--wrap", "sleep 300"],
                           env=cluster.env, capture_output=True, text=True, check=True)
    other_id = other.stdout.strip().split(";")[0]
    toml = experiment(tmp_path, "interrupted")
    log = tmp_path / "coordinator.log"
    coordinator = start(cluster, toml, tmp_path / "results", log, "--slurm")
    try:
        job = wait_for(lambda: re.search(r"Slurm job (\d+),", log.read_text()), 60,
                       "the job submitted")[1]
        wait_for(lambda: any(line.startswith(f"{job}_") and "RUNNING" in line
                             for line in cluster.squeue()), 120, "a task running")
        coordinator.send_signal(signal.SIGINT)
        assert coordinator.wait(timeout=120) == 130, log.read_text()[-2000:]
    finally:
        if coordinator.poll() is None:
            coordinator.kill()
    assert "interrupted" in log.read_text()
    wait_for(lambda: not any(line.startswith(f"{job}") for line in cluster.squeue()), 60,
             f"job {job} gone from the queue")
    assert any(line.startswith(f"{other_id} ") for line in cluster.squeue()), \
        "a job the harness did not submit was touched"
    subprocess.run(["scancel", other_id], env=cluster.env, check=True)
    wait_for(lambda: cluster.squeue() == [], 60, "the queue empty")
