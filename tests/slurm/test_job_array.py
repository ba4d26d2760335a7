"""Experiments through the Slurm job-array path on a real one-node Slurm: the smoke experiment
with every run done once and an array task cancelled in mid-run redone in the next round,
results of the same kind as a local run's; Ctrl-C cancelling the job it submitted and nothing
else."""
from __future__ import annotations

import csv
import json
import re
import signal
import subprocess
import time
from pathlib import Path

from tests.conftest import default_sigint, stray_kernels
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
    return subprocess.Popen(default_sigint([PYTHON, "-m", "testbed", "run", str(toml),
                                            "--results", str(results), *options]),
                            cwd=REPO, env=cluster.env, stdout=log.open("w"),
                            stderr=subprocess.STDOUT)


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


def batch_files(ledger: Path, round_number: int) -> list[Path]:
    return sorted(p for p in (ledger / ".work").glob(f"*round-{round_number}-slurm-*")
                  if re.fullmatch(r".*-task\d+\.json", p.name))


def batch_runs(path: Path) -> list[str]:
    return [run["id"] for run in json.loads(path.read_text())["runs"]]


def test_smoke_runs_every_run_once_and_redoes_a_task_cancelled_in_mid_run(cluster, tmp_path):
    """The smoke experiment (60 runs and more until tight), in virtual time, as one job array
    per round on a one-node Slurm; one task is cancelled while its kernel is inside a run."""
    results, log = tmp_path / "results", tmp_path / "coordinator.log"
    ledger = results / "smoke"
    # inf-cpu: computing is free, so a point's time depends on the link and the stacks only, not
    # on how loaded the machine was when Slurm ran it (wall-cpu charges computing as it happens:
    # a link-bound point moved by 6% between the two runs on a loaded CI machine)
    virtual = {**cluster.env, "KERNEL": "uml-virtual", "TESTBED_TIME_TRAVEL": "inf-cpu"}
    began = time.monotonic()
    coordinator = subprocess.Popen([PYTHON, "-m", "testbed", "run", "smoke", "--results",
                                    str(results), "--slurm"], cwd=REPO, env=virtual,
                                   stdout=log.open("w"), stderr=subprocess.STDOUT)
    try:
        submitted = wait_for(lambda: re.search(r"round 1: Slurm job (\d+), (\d+) tasks",
                                               log.read_text()), 60, "the job submitted")
        job = submitted[1]
        assert int(submitted[2]) >= 2, "one task per CPU of the node at least"
        task1 = wait_for(lambda: [p for p in batch_files(ledger, 1) if
                                  p.name.endswith("-task1.json")], 10, "task 1's batch")[0]
        ids = batch_runs(task1)

        def in_a_run() -> bool:
            # the kernel has begun a run of task 1 and not yet written its record
            return any((ledger / "runs" / i).is_dir() and
                       not (ledger / "runs" / i / "result.json").exists() for i in ids)
        deadline = time.monotonic() + 120
        while not in_a_run():
            assert time.monotonic() < deadline, "task 1 never began a run"
            time.sleep(0.02)
        subprocess.run(["scancel", f"{job}_1"], env=cluster.env, check=True)
        cancelled_at = time.time()
        assert coordinator.wait(timeout=1200) == 0, log.read_text()[-3000:]
    finally:
        if coordinator.poll() is None:
            coordinator.kill()
    slurm_wall_s = time.monotonic() - began
    output = log.read_text()
    assert f"Slurm task {job}_1 was cancelled" in output
    assert cluster.squeue() == []

    records = {p.parent.name: json.loads(p.read_text())
               for p in (ledger / "runs").glob("*/result.json")}
    cut_short = [i for i in ids if records[i]["started"] > cancelled_at]
    assert cut_short, "every run of task 1 had finished before the cancel"
    # redone in round 2 under their own ids; no run that had finished ran again
    round2 = [i for path in batch_files(ledger, 2) for i in batch_runs(path)]
    assert set(cut_short) <= set(round2)
    round1_done = {i for i, r in records.items() if r["started"] < cancelled_at}
    assert not round1_done & set(round2)
    # a run that failed was redone under its own id; it must say why (the summary names it)
    assert all(r["status"] == "ok" or r["reasons"] for r in records.values())
    assert not [d for d in (ledger / "runs").iterdir() if d.name not in records], \
        "a half-finished run was left behind"
    runs = rows(ledger / "runs.csv")
    assert sorted(r["run_id"] for r in runs) == sorted(records)
    summary = rows(ledger / "summary.csv")
    assert len(summary) == 20 and all(int(r["n"]) >= 3 for r in summary)
    # each run names the node that ran it; each batch its Slurm job and task
    meta = json.loads((ledger / "meta.json").read_text())
    assert [h["host"] for h in meta["hosts"]] == [cluster_node(cluster)]
    assert meta["clock"] == "virtual (time-travel=inf-cpu)"
    batches = [json.loads(p.read_text()) for p in (ledger / ".work").glob("*.metadata.json")]
    assert {(job, "0")} <= {(b["slurm"]["array_job_id"], b["slurm"]["array_task_id"])
                            for b in batches}

    # the points where the link decides the time (200K files at loss 0) run here as well: the
    # same columns and the same times (in this clock, repeated runs of them agree to 0.01%)
    compared = [r for r in summary if float(r["loss"]) == 0 and r["file_size"] == "204800"]
    assert len(compared) == 5
    points = tmp_path / "link-bound-points"
    points.write_text("".join(f"{r['point']}\n" for r in compared))
    local = tmp_path / "local"
    began = time.monotonic()
    here = subprocess.run([PYTHON, "-m", "testbed", "run", "smoke", "--results", str(local),
                           "--workers", "2", "--points", str(points)], cwd=REPO, env=virtual,
                          capture_output=True, text=True, timeout=1200)
    local_wall_s = time.monotonic() - began
    assert here.returncode == 0, here.stderr[-3000:]
    print(f"smoke in virtual time: {slurm_wall_s:.0f} s through Slurm (a task cancelled), "
          f"its five link-bound points {local_wall_s:.0f} s here")
    local_runs = rows(local / "smoke" / "runs.csv")
    assert list(local_runs[0]) == list(runs[0])
    local_summary = {r["point"]: r for r in rows(local / "smoke" / "summary.csv")}
    assert list(next(iter(local_summary.values()))) == list(summary[0])
    assert set(local_summary) == {r["point"] for r in compared}
    for ours in compared:
        theirs = float(local_summary[ours["point"]]["mean_s"])
        assert abs(float(ours["mean_s"]) / theirs - 1) < 0.005, ours["point"]


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
    # the cancelled task took its kernel with it (which runs in a session of its own)
    wait_for(lambda: stray_kernels() == [], 30, "no kernel of the cancelled task left")
    assert any(line.startswith(f"{other_id} ") for line in cluster.squeue()), \
        "a job the harness did not submit was touched"
    subprocess.run(["scancel", other_id], env=cluster.env, check=True)
    wait_for(lambda: cluster.squeue() == [], 60, "the queue empty")
