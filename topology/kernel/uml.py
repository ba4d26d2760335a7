"""The default backend: Debian's User-Mode Linux 6.1, booted as a process with the host
filesystem as its root. The job runs as the kernel's init child; its exit status and output come
back through files in a per-instance scratch directory on the host."""
from __future__ import annotations

import atexit
import contextlib
import os
import secrets
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO

from . import cpu_slots
from .base import REAL_CLOCK, REPO_ROOT, BackendError, RunResult, job_environment, job_script

INIT_SCRIPT = Path(__file__).with_name("uml_init.sh")
UML_BINARY = "linux.uml"
MODULE_STORE = Path("/usr/lib/uml/modules")
DEFAULT_MEMORY = "256M"
DEFAULT_TIMEOUT_S = 6 * 3600.0
HALT_GRACE_S = 10.0
CANCEL_POLL_S = 0.5

# Kernels this process has running, so an interrupted program can stop them all: they run in
# sessions of their own and do not see the terminal's Ctrl-C.
_running: set[subprocess.Popen[bytes]] = set()
# Set (to the reason) where nothing may boot a pinned kernel: the test suite sets it around every
# test that is not marked `kernel`, so a test that boots one unannounced fails saying so.
NO_KERNEL_ENV = "TESTBED_NO_KERNEL"
_running_lock = threading.Lock()


def stop_all() -> None:
    """Stop every kernel this process started that is still running."""
    with _running_lock:
        running = list(_running)
    for proc in running:
        _kill_group(proc)


def kill_all() -> None:
    """SIGKILL every kernel this process started that is still running, at once: for a process
    being cancelled, which has no time to let them halt. Called from a signal handler, so it
    takes no lock (the handler may have interrupted the thread that holds it)."""
    for proc in list(_running):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)


# Whatever way this process ends (short of SIGKILL, and SIGTERM where no handler turns it into
# an exit: `exit_on_sigterm`), its kernels end with it.
atexit.register(stop_all)


def exit_on_sigterm() -> None:
    """From now on SIGTERM kills this process's kernels and exits (status 143), so that its
    cleanup runs. By default SIGTERM ends Python at once, and a kernel, in a session of its
    own, outlives it: a Slurm task cancelled (SIGTERM, then SIGKILL) left one behind."""
    def cancelled(signum: int, _frame: object) -> None:
        kill_all()
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, cancelled)


OWNER_ENV = "TESTBED_OWNER"


def owner_args() -> list[str]:
    """`TESTBED_OWNER=...` on the kernel's command line when the environment names an owner (a
    test run, CI): what started a kernel can then find exactly its own among the machine's
    processes. An unusable value is left out rather than break the boot line."""
    owner = os.environ.get(OWNER_ENV, "")
    if owner and all(c.isalnum() or c in "-_." for c in owner):
        return [f"{OWNER_ENV}={owner}"]
    return []


def scratch_root() -> Path:
    return Path(os.environ.get("TESTBED_SCRATCH", "/tmp/testbed-scratch"))


def pinned_release() -> str:
    """The release of the installed User-Mode Linux, checked ready for modprobe inside."""
    if shutil.which(UML_BINARY) is None:
        raise BackendError("User-Mode Linux (linux.uml) is not installed: run `make setup`")
    releases = sorted(p.name for p in MODULE_STORE.iterdir()) if MODULE_STORE.is_dir() else []
    if not releases:
        raise BackendError(f"no User-Mode Linux modules under {MODULE_STORE}: run `make setup`")
    release = releases[-1]
    if not Path("/lib/modules", release, "modules.dep").is_file():
        raise BackendError(
            f"the pinned kernel's modules are not prepared (/lib/modules/{release}): "
            "run `make setup`")
    return release


class _Tail(threading.Thread):
    """Copies what the job writes to a file on to one of our streams while it runs."""

    def __init__(self, path: Path, sink: IO[str]) -> None:
        super().__init__(daemon=True)
        self.path, self.sink = path, sink
        self.finished = threading.Event()

    def run(self) -> None:
        offset = 0
        while True:
            done = self.finished.is_set()
            if self.path.exists():
                with self.path.open("r", errors="replace") as src:
                    src.seek(offset)
                    chunk = src.read()
                    offset = src.tell()
                if chunk:
                    self.sink.write(chunk)
                    self.sink.flush()
            if done:
                return
            self.finished.wait(0.2)


