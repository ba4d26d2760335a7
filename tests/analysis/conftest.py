"""One tiny experiment's results, committed in data/tinyanalysis/ (see data/README.md): all four
variants, two loss ratios, two files of 10K per session, two runs per point, run once by the
harness in the pinned kernel. Its pcaps feed the dissector test, its records and pcaps the
analysis tests, and its tables the figure, table and report tests; none of them boots a kernel.
The committed folder is only read: a test that changes a result set gets a private copy."""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from experiments import spec
from experiments.onhost.analyze import ANALYSIS
from experiments.onhost.ledger import RECORD, Ledger

REPO = Path(__file__).resolve().parents[2]
PYTHON = "/usr/bin/python3"
VARIANTS = ("tcp", "sctp-naive", "sctp-ms", "sctp-ms-cp")
DATA = Path(__file__).resolve().parent / "data"
TINY_RESULTS = DATA / "tinyanalysis"
TINY_EXPERIMENT = DATA / "tinyanalysis.toml"


def run_python(*args: str, timeout: float = 1800) -> subprocess.CompletedProcess:
    return subprocess.run([PYTHON, *args], cwd=REPO, capture_output=True, text=True,
                          timeout=timeout)


def fingerprint(folder: Path) -> dict[str, tuple[int, str]]:
    """Every file under `folder` by relative path: its size and SHA-256."""
    return {str(path.relative_to(folder)): (path.stat().st_size,
                                            hashlib.sha256(path.read_bytes()).hexdigest())
            for path in sorted(folder.rglob("*")) if path.is_file()}


def private_copy(folder: Path, into: Path, *ignore: str) -> Path:
    """A copy of the result set at into/<its name>, each run's analysis cache dated after its
    record, as the harness wrote them (a checkout dates files in the order it writes them, so
    the cache may look older than the record, and so stale, otherwise)."""
    copy = into / folder.name
    shutil.copytree(folder, copy, ignore=shutil.ignore_patterns(*ignore) if ignore else None)
    for record in copy.glob(f"runs/*/{RECORD}"):
        cache = record.with_name(ANALYSIS)
        if cache.exists():
            written = max(record.stat().st_mtime_ns, cache.stat().st_mtime_ns)
            os.utime(cache, ns=(written, written))
    return copy


@pytest.fixture(scope="session")
def tiny_results() -> Path:
    """The committed results/tinyanalysis/, read in place; unchanged by the session."""
    folder = TINY_RESULTS
    assert (folder / "summary.csv").is_file() and list((folder / "pcaps").glob("*.pcap"))
    before = fingerprint(folder)
    yield folder
    changed = sorted(set(before.items()) ^ set(fingerprint(folder).items()))
    assert not changed, (f"a test wrote into the committed result set {folder}: "
                         f"{sorted({name for name, _ in changed})}")


@pytest.fixture()
def results_copy(tiny_results, tmp_path) -> Path:
    """A private copy of the result set that a test may change."""
    return private_copy(tiny_results, tmp_path / "results")


@pytest.fixture()
def experiment() -> spec.Experiment:
    return spec.load(str(TINY_EXPERIMENT))


@pytest.fixture()
def ledger(tiny_results, tmp_path) -> Ledger:
    """A private copy of the tiny experiment's runs and pcaps, its caches current."""
    return Ledger(private_copy(tiny_results, tmp_path / "results"))
