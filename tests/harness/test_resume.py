"""Interrupted, an experiment keeps what finished, counts nothing half-finished, and the same
command resumes it."""
import json
import signal
import subprocess
import time

from tests.conftest import default_sigint, stray_kernels
from tests.harness.conftest import PYTHON, REPO, harness

TINY = """
name = "tiny"
[network]
queue = "500KB"
[[network.paths]]
name = "lan"
rate = "3Mbit"
delay = "1ms"
[matrix]
loss = [0.0, 0.03]
file_sizes = ["10K"]
files = 3
variants = ["tcp"]
[repetitions]
min = 2
max = 2
[run]
timeout_s = 120
"""


def test_interrupt_then_resume(tmp_path):
    experiment = tmp_path / "tiny.toml"
    experiment.write_text(TINY)
    results = tmp_path / "results"
    runs = results / "tiny" / "runs"
    first = subprocess.Popen(default_sigint([PYTHON, "-m", "testbed", "run", str(experiment),
                                             "--results", str(results), "--workers", "1"]),
                             cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 300
    while not list(runs.glob("*/result.json")) and time.monotonic() < deadline:
        time.sleep(0.2)
    kept = {p.parent.name: p.read_text() for p in runs.glob("*/result.json")}
    assert kept, "no run finished before the deadline"
    first.send_signal(signal.SIGINT)
    _, err = first.communicate(timeout=120)
    assert first.returncode == 130, err
    assert "resume" in err
    assert stray_kernels(f"umid=tb{first.pid}-") == []
    # stopped at once, not after the rest of its batch
    assert len(list(runs.glob("*/result.json"))) < 4

    # a half-finished attempt left behind must not count
    (runs / "lan_loss0.03_10Kx3_tcp_tcp-newreno_linux_r002").mkdir(parents=True, exist_ok=True)

    second = harness("run", str(experiment), "--results", str(results), "--workers", "1")
    assert second.returncode == 0, second.stderr[-2000:]
    records = {p.parent.name: p.read_text() for p in runs.glob("*/result.json")}
    assert len(records) == 4
    for run_id, text in kept.items():
        assert records[run_id] == text  # finished before the interrupt: not run again
    for text in records.values():
        assert json.loads(text)["status"] == "ok"
    summary = (results / "tiny" / "summary.csv").read_text().splitlines()
    assert len(summary) == 3 and all(",2," in line for line in summary[1:])
