"""`uml-virtual`: the pinned kernel in virtual time. The same User-Mode Linux 6.1 as `uml`, built
from Debian's linux-source-6.1 with time-travel support and everything built in
(timetravel/build.sh, `make kernel`): the kernel's clock jumps over the time when every program
waits, so timers (netem delays, htb pacing, TCP and SCTP timers) fire in order and nobody waits
for them. A 256 kbit/s satellite path runs tens of times faster than real time.

Two clocks, chosen with TESTBED_TIME_TRAVEL:
- `wall-cpu` (default; a mode of the project's kernel patch): idle time is skipped, but the wall
  time the kernel spends computing is charged to its clock, and so is, per jump over idle time,
  the wake-up latency the real-time kernel pays on this machine after idling that long
  (calibrated once per machine and cached: wake_latency.py, TESTBED_WAKE_LATENCY). Transfer
  times come close to the real-time kernel's (make bench-virtual); like real time, they vary a
  little from run to run.
- `inf-cpu` (User-Mode Linux's own): computing costs no virtual time. Runs are deterministic,
  and shorter than in real time by the kernel's processing and wake-up costs.

In both modes a program that busy-waits (spins on the CPU, or polls without blocking) can keep
the clock from advancing, and the job hangs: the clock moves when the kernel runs its timers,
which it does when every program waits. Programs must block in the kernel (blocking sockets,
poll/select with timeouts, sleep) and cap transfers by bytes, not duration. A wall-time
watchdog ends a stuck job with a message naming the cause: it stops a job whose clock has not
advanced for TESTBED_VIRTUAL_STALL_S seconds of wall time (default 300), and any job past its
wall-time limit (timeout_s, else TESTBED_VIRTUAL_TIMEOUT_S, default 2 hours)."""
from __future__ import annotations

import os
import statistics
import subprocess
import time
from pathlib import Path

from . import open_backend, wake_latency
from .base import BackendError, RunResult, clock_label
from .uml import UmlBackend, _read_float, _read_text
from .wake_latency import WakeTable

BUILD_SCRIPT = Path(__file__).with_name("timetravel") / "build.sh"
HEARTBEAT_SCRIPT = Path(__file__).with_name("uml_heartbeat.sh")
# (Plain `time-travel`, User-Mode Linux's mode meant to charge computing, ran a sleep of 100 s in
# 272 s of wall time here: slower than real time.)
TIME_TRAVEL_MODES = ("wall-cpu", "inf-cpu")
DEFAULT_TIME_TRAVEL = "wall-cpu"
DEFAULT_TIMEOUT_S = 2 * 3600.0
DEFAULT_STALL_S = 300.0
POLL_S = 0.25
MAX_HEARTBEAT_S = 10.0
DIAGNOSIS_WAIT_S = 5.0   # plus one beat: the heartbeat answers when it next beats

BUSY_WAIT_ADVICE = (
    "In virtual time (time-travel={mode}) the kernel's clock advances when every program waits "
    "in the kernel{charged}, so a program that busy-waits (spins on the CPU, or polls without "
    "blocking, as iperf3 does while it waits on its control connection) freezes it. Use "
    "programs that block (blocking sockets, poll/select with a timeout, sleep) and cap "
    "transfers by bytes, not by duration; or run the job with KERNEL=uml (real time).")
CHARGED = {"wall-cpu": " and charges computing time when the kernel next reads it", "inf-cpu": ""}


def busy_wait_advice(mode: str) -> str:
    return BUSY_WAIT_ADVICE.format(mode=mode, charged=CHARGED[mode])


def time_travel_mode(requested: str | None = None) -> str:
    """The clock a virtual-time kernel boots with: `requested`, else $TESTBED_TIME_TRAVEL, else
    wall-cpu."""
    mode = requested or os.environ.get("TESTBED_TIME_TRAVEL") or DEFAULT_TIME_TRAVEL
    if mode not in TIME_TRAVEL_MODES:
        raise BackendError(f"unknown time-travel mode {mode!r} (TESTBED_TIME_TRAVEL): use "
                           "wall-cpu (computing costs real time, as in real-time runs) or "
                           "inf-cpu (computing is free; deterministic)")
    return mode


