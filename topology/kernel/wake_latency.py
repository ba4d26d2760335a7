"""The wake-up latency the wall-cpu clock charges for each jump over idle time.

A real-time kernel that idles until its next timer wakes late: the host's timer fires late (more
so after a long sleep, as the CPU idles deeper) and User-Mode Linux receives it through a host
signal. The wall-cpu clock skips the idle time and charges the time the kernel computes, but not
that lateness. So, once per machine, the same probe (topology/fidelity/wake_probe.py: ping over
a pure delay, two idle gaps per round trip) runs on the real-time kernel and on the wall-cpu
kernel charged no wake-up cost. For each delay, half the difference of the mean round trips,
never below zero, is the latency the wall-cpu kernel then charges per jump over a gap that long
(`time-travel=wall-cpu:GAP_NS/LATENCY_NS,...`, linear between the points).

The table is cached per virtual kernel, real-time kernel and host, under the kernel cache.
TESTBED_WAKE_LATENCY: `auto` (default: calibrate once, then the cached table), `none` (charge no
wake-up cost), or a table GAP_NS/LATENCY_NS,... given by hand."""
from __future__ import annotations

import fcntl
import hashlib
import json
import os
import platform
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .base import BackendError

ENV = "TESTBED_WAKE_LATENCY"
# One-way delays probed (s) and echoes per round: the gaps between timers that transfers see,
# from LAN pacing (sub-millisecond) to satellite round trips and retransmission timeouts.
PROBE_DELAYS = ((0.0002, 40), (0.0005, 40), (0.001, 40), (0.003, 30), (0.01, 30), (0.03, 20),
                (0.1, 15), (0.3, 8))
GAPS_PER_ROUND_TRIP = 2
ROUNDS = 2           # real and charged alternate, so a drifting host affects both alike
MAX_POINTS = 16      # the kernel's limit
CACHE_VERSION = 2   # 2: the virtual kernel pinned to a host CPU (cpu_slots)
BUSY_LOAD_PER_CORE = 0.5  # a 1-minute load above it at the start: other work shares the CPU
PROBE_TIMEOUT_S = 900.0


@dataclass(frozen=True)
class WakeTable:
    """(gap, latency) points in nanoseconds, gaps rising; where the numbers came from."""

    points: tuple[tuple[int, int], ...]
    source: str

    def kernel_arg(self) -> str:
        return ",".join(f"{gap}/{latency}" for gap, latency in self.points)

    def describe(self) -> str:
        steps = ", ".join(f"{gap / 1e6:g} ms: {latency / 1e3:.0f} us"
                          for gap, latency in self.points)
        return f"{steps} ({self.source})"

    @classmethod
    def parse(cls, text: str, source: str) -> WakeTable:
        points = []
        for item in text.split(","):
            gap, slash, latency = item.strip().partition("/")
            if not (slash and gap.isdigit() and latency.isdigit()):
                raise BackendError(
                    f"bad wake-up latency table {text!r} ({source}): expected "
                    "GAP_NS/LATENCY_NS pairs separated by commas, e.g. 1000000/0,100000000/150000")
            points.append((int(gap), int(latency)))
        if any(b[0] <= a[0] for a, b in zip(points, points[1:], strict=False)):
            raise BackendError(f"bad wake-up latency table {text!r} ({source}): the gaps must "
                               "rise from one point to the next")
        if len(points) > MAX_POINTS:
            raise BackendError(f"bad wake-up latency table {text!r} ({source}): at most "
                               f"{MAX_POINTS} points")
        return cls(tuple(points), source)


NO_WAKE_COST = WakeTable(((0, 0),), "none: no wake-up cost charged")


def from_kernel_arg(mode_arg: str) -> str | None:
    """The table part of a `time-travel=wall-cpu:TABLE` argument, if any."""
    mode, colon, table = mode_arg.partition(":")
    return table if colon and mode == "wall-cpu" else None


Calibration = Callable[[Path], dict[str, Any]]


