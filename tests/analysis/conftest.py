"""One tiny experiment run with the harness for the whole analysis suite: all four variants, two
loss ratios, two files of 10K per session, two runs per point. Its pcaps feed the dissector test
and its tables the figure, table and report tests."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from experiments.harness import spec
from experiments.harness.ledger import Ledger

REPO = Path(__file__).resolve().parents[2]
PYTHON = "/usr/bin/python3"
VARIANTS = ("tcp", "sctp-naive", "sctp-ms", "sctp-ms-cp")

TINY = """
name = "tinyanalysis"
description = "analysis tests: all four variants, 2 x 10K, loss 0 and 0.03"
metric = "nlst150-to-last226"
[network]
queue = "500KB"
[[network.paths]]
name = "lan"
rate = "3Mbit"
delay = "1ms"
[matrix]
loss = [0.0, 0.03]
file_sizes = ["10K"]
files = 2
variants = ["tcp", "sctp-naive", "sctp-ms", "sctp-ms-cp"]
[repetitions]
min = 2
max = 2
[run]
timeout_s = 120
"""


def run_python(*args: str, timeout: float = 1800) -> subprocess.CompletedProcess:
    return subprocess.run([PYTHON, *args], cwd=REPO, capture_output=True, text=True,
                          timeout=timeout)


@pytest.fixture(scope="session")
def tiny_results(tmp_path_factory) -> Path:
    """results/tinyanalysis/ of a fresh harness run (about a minute)."""
    base = tmp_path_factory.mktemp("analysis")
    experiment = base / "tinyanalysis.toml"
    experiment.write_text(TINY)
    results = base / "results"
    run = run_python("-m", "testbed", "run", str(experiment), "--results",
                     str(results), "--workers", "1")
    assert run.returncode == 0, run.stderr[-3000:]
    folder = results / "tinyanalysis"
    assert (folder / "summary.csv").is_file() and list((folder / "pcaps").glob("*.pcap"))
    return folder


@pytest.fixture()
def results_copy(tiny_results, tmp_path) -> Path:
    """A private copy of the result set that a test may change (runs/ left out: unused)."""
    root = tmp_path / "results"
    copy = root / tiny_results.name
    shutil.copytree(tiny_results, copy, ignore=shutil.ignore_patterns("runs"))
    return copy


@pytest.fixture()
def experiment(tiny_results) -> spec.Experiment:
    return spec.load(str(tiny_results.parent.parent / "tinyanalysis.toml"))


@pytest.fixture()
def ledger(tiny_results, tmp_path) -> Ledger:
    """A private copy of the tiny experiment's runs and pcaps, its caches current."""
    copy = tmp_path / "results" / tiny_results.name
    shutil.copytree(tiny_results, copy)
    return Ledger(copy)
