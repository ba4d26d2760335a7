"""Kernels that a harness killed with SIGKILL (or by the OOM killer) left running, found and
stopped before the next harness on the same results folder plans its runs.

A pinned kernel runs in a session of its own (topology/kernel/uml.py), so the Ctrl-C, SIGTERM
and exit paths of a harness stop it, but nothing can when the harness is killed outright: the
kernel runs on through its batch, writing records and pcaps into the ledger. A resume beside it
would run the same runs into the same files. So a harness, once it holds the ledger's lock,
stops every kernel on this host that

  - works for this ledger: its job (the scratch folder's job.sh that its command line names)
    runs a batch file in the ledger's .work/, and
  - was left behind: the process that booted it (the pid in its `umid=tb<pid>-...`) is no
    longer its parent, or its first process is gone and only its others are left.

A kernel is a process group of several host processes. When its first process dies (a crash,
a kill) while the harness is gone too, the others stay behind, stopped under a tracer that no
longer exists, and SIGTERM never reaches them: they hold the CPU the kernel claimed
(cpu_slots.py), so every later kernel on the host runs unpinned. So the whole group is killed.

Kernels booted by a live `testbed batch` (a Slurm task on this node) still have their parent
and are left alone. Killing a kernel frees the CPU it held; the run it was in has no record
and is redone.

    stop_left_kernels(ledger) -> list[str]   one line per kernel stopped
"""
from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import time
from dataclasses import dataclass
from pathlib import Path

from experiments.onhost.ledger import Ledger

KERNEL_BINARY = "linux.uml"
UMID = re.compile(r"^umid=tb(\d+)-")
SCRATCH_ARG = "TESTBED_SCRATCH="
GONE_WAIT_S = 10.0


@dataclass(frozen=True)
class LeftKernel:
    pid: int               # the kernel's process group (its first process's pid)
    booted_by: int         # the pid of the harness that booted it
    scratch: Path
    batch: str             # the batch file its job runs
    members: tuple[int, ...]


def _argv(pid: int) -> list[str]:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return []
    return raw.rstrip(b"\0").decode(errors="replace").split("\0")


def _stat(pid: int) -> tuple[str, int, int] | None:
    """(state, parent pid, process group) of `pid`, or None once it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return fields[0], int(fields[1]), int(fields[2])


def _booter(argv: list[str]) -> int | None:
    for word in argv:
        match = UMID.match(word)
        if match:
            return int(match.group(1))
    return None


def _scratch(argv: list[str]) -> Path | None:
    for word in argv:
        if word.startswith(SCRATCH_ARG):
            return Path(word[len(SCRATCH_ARG):])
    return None


def _batch_of(scratch: Path, works: set[str]) -> str | None:
    """The file in one of `works` (a ledger's .work, as given and resolved) that the kernel's
    job runs, if it runs one."""
    try:
        job = (scratch / "job.sh").read_text(errors="replace")
    except OSError:
        return None
    for work in works:
        match = re.search(re.escape(work) + r"/(\S+)", job)
        if match:
            return match.group(1).strip("'\"")
    return None


def kernel_processes() -> dict[int, list[tuple[int, int, int, Path]]]:
    """Every testbed kernel's processes on this host by process group: (pid, parent pid,
    booting harness's pid, scratch) each."""
    groups: dict[int, list[tuple[int, int, int, Path]]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        pid = int(entry.name)
        argv = _argv(pid)
        if not argv or not argv[0].endswith(KERNEL_BINARY):
            continue
        stat, booter, scratch = _stat(pid), _booter(argv), _scratch(argv)
        if stat is None or stat[0] in ("Z", "X") or booter is None or scratch is None:
            continue  # gone, or a kernel not booted by the testbed
        groups.setdefault(stat[2], []).append((pid, stat[1], booter, scratch))
    return groups


def left_kernels(ledger: Ledger) -> list[LeftKernel]:
    """The kernels on this host working for `ledger` whose harness is gone."""
    works = {str(ledger.work), str(ledger.work.resolve())}
    found = []
    for group, members in kernel_processes().items():
        leader = next((m for m in members if m[0] == group), None)
        _, _, booter, scratch = leader or members[0]
        if leader is not None and leader[1] == booter:
            continue  # its harness is alive and waits for it
        batch = _batch_of(scratch, works)
        if batch is not None:
            found.append(LeftKernel(group, booter, scratch, batch, tuple(m[0] for m in members)))
    return found


def _gone(pid: int) -> bool:
    stat = _stat(pid)
    return stat is None or stat[0] in ("Z", "X")


def stop(kernel: LeftKernel) -> bool:
    """SIGKILL to the kernel's process group; True once every process of it is gone (its
    scratch removed)."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(kernel.pid, signal.SIGKILL)
    deadline = time.monotonic() + GONE_WAIT_S
    while not all(map(_gone, kernel.members)) and time.monotonic() < deadline:
        time.sleep(0.05)
    if not all(map(_gone, kernel.members)):
        return False
    shutil.rmtree(kernel.scratch, ignore_errors=True)
    return True


def stop_left_kernels(ledger: Ledger) -> list[str]:
    """Stops the kernels a killed harness left working for `ledger`; a line for each."""
    lines = []
    for kernel in left_kernels(ledger):
        outcome = "stopped" if stop(kernel) else "could not be stopped"
        lines.append(f"a kernel left running by a harness that is gone (pid {kernel.booted_by}) "
                     f"{outcome}: pid {kernel.pid}, batch {kernel.batch}; the run it was in is "
                     "redone")
    return lines
