"""Where an experiment's runs live on disk, and which of them are finished.

results/<experiment>/runs/<run id>/result.json marks a finished run (written last, atomically,
inside the kernel); a run directory without it is a half-finished attempt and counts for
nothing. pcaps live in results/<experiment>/pcaps/<run id>.pcap."""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from topology.kernel.base import REPO_ROOT

RESULTS_ROOT = REPO_ROOT / "results"
RECORD = "result.json"


@dataclass(frozen=True)
class Ledger:
    root: Path

    @classmethod
    def for_experiment(cls, name: str, results_root: Path = RESULTS_ROOT) -> "Ledger":
        return cls(results_root / name)

    @property
    def runs(self) -> Path:
        return self.root / "runs"

    @property
    def pcaps(self) -> Path:
        return self.root / "pcaps"

    @property
    def work(self) -> Path:
        return self.root / ".work"

    @property
    def data(self) -> Path:
        return self.root.parent / ".data"

    def prepare(self) -> None:
        for directory in (self.runs, self.pcaps, self.work, self.data):
            directory.mkdir(parents=True, exist_ok=True)
        for stale in self.pcaps.glob("*.partial"):
            stale.unlink()

    def run_dir(self, run_id: str) -> Path:
        return self.runs / run_id

    def pcap(self, run_id: str) -> Path:
        return self.pcaps / f"{run_id}.pcap"

    def finished(self) -> dict[str, dict[str, Any]]:
        """Records of every finished run, by run id."""
        records = {}
        if self.runs.is_dir():
            for record in self.runs.glob(f"*/{RECORD}"):
                try:
                    records[record.parent.name] = json.loads(record.read_text())
                except json.JSONDecodeError:
                    continue  # cannot happen with the atomic write; never counted if it does
        return records

    def is_finished(self, run_id: str) -> bool:
        return (self.run_dir(run_id) / RECORD).is_file()

    def record(self, run_id: str) -> dict[str, Any]:
        return json.loads((self.run_dir(run_id) / RECORD).read_text())