def wake_table(virtual_binary: Path, calibrate: Calibration) -> WakeTable:
    """The table the wall-cpu clock charges, as TESTBED_WAKE_LATENCY asks. `calibrate` measures
    it where no table is cached: it boots both kernels, so the backend that needs the table
    passes it in (uml_virtual.calibrate) and this module imports no backend."""
    choice = os.environ.get(ENV, "auto").strip() or "auto"
    if choice == "none":
        return NO_WAKE_COST
    if choice != "auto":
        return WakeTable.parse(choice, ENV)
    return _cached_or_calibrated(virtual_binary, calibrate)


def cache_file(virtual_binary: Path) -> Path:
    from .uml import pinned_release
    identity = json.dumps({
        "version": CACHE_VERSION, "virtual_kernel": str(virtual_binary.resolve()),
        "real_kernel": pinned_release(), "host": host(),
    }, sort_keys=True)
    key = hashlib.sha256(identity.encode()).hexdigest()[:16]
    root = Path(os.environ.get("TESTBED_KERNEL_CACHE", "/var/cache/testbed"))
    return root / "calibration" / f"wake-latency-{key}.json"


def cached_record(virtual_binary: Path) -> dict[str, Any] | None:
    """The calibration behind the cached table, if there is one."""
    return _read_record(cache_file(virtual_binary))


def host() -> dict[str, Any]:
    model = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {"kernel": platform.release(), "cpu": model, "cores": os.cpu_count()}


def _cached_or_calibrated(virtual_binary: Path, calibrate: Calibration) -> WakeTable:
    path = cache_file(virtual_binary)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # parallel workers calibrate once between them
        record = _read_record(path)
        if record is None:
            print(f"wake-latency: calibrating the wall-cpu clock against the real-time kernel "
                  f"on this machine (once; about 2 minutes, best on an idle machine) -> {path}",
                  file=sys.stderr, flush=True)
            load_before = os.getloadavg()[0]
            record = calibrate(virtual_binary)
            record["load_before"] = round(load_before, 2)
            warning = busy_warning(record, path)
            if warning:
                print(warning, file=sys.stderr, flush=True)
            tmp = path.with_suffix(".tmp")
            tmp.write_text(json.dumps(record, indent=2) + "\n")
            tmp.replace(path)
    return table_of(record, path)


def busy_warning(record: dict[str, Any], path: Path) -> str | None:
    """What to do about a table measured while other work held the CPU, or None. Such a table
    runs high (measured here: 145 to 658 us per jump with tests running on both cores, against
    96 to 242 us idle), and it overcharges most the runs that wake most often per packet, a
    user-space stack's (usrsctp) more than the kernel's."""
    load = record.get("load_before")
    cores = (record.get("host") or {}).get("cores") or 1
    if load is None or load <= BUSY_LOAD_PER_CORE * cores:
        return None
    return (f"wake-latency: the machine was busy when this table was measured (1-minute load "
            f"{load:g} on {cores} cores), so its latencies run high and every wall-cpu run on "
            f"it is charged them ({path}). On an idle machine: testbed wake-latency "
            f"--recalibrate")


def _read_record(path: Path) -> dict[str, Any] | None:
    try:
        record = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return record if record.get("version") == CACHE_VERSION else None


def table_of(record: dict[str, Any], path: Path) -> WakeTable:
    text = ",".join(f"{p['gap_ns']}/{p['latency_ns']}" for p in record["points"])
    return WakeTable.parse(text, f"calibrated {record['measured']}, {path}")


def probe(backend: Any) -> dict[str, float]:
    specs = [f"{delay}:{count}" for delay, count in PROBE_DELAYS]
    result = backend.run(["/usr/bin/python3", "-m", "topology.fidelity.wake_probe", *specs],
                         timeout_s=PROBE_TIMEOUT_S)
    if result.returncode != 0:
        raise BackendError(f"the wake-up latency probe failed on {backend.name} "
                           f"(exit {result.returncode}): {result.stderr.strip()[-800:]}")
    try:
        return json.loads(result.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        raise BackendError(f"the wake-up latency probe on {backend.name} printed no "
                           f"measurements: {result.stdout[-400:]!r}") from None
