"""In real time a worker's kernel is booted once and kept across the experiment's rounds, with its
topology (experiments/onhost/kernel_session.py); a kernel that stops is replaced."""
import contextlib
import json
import os
import signal
import subprocess
import time

from tests.conftest import kernels_and_children, stray_kernels
from tests.harness.conftest import PYTHON, REPO, harness

# two runs per point in round 1; an interval this tight is not reached, so round 2 runs a third
TWO_ROUNDS = """
name = "two-rounds"
[network]
queue = "500KB"
[[network.paths]]
name = "lan"
rate = "3Mbit"
delay = "1ms"
[matrix]
loss = [0.0]
file_sizes = ["10K"]
files = 3
variants = ["tcp", "sctp-ms"]
[repetitions]
min = 2
max = 3
target_half_width = 0.0001
[run]
timeout_s = 120
"""


def batches(work):
    """(round, wall record, metadata) of each batch, in launch order."""
    out = []
    for wall_file in work.glob("*-round-*.wall.json"):
        name = wall_file.name.removesuffix(".wall.json")
        label = int(name.split("-round-")[1].split("-")[0])
        meta = json.loads((work / f"{name}.metadata.json").read_text())
        out.append((label, json.loads(wall_file.read_text()), meta))
    return sorted(out, key=lambda batch: batch[1]["launched"])


def run_two_rounds(tmp_path):
    experiment = tmp_path / "two-rounds.toml"
    experiment.write_text(TWO_ROUNDS)
    results = tmp_path / "results"
    run = harness("run", str(experiment), "--results", str(results), "--workers", "1",
                  "--kernel", "uml")
    assert run.returncode == 0, run.stderr[-3000:]
    return results / "two-rounds"


def test_one_kernel_and_one_topology_serve_both_rounds(tmp_path):
    results = run_two_rounds(tmp_path)
    work = results / ".work"
    records = [json.loads(p.read_text()) for p in (results / "runs").glob("*/result.json")]
    assert len(records) == 6 and all(r["status"] == "ok" for r in records)
    steps = [json.loads(line)["step"] for line in (work / "coordinator.wall.jsonl").read_text()
             .splitlines()]
    assert "round 2" in steps and "round 3" not in steps
    kernels = sorted(p for p in work.iterdir() if p.is_dir() and "-kernel" in p.name)
    assert len(kernels) == 1, kernels  # one boot for both rounds
    assert (kernels[0] / "kernel.log").exists()

    (first_round, first, first_meta), (second_round, second, second_meta) = batches(work)
    assert (first_round, second_round) == (1, 2)
    boot = [wall["marks"][0][0] - wall["launched"] for wall in (first, second)]
    assert [wall["marks"][0][1] for wall in (first, second)] == ["started", "started"]
    # the first batch waited for the boot (0.8-0.9 s for the project's build, which has
    # everything built in; more for Debian's, which loads modules); the second only for the
    # kernel to see it
    assert boot[1] < 0.5 < boot[0], boot
    assert len(first_meta["topology_build_s"]) == 1 and len(first_meta["link_checks"]) == 1
    assert second_meta["topology_build_s"] == [] and second_meta["link_checks"] == []
    # one boot of the kernel ran both
    assert first_meta["boot_id"] == second_meta["boot_id"] != "unknown"
    assert stray_kernels() == []   # halted at the end: none of this test session's left


def test_a_kernel_that_stopped_is_replaced_by_a_new_one(tmp_path):
    """The kernel killed between the rounds: round 2 boots another and finishes the runs."""
    experiment = tmp_path / "two-rounds.toml"
    experiment.write_text(TWO_ROUNDS)
    results = tmp_path / "results"
    work = results / "two-rounds" / ".work"
    proc = subprocess.Popen([PYTHON, "-m", "testbed", "run", str(experiment), "--results",
                             str(results), "--workers", "1", "--kernel", "uml"], cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 600
    killed, first_look = False, ""
    while proc.poll() is None and time.monotonic() < deadline:
        # round 1's four runs finished: its kernel is killed before round 2 can use it
        if not killed and len(list((results / "two-rounds" / "runs").glob("*/result.json"))) >= 4:
            kernel = stray_kernels(f"umid=tb{proc.pid}-")
            for line in kernel:
                # a kernel is several host processes: the others go with the first one killed
                with contextlib.suppress(ProcessLookupError):
                    os.kill(int(line.split()[0]), signal.SIGKILL)
            killed = bool(kernel)   # none seen yet: look again
            first_look = first_look or kernels_and_children(proc.pid)
        time.sleep(0.05)
    out, err = proc.communicate(timeout=60)
    assert killed, (f"the kernel was never seen running after round 1; at the first look:\n"
                    f"{first_look}\ntestbed said:\n{out[-2000:]}\n{err[-2000:]}")
    assert proc.returncode == 0, err[-3000:]
    runs = results / "two-rounds" / "runs"
    records = [json.loads(p.read_text()) for p in runs.glob("*/result.json")]
    assert len(records) == 6 and all(r["status"] == "ok" for r in records)
    kernels = [p for p in work.iterdir() if p.is_dir() and "-kernel" in p.name]
    assert len(kernels) == 2, kernels
    boots = [meta["boot_id"] for _, _, meta in batches(work)]
    assert len(boots) == 2 and boots[0] != boots[1], boots
    assert stray_kernels(f"umid=tb{proc.pid}-") == []

