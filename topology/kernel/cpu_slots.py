"""One host CPU for each running kernel, held for the kernel's life.

User-Mode Linux runs its kernel and its programs as separate host processes that hand the CPU
to each other (ptrace) at every system call and every wake-up. Left to float, the host wakes
them on different CPUs and each hand-off crosses CPUs; pinned to one, it stays on that CPU. On
this 2-core VM that halved the wall time of a transfer, with one kernel running and with two.

A CPU is claimed with a lock file per CPU (flock), so kernels of other workers, Slurm tasks and
test processes on the machine each get a CPU of their own. The lock is handed to the kernel,
so it is held while the kernel lives even if what started it dies first. When every CPU this
process may use is held, the kernel runs unpinned, as it would without this.
"""
from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

ENV = "TESTBED_PIN_CPU"  # "0": never pin
LOCK_DIR_ENV = "TESTBED_CPU_LOCKS"


def lock_dir() -> Path:
    return Path(os.environ.get(LOCK_DIR_ENV) or Path(tempfile.gettempdir()) / "testbed-cpus")


def enabled() -> bool:
    return os.environ.get(ENV, "1").strip() != "0"


class CpuClaim:
    """A CPU held through an open, locked file; `fd` is passed to the kernel to keep it."""

    def __init__(self, cpu: int, fd: int) -> None:
        self.cpu, self.fd = cpu, fd

    def release(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self.fd)


def _try_lock(path: Path) -> int | None:
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    return fd


def claim() -> CpuClaim | None:
    """The first CPU this process may use that no other kernel holds, or None (also where
    taskset, which starts the kernel on it, is missing: the kernel then runs unpinned)."""
    if not enabled() or shutil.which("taskset") is None:
        return None
    directory = lock_dir()
    try:
        directory.mkdir(mode=0o1777, parents=True, exist_ok=True)
        for cpu in sorted(os.sched_getaffinity(0)):
            fd = _try_lock(directory / f"cpu{cpu}.lock")
            if fd is not None:
                return CpuClaim(cpu, fd)
    except OSError:
        return None  # no place for locks: run unpinned rather than fail the run
    return None


@contextlib.contextmanager
def claimed() -> Iterator[CpuClaim | None]:
    held = claim()
    try:
        yield held
    finally:
        if held is not None:
            held.release()


def pinned_argv(argv: list[str], held: CpuClaim | None) -> list[str]:
    """argv started on the claimed CPU (taskset: its children inherit the affinity)."""
    if held is None:
        return argv
    return ["taskset", "--cpu-list", str(held.cpu), *argv]
