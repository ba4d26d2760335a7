"""One harness at a time on a results folder. A second `testbed run` started beside a running
one is refused at once, naming the first's pid and host, and the first goes on to its end. A
harness killed with SIGKILL in the middle of a round leaves its kernel running (it is in a
session of its own) and nothing that refuses the next: the same command, run at once, stops
that kernel, says so, and finishes the experiment, every point with its runs and no finished
run run again. In virtual time."""
from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time

from experiments.onhost.ledger import LOCK, RECORD, processes_holding
from tests.conftest import stray_kernels
from tests.harness.conftest import PYTHON, REPO, harness, lan_experiment, rows

# 12 runs, 4 to 5 s of them on this machine after the first record (a faster one took under
# 0.2 s for the 7 runs left of 8 once): long enough to be caught in the middle
RUNS = 6
TWO_POINTS = lan_experiment("twice", "[0.0, 0.03]", "200K", files=10, runs=RUNS)


def start(experiment, results) -> subprocess.Popen:
    return subprocess.Popen([PYTHON, "-m", "testbed", "run", str(experiment), "--results",
                             str(results), "--workers", "1", "--kernel", "uml-virtual"],
                            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def first_record(runs, proc, limit_s: float = 300) -> dict[str, bytes]:
    deadline = time.monotonic() + limit_s
    while not list(runs.glob(f"*/{RECORD}")):
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "no run finished in time"
        time.sleep(0.1)
    return {p.parent.name: p.read_bytes() for p in runs.glob(f"*/{RECORD}")}


def test_a_second_harness_is_refused_at_once_and_the_first_finishes(tmp_path):
    experiment = tmp_path / "twice.toml"
    experiment.write_text(TWO_POINTS)
    results = tmp_path / "results"
    first = start(experiment, results)
    try:
        first_record(results / "twice" / "runs", first)
        started = time.monotonic()
        second = harness("run", str(experiment), "--results", str(results), "--workers", "1",
                         "--kernel", "uml-virtual", timeout=120)
        refused_in = time.monotonic() - started
        assert first.poll() is None, "the first ended before the second was refused"
        assert second.returncode == 2, second.stderr
        assert second.stderr.startswith("error: another harness is writing into"), second.stderr
        assert f"pid {first.pid} on {socket.gethostname()}" in second.stderr
        assert f"kill {first.pid}" in second.stderr and "Traceback" not in second.stderr
        assert refused_in < 20, refused_in
        out, err = first.communicate(timeout=600)
    finally:
        if first.poll() is None:
            first.kill()
            first.communicate()
    assert first.returncode == 0, err[-2000:]
    assert [int(r["n"]) for r in rows(results / "twice" / "summary.csv")] == [RUNS, RUNS]


def test_a_harness_killed_in_a_round_is_resumed_at_once(tmp_path):
    experiment = tmp_path / "twice.toml"
    experiment.write_text(TWO_POINTS)
    results = tmp_path / "results"
    runs = results / "twice" / "runs"
    first = start(experiment, results)
    try:
        first_record(runs, first)
        # frozen mid-batch before the harness dies: a fast machine finishes the batch's last
        # runs in the moments the kill and the resume take, and leaves nothing to stop
        left = stray_kernels(f"umid=tb{first.pid}-")
        assert left, "the harness's kernel had ended already: nothing to stop"
        for line in left:
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(line.split()[0]), signal.SIGSTOP)
        first.kill()
        first.communicate()
        assert stray_kernels(f"umid=tb{first.pid}-"), "the killed harness took its kernel along"
        kept = {p.parent.name: p.read_bytes() for p in runs.glob(f"*/{RECORD}")}

        resumed = harness("run", str(experiment), "--results", str(results), "--workers", "1",
                          "--kernel", "uml-virtual", timeout=600)
        assert resumed.returncode == 0, resumed.stderr[-2000:]
        assert (f"a kernel left running by a harness that is gone (pid {first.pid}) stopped"
                in resumed.stdout), resumed.stdout[-2000:]
        assert stray_kernels(f"umid=tb{first.pid}-") == []
        assert processes_holding(results / "twice" / ".work" / LOCK) == []
        records = {p.parent.name: p.read_bytes() for p in runs.glob(f"*/{RECORD}")}
        for run_id, content in kept.items():
            assert records[run_id] == content          # finished before the kill: kept as is
        assert len(records) == 2 * RUNS
        assert [int(r["n"]) for r in rows(results / "twice" / "summary.csv")] == [RUNS, RUNS]
        assert len(rows(results / "twice" / "runs.csv")) == 2 * RUNS
    finally:
        if first.poll() is None:
            first.kill()
            first.communicate()