def virtual_kernel() -> Path:
    """The time-travel kernel's binary: $TESTBED_VIRTUAL_KERNEL, else the cached build."""
    override = os.environ.get("TESTBED_VIRTUAL_KERNEL")
    if override:
        path = Path(override)
        if not os.access(path, os.X_OK):
            raise BackendError(f"TESTBED_VIRTUAL_KERNEL={override} is not an executable kernel")
        return path
    try:
        found = subprocess.run(["bash", str(BUILD_SCRIPT), "--print-path"], capture_output=True,
                               text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as error:
        raise BackendError(f"cannot locate the time-travel kernel: {error}") from None
    if found.returncode != 0:
        reason = found.stderr.strip() or f"{found.stdout.strip()} is not built"
        raise BackendError(f"the time-travel kernel is not ready ({reason}): run `make kernel` "
                           "(builds it once, about 5 minutes on 2 cores)")
    return Path(found.stdout.strip())


def build_release(binary: Path) -> str:
    """The release of the project's kernel build, written beside it by the build
    (`linux.uml --version`)."""
    return _read_text(binary.with_name("release")).strip() or "unknown (time-travel build)"


def _env_seconds(name: str, default: float) -> float:
    value = os.environ.get(name)
    if not value:
        return default
    try:
        seconds = float(value)
    except ValueError:
        raise BackendError(f"{name} must be a number of seconds, got {value!r}") from None
    if seconds <= 0:
        raise BackendError(f"{name} must be positive, got {value!r}")
    return seconds


class VirtualUmlBackend(UmlBackend):
    """Runs jobs inside the time-travel kernel, in virtual time."""

    name = "uml-virtual"
    # one host CPU per kernel (cpu_slots): a transfer's wall time halves, and the computing this
    # clock charges is the kernel's own, not its hand-offs between CPUs
    pin_cpu = True

    def __init__(self, *args, stall_s: float | None = None, time_travel: str | None = None,
                 wake_table: WakeTable | None = None, **kwargs) -> None:
        self.time_travel = time_travel_mode(time_travel)
        self.clock = clock_label(self.time_travel)
        self.binary = str(virtual_kernel())
        self.wake_table = None if self.time_travel != "wall-cpu" else (
            wake_table or calibrated_wake_table(Path(self.binary)))
        self.default_timeout_s = _env_seconds("TESTBED_VIRTUAL_TIMEOUT_S", DEFAULT_TIMEOUT_S)
        self.stall_s = stall_s or _env_seconds("TESTBED_VIRTUAL_STALL_S", DEFAULT_STALL_S)
        super().__init__(*args, **kwargs)

    def _release(self) -> str:
        return build_release(Path(self.binary))

    def boot_args(self, instance: str, scratch: Path) -> list[str]:
        return super().boot_args(instance, scratch) + [
            f"time-travel={self.time_travel_arg()}",
            "TESTBED_MODULES=none",                  # everything is built in
            f"TESTBED_HEARTBEAT={HEARTBEAT_SCRIPT}",
            f"TESTBED_HEARTBEAT_S={self.heartbeat_s():g}",
            "TESTBED_SETTLE_S=1",                    # costs no wall time
        ]

    def heartbeat_s(self) -> float:
        """Seconds of the kernel's clock between beats. Each beat costs about 3 ms of wall time
        (a 1 s beat made an idle hour of the kernel's clock cost 12 s of wall time, against 1.2 s
        without it), and the satellite path's sessions last hours. A clock that is not frozen
        advances at least as fast as wall time in wall-cpu (computing is charged), so a beat
        every stall_s/30 still comes 30 times within the stall limit; at most 10 s, at least 1."""
        return min(MAX_HEARTBEAT_S, max(1.0, self.stall_s / 30))

    def time_travel_arg(self) -> str:
        if self.wake_table is None:
            return self.time_travel
        return f"{self.time_travel}:{self.wake_table.kernel_arg()}"

    def _wait(self, proc: subprocess.Popen[bytes], scratch: Path, timeout_s: float) -> None:
        """Like `uml`, with the stall check: the heartbeat must advance."""
        started = last_advance = time.monotonic()
        clock_s: float | None = None
        job_seen = False
        while True:
            try:
                proc.wait(timeout=POLL_S)
                return
            except subprocess.TimeoutExpired:
                pass
            self._check_cancelled(scratch)
            now = time.monotonic()
            if not job_seen and (scratch / "job-started").exists():
                job_seen = True
                (scratch / "job-seen-wall").write_text(f"{time.time():.3f}\n")
            beat = _read_float(scratch / "heartbeat")
            if beat is not None and (clock_s is None or beat > clock_s):
                clock_s, last_advance = beat, now
            if now - last_advance > self.stall_s:
                raise BackendError(self._stalled(scratch, clock_s, now - last_advance))
            if now - started > timeout_s:
                raise BackendError(self._too_long(scratch, clock_s, timeout_s))

    def _stalled(self, scratch: Path, clock_s: float | None, for_s: float) -> str:
        where = "before it started" if clock_s is None else f"at {clock_s:.1f} s of uptime"
        return (f"the job inside the virtual-time kernel hung: its clock stopped {where} and "
                f"did not advance for {for_s:.0f} s of wall time, so it was stopped. Likely "
                "cause: a program that busy-waits. " + busy_wait_advice(self.time_travel)
                + self._diagnosis(scratch) + " (A job that computes that long without waiting "
                "may raise TESTBED_VIRTUAL_STALL_S.) Scratch kept at " + str(scratch))

    def _too_long(self, scratch: Path, clock_s: float | None, timeout_s: float) -> str:
        reached = "never started" if clock_s is None else f"reached {clock_s:.1f} s"
        return (f"the job inside the virtual-time kernel ran past its {timeout_s:.0f} s "
                f"wall-time limit and was stopped; its clock {reached} in that time. If that is "
                "less than the job should take, the likely cause is a program that busy-waits. "
                + busy_wait_advice(self.time_travel) + self._diagnosis(scratch)
                + f" (Limit: timeout_s, --timeout or TESTBED_VIRTUAL_TIMEOUT_S.) Scratch kept "
                f"at {scratch}")

    def _diagnosis(self, scratch: Path) -> str:
        """Ask the heartbeat for the process list; a frozen clock never answers."""
        (scratch / "diagnose").touch()
        deadline = time.monotonic() + DIAGNOSIS_WAIT_S + self.heartbeat_s()
        while time.monotonic() < deadline and not (scratch / "diagnosis").exists():
            time.sleep(0.1)
        listing = _read_text(scratch / "diagnosis")
        if not listing:
            return (" The kernel could not list its processes: with its clock frozen, no program "
                    "that waits runs again.")
        running = [line.strip() for line in listing.splitlines()[1:]
                   if line.split()[2:3] and line.split()[2].startswith("R")
                   and " ps -eo " not in line]
        if not running:
            return " No process was running when it was stopped."
        return " Running (state R) when it was stopped: " + "; ".join(running) + "."

    def _collect(self, scratch: Path, launched: float, ended: float) -> RunResult:
        result = super()._collect(scratch, launched, ended)
        # Inside, `date` reads the virtual clock: launch-to-job must come from the host's.
        result.timings_s.pop("launch_to_init", None)
        result.timings_s.pop("launch_to_job", None)
        seen = _read_float(scratch / "job-seen-wall")
        if seen is not None:
            result.timings_s["launch_to_job"] = seen - launched
        return result


def calibrated_wake_table(virtual_binary: Path) -> WakeTable:
    """The table this kernel's wall-cpu clock charges: TESTBED_WAKE_LATENCY's, else the cached
    calibration, else one measured now."""
    return wake_latency.wake_table(virtual_binary, calibrate)


def calibrate(virtual_binary: Path) -> dict[str, object]:
    """The wall-cpu clock's wake-up table, measured: the probe run on the real-time kernel and
    on this one charging nothing, alternating, and the table derived from their mean excesses."""
    kernels = {"real": open_backend("uml"),   # Debian's build, or this one where that cannot run
               "charged": VirtualUmlBackend(time_travel="wall-cpu",
                                            wake_table=wake_latency.NO_WAKE_COST)}
    excesses: dict[str, dict[str, list[float]]] = {name: {} for name in kernels}
    started = time.monotonic()
    for _ in range(wake_latency.ROUNDS):
        for name, backend in kernels.items():
            for delay, excess_us in wake_latency.probe(backend).items():
                excesses[name].setdefault(delay, []).append(excess_us)
    points = []
    for delay_s, _ in wake_latency.PROBE_DELAYS:
        real = statistics.fmean(excesses["real"][str(delay_s)])
        charged = statistics.fmean(excesses["charged"][str(delay_s)])
        latency_us = max(0.0, real - charged) / wake_latency.GAPS_PER_ROUND_TRIP
        points.append({"gap_ns": round(delay_s * 1e9), "latency_ns": round(latency_us * 1e3),
                       "real_excess_us": round(real, 1), "charged_excess_us": round(charged, 1)})
    return {"version": wake_latency.CACHE_VERSION,
            "measured": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "host": wake_latency.host(), "load_average": os.getloadavg(),
            "virtual_kernel": str(virtual_binary), "rounds": wake_latency.ROUNDS,
            "calibration_s": round(time.monotonic() - started, 1), "points": points}
