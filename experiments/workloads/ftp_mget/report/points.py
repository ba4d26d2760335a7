"""An ftp-mget result set as its figures and speed-ups see it: points keyed by path, loss, file
size, files, variant, profile and stack, with the transfer time's mean and 90% interval."""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from analysis.results import FINISHED, ResultSet
from experiments.workloads.base import KERNEL_SCTP
from experiments.workloads.ftp_mget.workload import TCP_VARIANTS, size_label

VARIANT_ORDER = ("tcp", "sctp-naive", "sctp-ms", "sctp-ms-cp", "xftp", "tcp-pipelined")


def series_label(variant: str, profile: str, stack: str = "", parallel: int = 0,
                 sctp_settings: str = "", sctp_stack: str = "") -> str:
    """TCP variants' runs carry their TCP profile (tcp-newreno, tcp-linux); SCTP variants do
    not, but their SCTP settings where the experiment has an axis of them, and their SCTP
    stack where not the kernel's. xftp names its connections per transfer. The stack profile
    is named where the result set compares stacks (else it is "")."""
    name = f"{variant} x{parallel}" if parallel else variant
    label = f"{name} ({profile})" if variant in TCP_VARIANTS else name
    if sctp_settings:
        label = f"{label} {{{sctp_settings}}}"
    if sctp_stack and sctp_stack != KERNEL_SCTP:
        label = f"{label} on {sctp_stack}"
    return f"{label} [{stack}]" if stack else label


def variant_rank(variant: str) -> int:
    return VARIANT_ORDER.index(variant) if variant in VARIANT_ORDER else len(VARIANT_ORDER)


@dataclass(frozen=True)
class PointKey:
    """A point of the matrix, with how the report labels it."""

    path: str
    loss: float
    file_size: int
    files: int
    variant: str
    profile: str
    stack: str = ""       # the stack profile, where the result set has more than one
    parallel: int = 0     # xftp: data connections per transfer
    sctp_settings: str = ""   # the SCTP settings' name, where the experiment has an axis
    sctp_stack: str = ""      # an SCTP variant's SCTP stack ("" for TCP and sets before it)

    @property
    def series(self) -> str:
        return series_label(self.variant, self.profile, self.stack, self.parallel,
                            self.sctp_settings, self.sctp_stack)

    def label(self) -> str:
        return (f"{self.path}, loss {self.loss:g}, {self.files} x {size_label(self.file_size)}, "
                f"{self.series}")


@dataclass
class Point:
    key: PointKey
    n: int
    mean_s: float
    sd_s: float
    ci90_half_s: float
    status: str
    runs_failed: int = 0
    runs_flagged: int = 0

    @property
    def usable(self) -> bool:
        return self.n >= 1 and math.isfinite(self.mean_s)

    @property
    def ci90_low(self) -> float:
        return self.mean_s - self.ci90_half_s

    @property
    def ci90_high(self) -> float:
        return self.mean_s + self.ci90_half_s


def _float(value: Any) -> float:
    return float(value) if isinstance(value, (int, float)) else math.nan


def _int(value: Any) -> int:
    return int(value) if isinstance(value, (int, float)) and math.isfinite(value) else 0


def _text(value: Any) -> str:
    """A text cell: empty (None, or read from a CSV as NaN) is ""."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return str(value)


def key_of(row: dict[str, Any]) -> PointKey:
    return PointKey(str(row["path"]), _float(row["loss"]), _int(row["file_size"]),
                    _int(row["files"]), str(row["variant"]), str(row["profile"]),
                    str(row.get("stack") or ""), _int(row.get("parallel")),
                    _text(row.get("sctp_settings")), _sctp_stack(row))


def _sctp_stack(row: dict[str, Any]) -> str:
    """An SCTP variant's SCTP stack: the kernel's in result sets from before the axis."""
    if str(row["variant"]) in TCP_VARIANTS:
        return ""
    return _text(row.get("sctp_stack")) or KERNEL_SCTP


class FtpResults:
    """The generic result set, read as ftp-mget points and runs."""

    def __init__(self, results: ResultSet) -> None:
        self.generic = results
        self.root: Path = results.root
        self.name = results.name
        self.meta = results.meta
        self.fidelity = results.fidelity
        rows = [*results.summary, *results.runs, *results.expected]
        # the stack is part of a key only where the set compares stacks (sets from before
        # stacks have none)
        self.compares_stacks = len({str(r.get("stack") or "") for r in rows}) > 1
        self.points = [Point(self.key(row), _int(row.get("n")),
                             _float(row.get("transfer_time_s_mean", row.get("mean_s"))),
                             _float(row.get("transfer_time_s_sd", row.get("sd_s"))),
                             _float(row.get("transfer_time_s_ci90_half",
                                            row.get("ci90_half_s"))),
                             str(row.get("status", "")), _int(row.get("runs_failed")),
                             _int(row.get("runs_flagged")))
                       for row in results.summary]
        self.runs = []
        for row in results.runs:
            run = dict(row)
            run["key"] = self.key(row)
            run["flagged"] = row.get("flagged") == "True"
            for name in ("connections", "handshakes", "retransmissions", "timeouts", "rep"):
                run[name] = _int(row.get(name))
            self.runs.append(run)
        self.expected = [self.key(p) for p in results.expected]

    def key(self, row: dict[str, Any]) -> PointKey:
        key = key_of(row)
        return key if self.compares_stacks else dataclasses.replace(key, stack="")

    @property
    def metric(self) -> str:
        return self.meta.get("experiment", {}).get("metric", "nlst150-to-last226")

    @property
    def paths(self) -> list[str]:
        order = [p["name"] for p in self.meta.get("experiment", {}).get("paths", [])]
        seen = {p.key.path for p in self.points} | {k.path for k in self.expected}
        return order + sorted(seen - set(order))

    def path_info(self, name: str) -> dict[str, Any]:
        return next((p for p in self.meta.get("experiment", {}).get("paths", [])
                     if p["name"] == name), {"name": name})

    def variants(self) -> list[str]:
        present = {p.key.variant for p in self.points} | {k.variant for k in self.expected}
        return sorted(present, key=variant_rank)

    def series(self) -> list[str]:
        keys = {p.key for p in self.points} | set(self.expected)
        ranked = sorted(keys, key=lambda k: (k.stack, k.sctp_stack not in ("", KERNEL_SCTP),
                                             variant_rank(k.variant), k.profile,
                                             k.sctp_settings, k.sctp_stack))
        return list(dict.fromkeys(k.series for k in ranked))

    def point(self, key: PointKey) -> Point | None:
        return next((p for p in self.points if p.key == key), None)

    def unfinished(self) -> list[Point]:
        return [p for p in self.points if p.status not in FINISHED]
