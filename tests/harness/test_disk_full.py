"""The results disk filling in the middle of a round: the harness stops with one error that
says the disk is full, where it is mounted, how much is free and what to do, and no
traceback; no run is counted that is not whole (every record valid, each of its pcaps whole)
and none is recorded as failed for want of room; once space is back the same command
finishes the experiment. The results on a small tmpfs of their own, filled by another
writer once the first run has finished. In virtual time."""
from __future__ import annotations

import errno
import json
import os
import struct
import subprocess
import time
from pathlib import Path

import pytest

from experiments.onhost.disk import MARGIN_ENV
from experiments.onhost.ledger import RECORD, SET_ASIDE
from tests.harness.conftest import PYTHON, REPO, lan_experiment, rows

SIZE_MB = 40
RUNS = 8   # about 2.3 MB of pcap each: room for all of them, until the disk is filled
EXPERIMENT = lan_experiment("filling", "[0.0]", "200K", files=10, runs=RUNS)


@pytest.fixture
def small_disk(tmp_path):
    disk = tmp_path / "disk"
    disk.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={SIZE_MB}m", "tmpfs", str(disk)],
                   check=True)
    yield disk
    subprocess.run(["umount", "-l", str(disk)], check=False)


def fill(disk: Path) -> Path:
    """A file that takes every byte left on `disk`."""
    filler = disk / "filler"
    with open(filler, "wb", buffering=0) as out:
        for chunk in (1 << 20, 1 << 12, 1):
            try:
                while True:
                    out.write(b"\0" * chunk)
            except OSError as error:
                assert error.errno == errno.ENOSPC
    return filler


def whole_pcap(path: Path) -> bool:
    """A classic pcap whose last packet ends where the file does."""
    data = path.read_bytes()
    if len(data) < 24 or data[:4] not in (b"\xd4\xc3\xb2\xa1", b"\xa1\xb2\xc3\xd4"):
        return False
    order = "<" if data[:4] == b"\xd4\xc3\xb2\xa1" else ">"
    at = 24
    while at + 16 <= len(data):
        at += 16 + struct.unpack(order + "IIII", data[at:at + 16])[2]
    return at == len(data)


def test_a_full_results_disk_stops_the_harness_clearly_and_a_resume_finishes(small_disk):
    experiment = small_disk.parent / "filling.toml"
    experiment.write_text(EXPERIMENT)
    command = [PYTHON, "-m", "testbed", "run", str(experiment), "--results", str(small_disk),
               "--workers", "1", "--kernel", "uml-virtual"]
    env = {**os.environ, MARGIN_ENV: "1"}
    runs = small_disk / "filling" / "runs"
    proc = subprocess.Popen(command, cwd=REPO, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 300
        while not list(runs.glob(f"*/{RECORD}")):
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "no run finished in time"
            time.sleep(0.05)
        filler = fill(small_disk)
        out, err = proc.communicate(timeout=600)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 2, err[-3000:]
    assert "Traceback" not in out + err, (out + err)[-3000:]
    error = err.strip().splitlines()[-1]
    assert error.startswith("error: the results disk is full"), err[-3000:]
    assert f"is on {small_disk}, which has" in error and " free of " in error, error
    assert "pcaps/" in error and "Free some space" in error, error
    assert "run the same command again" in error, error

    kept = {}
    for record_file in runs.glob(f"*/{RECORD}"):
        record = json.loads(record_file.read_text())
        assert record["status"] == "ok", record.get("reasons")   # none failed for want of room
        assert whole_pcap(small_disk / "filling" / "pcaps" / f"{record['id']}.pcap"), record["id"]
        kept[record["id"]] = record_file.read_bytes()
    assert 1 <= len(kept) < RUNS
    assert not list(runs.glob(f"*/{SET_ASIDE}*"))

    filler.unlink()
    resumed = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True,
                             timeout=900)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    for run_id, content in kept.items():
        assert (runs / run_id / RECORD).read_bytes() == content      # not run again
    summary = rows(small_disk / "filling" / "summary.csv")
    assert [int(r["n"]) for r in summary] == [RUNS]
    for record_file in runs.glob(f"*/{RECORD}"):
        run_id = record_file.parent.name
        assert whole_pcap(small_disk / "filling" / "pcaps" / f"{run_id}.pcap"), run_id
