"""Whether a round's captures fit on the disk that holds the results, asked before the round
starts. A round that fills the disk fails every run after that moment, and a matrix can be
large: E1 would write about 14 GB of whole-packet captures per repetition (1.7 GB as the
capture of headers its file asks for).

A run's capture is expected to be as large as the captures its point has written so far (their
mean), or, for a point without any, what the workload expects (`capture_bytes`, where it has
one); a workload without an estimate is not checked until its points have captures.

The disk can still fill during a round (something else writes to it, a capture outgrows its
estimate). A kernel then writes no record for the run it was in and stops its batch
(inkernel/kernel_batch.py), and the harness stops with `full_message`: which disk, how full,
what holds the space and what to do. The runs finished before are intact; the rest are redone
by the same command once there is room.

    shortfall(orders, ledger, estimate, label) -> str | None    the error to stop with, or None
    is_full(ledger) -> bool                  a small write into the ledger fails for want of room
    no_space(error) -> OSError | None        the error, or one it came from, if ENOSPC or EDQUOT
    full_message(ledger, what) -> str        the error to stop with
"""
from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from statistics import fmean
from typing import Any

from experiments.diskspace import FULL, refuses_a_write
from experiments.onhost.ledger import Ledger

# room left for the records, the analyses, the kernels' consoles and whatever else shares the disk
MARGIN_BYTES = 2 * 1024**3
MARGIN_ENV = "TESTBED_DISK_MARGIN_MB"   # another margin, in MiB (a small disk, a test)
GB = 1e9


def margin_bytes() -> int:
    text = os.environ.get(MARGIN_ENV, "").strip()
    if not text:
        return MARGIN_BYTES
    if not text.isdigit():
        raise ValueError(f"{MARGIN_ENV}={text!r}: expected a whole number of MiB")
    return int(text) * 1024**2


def size(count: float) -> str:
    """Bytes as a person reads them: 1.7 GB, 35 MB, 812 kB."""
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if abs(count) >= scale:
            return f"{count / scale:.1f} {unit}"
    return f"{count:.0f} bytes"


def written_by_point(ledger: Ledger) -> dict[str, float]:
    """The mean size of the captures each point's finished runs have written."""
    sizes: dict[str, list[int]] = {}
    for run_id, record in ledger.finished().items():
        pcap = ledger.pcap(run_id)
        if pcap.exists():
            sizes.setdefault(str(record.get("point", "")), []).append(pcap.stat().st_size)
    return {point: fmean(found) for point, found in sizes.items()}


def expected_bytes(orders: list[dict[str, Any]], written: dict[str, float],
                   estimate: Callable[[dict[str, Any]], float | None]) -> float:
    total = 0.0
    for order in orders:
        size = written.get(order["point"])
        if size is None:
            size = estimate(order)
        total += size or 0.0
    return total


def shortfall(orders: list[dict[str, Any]], ledger: Ledger,
              estimate: Callable[[dict[str, Any]], float | None], label: str) -> str | None:
    todo = [order for order in orders if not ledger.is_finished(order["id"])]
    needed = expected_bytes(todo, written_by_point(ledger), estimate)
    free = shutil.disk_usage(_existing(ledger.pcaps)).free
    margin = margin_bytes()
    if needed + margin <= free:
        return None
    return (f"{label} would write about {size(needed)} of captures ({len(todo)} runs) "
            f"into {ledger.root}, whose disk has {size(free)} free (and {size(margin)} are kept "
            f"free for the rest; {MARGIN_ENV} sets another margin): free some space, or "
            "resume into a --results folder on a larger disk after moving this one there. "
            "The finished runs are kept; `testbed run` resumes where this stopped")


def is_full(ledger: Ledger) -> bool:
    """Whether the results disk is out of room: the ledger refuses a write (diskspace.py)."""
    return refuses_a_write(_existing(ledger.work))


def no_space(error: BaseException | None) -> OSError | None:
    """The write refused for want of room that `error` is, or was raised from; else None."""
    seen: set[int] = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        if isinstance(error, OSError) and error.errno in FULL:
            return error
        error = error.__cause__ or error.__context__
    return None


def full_message(ledger: Ledger, what: str | OSError = "") -> str:
    """What filled, how much is free, and what to do. `what`: what could not be written (a
    refused write names its file, where it knows it)."""
    if isinstance(what, OSError):
        what = f"writing {what.filename}" if what.filename else ""
    where = _existing(ledger.root)
    usage = shutil.disk_usage(where)
    held = ", ".join(f"{name}/ {size(_bytes_under(ledger.root / name))}"
                     for name in ("pcaps", "runs", ".work"))
    return (f"the results disk is full{f' ({what})' if what else ''}: {ledger.root} is on "
            f"{_mount_point(where)}, which has {size(usage.free)} free of {size(usage.total)}; "
            f"this experiment holds {held}. The runs finished before are kept intact; the runs "
            "in progress wrote no record and are redone. Free some space on that disk (or move "
            f"{ledger.root} to a larger one and pass its new parent as --results), then run the "
            "same command again")


def _bytes_under(folder: Path) -> int:
    total = 0
    for path, _, files in os.walk(folder):
        for name in files:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(path, name)).st_size
    return total


def _mount_point(path: Path) -> Path:
    path = path.resolve()
    while not os.path.ismount(path) and path != path.parent:
        path = path.parent
    return path


def _existing(path: Path) -> Path:
    while not path.exists() and path != path.parent:
        path = path.parent
    return path