class UmlBackend:
    """Runs jobs inside the pinned kernel. Instances are independent: several may run at once."""

    name = "uml"
    binary = UML_BINARY
    clock = REAL_CLOCK
    default_timeout_s = DEFAULT_TIMEOUT_S
    # Real time stays unpinned until its results are compared pinned and unpinned side by side:
    # pinning speeds the kernel's processing, which in real time is part of what a run measures
    # (its wake-up latency after idle gaps did not move: 199-226 us pinned, 222-225 unpinned).
    pin_cpu = False

    def __init__(self, memory: str = DEFAULT_MEMORY, keep_scratch: bool = False,
                 extra_boot_args: Sequence[str] = ()) -> None:
        self.release = self._release()
        self.memory = memory
        self.keep_scratch = keep_scratch or bool(os.environ.get("TESTBED_KEEP_SCRATCH"))
        self.extra_boot_args = list(extra_boot_args)
        # set, it stops the running kernel (its run() raises BackendError): for a host that
        # keeps a kernel for several jobs and gives up on one
        self.cancel = threading.Event()

    def _release(self) -> str:
        return pinned_release()

    def boot_args(self, instance: str, scratch: Path) -> list[str]:
        return [
            self.binary, f"mem={self.memory}", "rootfstype=hostfs", "rootflags=/", "rw",
            f"init={INIT_SCRIPT}", "con=null", "con0=fd:0,fd:1", "quiet",
            f"umid={instance}", f"uml_dir={scratch}", f"TESTBED_SCRATCH={scratch}",
            f"TESTBED_HOSTNAME={instance}", *owner_args(), *self.extra_boot_args,
        ]

    def run(self, argv: Sequence[str], *, cwd: Path | None = None,
            env: Mapping[str, str] | None = None, timeout_s: float | None = None,
            stream: bool = False) -> RunResult:
        refusal = os.environ.get(NO_KERNEL_ENV)
        if refusal:
            raise BackendError(f"no pinned kernel may boot here ({NO_KERNEL_ENV}: {refusal})")
        instance = f"tb{os.getpid()}-{secrets.token_hex(3)}"
        scratch = scratch_root() / instance
        scratch.mkdir(parents=True, exist_ok=False)
        if any(c.isspace() for c in str(scratch)):
            raise BackendError(f"scratch path must not contain white space: {scratch}")
        (scratch / "job.sh").write_text(
            job_script(argv, cwd or REPO_ROOT, job_environment(env, self.name)))
        ok = False
        try:
            result = self._boot(instance, scratch, timeout_s or self.default_timeout_s, stream)
            ok = True
            return result
        finally:
            if ok and not self.keep_scratch:
                shutil.rmtree(scratch, ignore_errors=True)

    def _boot(self, instance: str, scratch: Path, timeout_s: float, stream: bool) -> RunResult:
        import sys

        tails = [_Tail(scratch / "stdout", sys.stdout), _Tail(scratch / "stderr", sys.stderr)] \
            if stream else []
        launched = time.time()
        pinning = cpu_slots.claimed() if self.pin_cpu else contextlib.nullcontext()
        with pinning as cpu, open(scratch / "console.log", "wb") as console:
            argv = self.boot_args(instance, scratch)
            if cpu is not None:  # its metadata names the CPU (TESTBED_HOST_CPU)
                argv = cpu_slots.pinned_argv([*argv, f"TESTBED_HOST_CPU={cpu.cpu}"], cpu)
            # the kernel inherits the claim's lock: the CPU stays claimed while it lives
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=console,
                                    stderr=subprocess.STDOUT, start_new_session=True,
                                    pass_fds=() if cpu is None else (cpu.fd,))
        with _running_lock:
            _running.add(proc)
        for tail in tails:
            tail.start()
        try:
            self._wait(proc, scratch, timeout_s)
        finally:
            _kill_group(proc)
            with _running_lock:
                _running.discard(proc)
            for tail in tails:
                tail.finished.set()
                tail.join()
        return self._collect(scratch, launched, time.time())

    def _wait(self, proc: subprocess.Popen[bytes], scratch: Path, timeout_s: float) -> None:
        """Until the kernel exits; BackendError when it runs past timeout_s of wall time or is
        cancelled."""
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                proc.wait(timeout=min(CANCEL_POLL_S, max(deadline - time.monotonic(), 0.0)))
                return
            except subprocess.TimeoutExpired:
                pass
            self._check_cancelled(scratch)
            if time.monotonic() >= deadline:
                raise BackendError(
                    f"the job inside the pinned kernel ran past its {timeout_s:.0f} s wall-time "
                    f"limit and was stopped; scratch kept at {scratch}")

    def _check_cancelled(self, scratch: Path) -> None:
        if self.cancel.is_set():
            raise BackendError(f"the pinned kernel was stopped on request; scratch kept at "
                               f"{scratch}")

    def _collect(self, scratch: Path, launched: float, ended: float) -> RunResult:
        status = scratch / "status"
        if not status.exists():
            console = (scratch / "console.log").read_text(errors="replace")[-3000:]
            raise BackendError(
                "the pinned kernel stopped before the job finished (crash or out of memory?); "
                f"scratch kept at {scratch}; end of its console:\n{console}")
        timings = {"total": ended - launched}
        init_started = _read_float(scratch / "init-started")
        job_started = _read_float(scratch / "job-started")
        if init_started is not None:
            timings["launch_to_init"] = init_started - launched
        if job_started is not None:
            timings["launch_to_job"] = job_started - launched
        # The job's duration on the kernel's own clock (virtual time on a time-travel kernel).
        uptimes = [_read_float(scratch / f"job-{edge}-uptime") for edge in ("started", "ended")]
        if None not in uptimes:
            timings["job_kernel"] = uptimes[1] - uptimes[0]
        return RunResult(
            backend=self.name,
            kernel_release=_read_text(scratch / "kernel-release").strip() or self.release,
            returncode=int(status.read_text().strip() or 255),
            stdout=_read_text(scratch / "stdout"),
            stderr=_read_text(scratch / "stderr"),
            timings_s=timings,
            clock=self.clock,
        )


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    """User-Mode Linux runs as several host processes in one group: end them all."""
    if proc.poll() is None:
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=0.1)
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            break
        deadline = time.monotonic() + HALT_GRACE_S
        while time.monotonic() < deadline and _group_alive(proc.pid):
            proc.poll()
            time.sleep(0.05)
        if not _group_alive(proc.pid):
            break
    proc.wait()


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def _read_text(path: Path) -> str:
    return path.read_text(errors="replace") if path.exists() else ""


def _read_float(path: Path) -> float | None:
    text = _read_text(path).strip()
    try:
        return float(text)
    except ValueError:
        return None
