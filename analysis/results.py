"""A finished or interrupted result set, read from its files: the per-point summary, the per-run
table, the metadata and, when present, the link fidelity check beside it. Also which points of
the experiment's full matrix are missing or unfinished."""
from __future__ import annotations

import csv
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from experiments.harness.plan import Point as MatrixPoint
from experiments.harness.spec import size_label

VARIANT_ORDER = ("tcp", "sctp-naive", "sctp-ms", "sctp-ms-cp", "xftp", "tcp-pipelined")
FINISHED = ("tight", "capped")


class ResultError(RuntimeError):
    """A result folder that cannot be read; the message says which file and why."""


@dataclass(frozen=True)
class PointKey(MatrixPoint):
    """A point of the matrix, as the harness names it, with how the report labels it."""

    @property
    def series(self) -> str:
        return series_label(self.variant, self.profile)

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


@dataclass
class ResultSet:
    root: Path
    name: str
    points: list[Point]
    runs: list[dict[str, Any]]
    meta: dict[str, Any]
    fidelity: dict[str, Any] | None
    expected: list[PointKey] = field(default_factory=list)
    expected_source: str = ""

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
        ranked = sorted(keys, key=lambda k: (variant_rank(k.variant), k.profile))
        return list(dict.fromkeys(k.series for k in ranked))

    def point(self, key: PointKey) -> Point | None:
        return self._by_key().get(key)

    def _by_key(self) -> dict[PointKey, Point]:
        return {p.key: p for p in self.points}

    def missing(self) -> list[PointKey]:
        """Points of the full matrix with no row in summary.csv."""
        have = self._by_key()
        return [k for k in self.expected if k not in have]

    def unfinished(self) -> list[Point]:
        """Points with a row but no finished interval (incomplete, failed, or no runs)."""
        return [p for p in self.points if p.status not in FINISHED]

    @property
    def complete(self) -> bool:
        return not self.missing() and not self.unfinished()


def series_label(variant: str, profile: str) -> str:
    """tcp runs carry their TCP profile (tcp-newreno, tcp-linux); SCTP variants do not."""
    return f"{variant} ({profile})" if variant == "tcp" else variant


def variant_rank(variant: str) -> int:
    return VARIANT_ORDER.index(variant) if variant in VARIANT_ORDER else len(VARIANT_ORDER)


def _float(text: str | None) -> float:
    try:
        return float(text) if text not in (None, "") else math.nan
    except ValueError:
        return math.nan


def _int(text: str | None) -> int:
    value = _float(text)
    return int(value) if math.isfinite(value) else 0


def _read_csv(path: Path) -> list[dict[str, str]]:
    if not path.is_file():
        return []
    with path.open(newline="") as handle:
        return list(csv.DictReader(handle))


def _key(row: dict[str, str]) -> PointKey:
    return PointKey(row["path"], _float(row["loss"]), _int(row["file_size"]), _int(row["files"]),
                    row["variant"], row["profile"])


def _points(rows: list[dict[str, str]]) -> list[Point]:
    points = []
    for row in rows:
        points.append(Point(_key(row), _int(row.get("n")), _float(row.get("mean_s")),
                            _float(row.get("sd_s")), _float(row.get("ci90_half_s")),
                            row.get("status", ""), _int(row.get("runs_failed")),
                            _int(row.get("runs_flagged"))))
    return points


def _runs(rows: list[dict[str, str]]) -> list[dict[str, Any]]:
    runs = []
    for row in rows:
        run: dict[str, Any] = dict(row)
        run["key"] = _key(row)
        for name in ("transfer_time_s", "client_time_s", "pcap_client_diff_ms"):
            run[name] = _float(row.get(name))
        for name in ("connections", "handshakes", "retransmissions", "timeouts", "rep"):
            run[name] = _int(row.get(name))
        run["flagged"] = row.get("flagged") == "True"
        runs.append(run)
    return runs


def expected_points(name: str, meta: dict[str, Any]) -> tuple[list[PointKey], str]:
    """The experiment's full matrix: the harness's own expansion of its experiment file
    (the one meta.json names, else experiments/<name>.toml), else the record in meta.json."""
    from experiments.harness import plan, spec

    record = meta.get("experiment", {})
    for candidate in (record.get("file"), name):
        if not candidate:
            continue
        try:
            experiment = spec.load(str(candidate))
        except (spec.SpecError, OSError, ValueError):
            continue
        if experiment.name == name:
            return ([PointKey(p.path, p.loss, p.file_size, p.files, p.variant, p.profile)
                     for p in plan.points(experiment)], str(experiment.file))
    if record:
        from experiments.harness.profiles import profile_for
        keys = []
        for path in record["paths"]:
            for loss in record["losses"]:
                for size in record["file_sizes"]:
                    for variant in record["variants"]:
                        for tcp_profile in record["tcp_profiles"]:
                            keys.append(PointKey(path["name"], float(loss), int(size),
                                                 int(record["files"]), variant,
                                                 profile_for(variant, tcp_profile)))
        return list(dict.fromkeys(keys)), "meta.json"
    return [], "unknown (no experiment file, no meta.json)"


def load(root: Path) -> ResultSet:
    """The result set in ROOT (results/<experiment>/)."""
    root = Path(root)
    if not root.is_dir():
        raise ResultError(f"{root}: no such result folder")
    summary = root / "summary.csv"
    meta_file = root / "meta.json"
    if not summary.is_file() and not meta_file.is_file():
        raise ResultError(f"{root}: neither summary.csv nor meta.json: not a result folder "
                          "(run `make tables EXP=...` if only runs/ is there)")
    try:
        meta = json.loads(meta_file.read_text()) if meta_file.is_file() else {}
    except json.JSONDecodeError as error:
        raise ResultError(f"{meta_file}: not valid JSON: {error}") from None
    name = meta.get("experiment", {}).get("name", root.name)
    fidelity_file = root.parent / "fidelity.json"
    fidelity = None
    if fidelity_file.is_file():
        try:
            fidelity = json.loads(fidelity_file.read_text())
        except json.JSONDecodeError:
            fidelity = None
    expected, source = expected_points(name, meta)
    return ResultSet(root, name, _points(_read_csv(summary)), _runs(_read_csv(root / "runs.csv")),
                     meta, fidelity, expected, source)
