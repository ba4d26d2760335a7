"""A finished or interrupted result set, read from its files alone: summary.csv (one row per
point), runs.csv (one row per run), matrix.json (the full matrix the experiment file expanded
to when the tables were written), meta.json and, when present, the link fidelity check beside
it. Which points of the matrix are missing or unfinished. Never the experiment file: editing it
after a run changes nothing here."""
from __future__ import annotations

import csv
import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

FINISHED = ("tight", "capped")
LEGACY_WORKLOAD = "ftp-mget"   # result folders from before workloads were named


class ResultError(RuntimeError):
    """A result folder that cannot be read; the message says which file and why."""


@dataclass
class ResultSet:
    root: Path
    name: str
    workload: str
    summary: list[dict[str, Any]]          # summary.csv, numbers parsed
    runs: list[dict[str, Any]]             # runs.csv, numbers parsed
    meta: dict[str, Any]
    fidelity: dict[str, Any] | None
    matrix: dict[str, Any] = field(default_factory=dict)

    @property
    def experiment(self) -> dict[str, Any]:
        return self.meta.get("experiment", {})

    @property
    def expected(self) -> list[dict[str, Any]]:
        """The full matrix's points, each with its key and columns."""
        return self.matrix.get("points", [])

    @property
    def expected_source(self) -> str:
        if self.matrix:
            return "matrix.json"
        return "unknown: no matrix.json (rebuild the tables: testbed tables " f"{self.name})"

    @property
    def point_columns(self) -> list[str]:
        return self.matrix.get("point_columns") or []

    def missing(self) -> list[dict[str, Any]]:
        """Points of the full matrix with no row in summary.csv."""
        have = {row.get("point") for row in self.summary}
        return [p for p in self.expected if p["key"] not in have]

    def unfinished(self) -> list[dict[str, Any]]:
        """Points with a row but no finished interval (incomplete, failed, or no runs)."""
        return [row for row in self.summary if row.get("status") not in FINISHED]

    @property
    def complete(self) -> bool:
        return not self.missing() and not self.unfinished()


def named_runs(runs: list[dict[str, Any]], run_ids: list[str], root: Path
               ) -> list[dict[str, Any]]:
    """The runs asked for by id, in that order; KeyError naming those runs.csv lacks."""
    by_id = {r["run_id"]: r for r in runs}
    missing = [r for r in run_ids if r not in by_id]
    if missing:
        raise KeyError(f"no such run in {root}/runs.csv: {', '.join(missing)}")
    return [by_id[r] for r in run_ids]


def number(text: Any) -> Any:
    """A CSV cell as a number where it is one (whole numbers as int); empty cells are NaN,
    words stay words."""
    if text is None or text == "":
        return math.nan
    if re.fullmatch(r"-?\d+", str(text)):
        return int(text)
    try:
        return float(text)
    except (TypeError, ValueError):
        return text


def _read_csv(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        return []
    with path.open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    text_columns = ("run_id", "point", "status", "reasons", "notes", "pcap", "host", "queue",
                    "path", "variant", "profile", "stack", "metric", "flagged")
    return [{k: (v if k in text_columns else number(v)) for k, v in row.items()} for row in rows]


def _read_json(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {}
    try:
        return json.loads(path.read_text())
    except json.JSONDecodeError as error:
        raise ResultError(f"{path}: not valid JSON: {error}") from None


def load(root: Path) -> ResultSet:
    """The result set in ROOT (results/<experiment>/)."""
    root = Path(root)
    if not root.is_dir():
        raise ResultError(f"{root}: no such result folder")
    if not (root / "summary.csv").is_file() and not (root / "meta.json").is_file():
        raise ResultError(f"{root}: neither summary.csv nor meta.json: not a result folder "
                          "(run `testbed tables NAME` if only runs/ is there)")
    meta = _read_json(root / "meta.json")
    matrix = _read_json(root / "matrix.json")
    experiment = meta.get("experiment", {})
    fidelity = None
    try:
        fidelity = _read_json(root.parent / "fidelity.json") or None
    except ResultError:
        fidelity = None
    return ResultSet(root, experiment.get("name", root.name),
                     matrix.get("workload") or experiment.get("workload") or LEGACY_WORKLOAD,
                     _read_csv(root / "summary.csv"), _read_csv(root / "runs.csv"), meta,
                     fidelity, matrix)
