"""One harness at a time writes into a results folder (experiments/onhost/ledger.py): a second is
refused at once, told the first's pid and host, since when and what it runs, and what to do;
the lock dies with its holder, even one killed with SIGKILL that had forked analysis workers
(they share the lock's file, and would keep it); a lock kept by processes a gone harness left
is refused naming them."""
from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest

from experiments.onhost.ledger import LOCK, Ledger, LedgerBusy
from tests.conftest import REPO

PYTHON = "/usr/bin/python3"
TINY = """
name = "locked"
[network]
queue = "500KB"
[[network.paths]]
name = "lan"
rate = "3Mbit"
delay = "1ms"
[matrix]
loss = [0.0]
file_sizes = ["10K"]
files = 2
variants = ["tcp"]
[repetitions]
min = 2
max = 2
"""
# A holder of the lock, as a harness holds it: its analysis pools forked (one plain, one with
# the workers' setup), and a child forked by hand; once each child runs, it prints their pids
# and waits.
HOLDER = """
import os, sys, time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from experiments.onhost.analyze import worker_setup
from experiments.onhost.ledger import Ledger
with Ledger(Path(sys.argv[1])).lock():
    plain = ProcessPoolExecutor(1)
    setup = ProcessPoolExecutor(1, initializer=worker_setup, initargs=(os.getpid(),))
    children = [plain.submit(os.getpid).result(), setup.submit(os.getpid).result()]
    running, said = os.pipe()
    child = os.fork()
    if child == 0:
        os.write(said, b"x")
        time.sleep(300)
        os._exit(0)
    os.read(running, 1)
    print(*children, child, flush=True)
    time.sleep(300)
"""


def start_holder(root: Path) -> tuple[subprocess.Popen, list[int]]:
    holder = subprocess.Popen([PYTHON, "-c", HOLDER, str(root)], cwd=REPO, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    line = holder.stdout.readline()
    assert line, holder.stderr.read()
    return holder, [int(pid) for pid in line.split()]


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


def end(pids: list[int]) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def test_a_second_harness_is_refused_at_once_naming_pid_and_host(tmp_path):
    ledger = Ledger(tmp_path / "locked")
    holder, children = start_holder(ledger.root)
    try:
        written = json.loads((ledger.work / LOCK).read_text())
        assert written["pid"] == holder.pid and written["host"] == socket.gethostname()
        with pytest.raises(LedgerBusy) as refused, ledger.lock():
            pytest.fail("took a held lock")
        message = str(refused.value)
        assert f"pid {holder.pid} on {socket.gethostname()}" in message, message
        assert f"kill {holder.pid}" in message and str(ledger.root) in message, message
        assert "since " in message and "run this again" in message, message

        # the command: refused before it boots anything (no kernel may boot in a unit test)
        experiment = tmp_path / "locked.toml"
        experiment.write_text(TINY)
        started = time.monotonic()
        second = subprocess.run([PYTHON, "-m", "testbed", "run", str(experiment), "--results",
                                 str(tmp_path)], cwd=REPO, capture_output=True, text=True,
                                timeout=120)
        assert second.returncode == 2, second.stderr
        assert time.monotonic() - started < 30
        assert second.stderr.startswith("error: another harness is writing into"), second.stderr
        assert f"pid {holder.pid} on {socket.gethostname()}" in second.stderr
        assert "Traceback" not in second.stderr
    finally:
        end([holder.pid, *children])
        holder.wait()


def test_a_holder_killed_with_sigkill_leaves_no_lock_behind(tmp_path):
    """Its forked children outlive it, and none of them keeps the lock; the analysis worker
    dies with it."""
    ledger = Ledger(tmp_path / "locked")
    holder, (plain, worker, forked) = start_holder(ledger.root)
    try:
        holder.kill()
        holder.wait()
        with ledger.lock():   # at once: not refused, not waiting
            assert json.loads((ledger.work / LOCK).read_text())["pid"] == os.getpid()
        assert not ledger.busy()
        deadline = time.monotonic() + 10
        while alive(worker) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not alive(worker), "an analysis worker outlived the harness that forked it"
    finally:
        end([plain, worker, forked])


def test_a_lock_kept_by_processes_a_gone_harness_left_names_them(tmp_path):
    """An older harness's children kept the lock after it was killed: the refusal says that
    its holder is gone and which processes to stop."""
    ledger = Ledger(tmp_path / "locked")
    ledger.work.mkdir(parents=True)
    gone = subprocess.Popen(["true"])
    gone.wait()
    (ledger.work / LOCK).write_text(json.dumps({"pid": gone.pid, "host": socket.gethostname()}))
    keeper = subprocess.Popen(
        [PYTHON, "-c", "import fcntl, sys, time; f = open(sys.argv[1]); "
                       "fcntl.flock(f, fcntl.LOCK_EX); print(flush=True); time.sleep(300)",
         str(ledger.work / LOCK)], stdout=subprocess.PIPE, text=True)
    try:
        keeper.stdout.readline()
        with pytest.raises(LedgerBusy) as refused, ledger.lock():
            pytest.fail("took a held lock")
        message = str(refused.value)
        assert f"pid {gone.pid}" in message and "left behind" in message, message
        assert f"kill {keeper.pid}" in message, message
    finally:
        keeper.kill()
        keeper.wait()


def test_a_lock_held_on_another_host_says_where_to_stop_it(tmp_path):
    ledger = Ledger(tmp_path / "locked")
    ledger.work.mkdir(parents=True)
    (ledger.work / LOCK).write_text(json.dumps({"pid": 4242, "host": "elsewhere",
                                                "since": "2026-01-01 00:00:00 +0000",
                                                "command": "testbed run smoke"}))
    keeper = subprocess.Popen(
        [PYTHON, "-c", "import fcntl, sys, time; f = open(sys.argv[1]); "
                       "fcntl.flock(f, fcntl.LOCK_EX); print(flush=True); time.sleep(300)",
         str(ledger.work / LOCK)], stdout=subprocess.PIPE, text=True)
    try:
        keeper.stdout.readline()
        expected = (r"pid 4242 on elsewhere, since 2026-01-01 .*: testbed run smoke\). .*"
                    r"\(on elsewhere: kill 4242")
        with pytest.raises(LedgerBusy, match=expected), ledger.lock():
            pytest.fail("took a held lock")
    finally:
        keeper.kill()
        keeper.wait()
