"""Whether a round's captures fit on the disk that holds the results, asked before the round
starts. A round that fills the disk fails every run after that moment, and a matrix can be
large: E1 would write about 14 GB of whole-packet captures per repetition (1.7 GB as the
capture of headers its file asks for).

A run's capture is expected to be as large as the captures its point has written so far (their
mean), or, for a point without any, what the workload expects (`capture_bytes`, where it has
one); a workload without an estimate is not checked until its points have captures.

    shortfall(orders, ledger, estimate, label) -> str | None    the error to stop with, or None
"""
from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from statistics import fmean
from typing import Any

from .ledger import Ledger

# room left for the records, the analyses, the kernels' consoles and whatever else shares the disk
MARGIN_BYTES = 2 * 1024**3
GB = 1e9


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
    if needed + MARGIN_BYTES <= free:
        return None
    return (f"{label} would write about {needed / GB:.1f} GB of captures ({len(todo)} runs) "
            f"into {ledger.root}, whose disk has {free / GB:.1f} GB free (and "
            f"{MARGIN_BYTES / GB:.0f} GB are kept free for the rest): free some space, or "
            "resume into a --results folder on a larger disk after moving this one there. "
            "The finished runs are kept; `testbed run` resumes where this stopped")


def _existing(path: Path) -> Path:
    while not path.exists() and path != path.parent:
        path = path.parent
    return path
