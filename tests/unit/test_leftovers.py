"""The kernels a harness killed with SIGKILL left working on its results folder are found and
stopped by the next harness (experiments/onhost/leftovers.py): one whose booting harness is
gone, and the processes left of one whose first process is gone too (stopped, holding the CPU
it claimed); not a kernel whose harness is alive, nor one of another results folder. Stand-ins
for kernels: processes named like one, with a kernel's command line and scratch job, in
sessions of their own (no kernel boots)."""
from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from experiments.onhost import leftovers
from experiments.onhost.ledger import Ledger

# A kernel's first process; with "split" it forks a second process, stops it (as a kernel's
# processes are left stopped under a tracer that is gone) and ends, leaving it alone.
STAND_IN = """
import os, signal, sys, time
if sys.argv[1] == "split":
    child = os.fork()
    if child == 0:
        os.kill(os.getpid(), signal.SIGSTOP)
        time.sleep(300)
        os._exit(0)
    print(child, flush=True)
    os._exit(0)
print(os.getpid(), flush=True)
time.sleep(300)
"""


def dead_pid() -> int:
    gone = subprocess.Popen(["true"])
    gone.wait()
    return gone.pid


def stand_in(tmp_path: Path, ledger: Ledger, booter: int, mode: str = "whole") -> tuple[int, Path]:
    """A stand-in kernel booted by `booter` whose job runs a batch of `ledger`: the pid it
    printed (its own, or its left process's) and its scratch."""
    scratch = tmp_path / f"scratch-{booter}-{mode}"
    scratch.mkdir()
    (scratch / "job.sh").write_text(f"#!/bin/sh\nexec /usr/bin/python3 -m "
                                    f"experiments.inkernel.kernel_batch {ledger.work}/b1.json\n")
    proc = subprocess.Popen(
        ["bash", "-c", 'exec -a /opt/uml/linux.uml /usr/bin/python3 -c "$0" "$@"', STAND_IN,
         mode, "mem=640M", f"umid=tb{booter}-abc123", f"TESTBED_SCRATCH={scratch}"],
        stdout=subprocess.PIPE, text=True, start_new_session=True)
    pid = int(proc.stdout.readline())
    if mode == "split":
        proc.wait()
    return pid, scratch


def state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "gone"


@pytest.fixture
def ledger(tmp_path):
    ledger = Ledger(tmp_path / "exp")
    ledger.prepare()
    return ledger


@pytest.fixture
def started():
    pids: list[int] = []
    yield pids
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def test_a_kernel_whose_harness_is_gone_is_stopped(tmp_path, ledger, started):
    pid, scratch = stand_in(tmp_path, ledger, dead_pid())
    started.append(pid)
    found = leftovers.left_kernels(ledger)
    assert [(k.pid, k.batch) for k in found] == [(pid, "b1.json")]
    lines = leftovers.stop_left_kernels(ledger)
    assert len(lines) == 1 and f"stopped: pid {pid}, batch b1.json" in lines[0]
    assert state(pid) in ("gone", "Z") and not scratch.exists()


def test_what_is_left_of_a_kernel_whose_first_process_is_gone_is_stopped(tmp_path, ledger,
                                                                          started):
    left, _ = stand_in(tmp_path, ledger, dead_pid(), "split")
    started.append(left)
    deadline = time.monotonic() + 10
    while state(left) != "T" and time.monotonic() < deadline:
        time.sleep(0.02)
    assert state(left) == "T"
    found = leftovers.left_kernels(ledger)
    assert [k.members for k in found] == [(left,)]
    assert "stopped" in leftovers.stop_left_kernels(ledger)[0]
    assert state(left) in ("gone", "Z")


def test_a_kernel_whose_harness_is_alive_or_of_another_folder_is_left_alone(tmp_path, ledger,
                                                                             started):
    ours, _ = stand_in(tmp_path, ledger, os.getpid())          # its parent booted it: alive
    other, _ = stand_in(tmp_path, Ledger(tmp_path / "other"), dead_pid())
    started += [ours, other]
    assert leftovers.left_kernels(ledger) == []
    assert leftovers.stop_left_kernels(ledger) == []
    assert state(ours) not in ("gone", "Z") and state(other) not in ("gone", "Z")
