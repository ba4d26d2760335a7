"""Where an experiment's runs live on disk, and which of them are finished.

results/<experiment>/runs/<run id>/result.json marks a finished run (written last, atomically,
inside the kernel); a run directory without it is a half-finished attempt and counts for
nothing. pcaps live in results/<experiment>/pcaps/<run id>.pcap: found there, beside the
record, whatever absolute path the record names (runs merged from another host name that
host's directories)."""
from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from topology.kernel.base import default_results_root

RESULTS_ROOT = default_results_root()
RECORD = "result.json"
LOCK = "lock"


class LedgerBusy(RuntimeError):
    """Another process is writing into this ledger."""


@dataclass(frozen=True)
class Ledger:
    root: Path

    @classmethod
    def for_experiment(cls, name: str, results_root: Path = RESULTS_ROOT) -> Ledger:
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

    def batch_metadata(self) -> list[dict[str, Any]]:
        """What each batch's kernel recorded about itself (backend, release, clock, host, ...),
        in the order of the files' names."""
        batches = []
        for path in sorted(self.work.glob("*.metadata.json")):
            try:
                batches.append(json.loads(path.read_text()))
            except json.JSONDecodeError:
                continue  # a batch still writing it
        return batches

    def is_finished(self, run_id: str) -> bool:
        return (self.run_dir(run_id) / RECORD).is_file()

    def record(self, run_id: str) -> dict[str, Any]:
        return json.loads((self.run_dir(run_id) / RECORD).read_text())

    def record_written(self, run_id: str) -> float:
        """When the run's record reached this host's disk, by this host's clock (the times in
        the record are the kernel's, virtual on the virtual clock)."""
        return (self.run_dir(run_id) / RECORD).stat().st_mtime

    def busy(self) -> bool:
        """Whether another process holds the lock (a harness still running here)."""
        path = self.work / LOCK
        if not path.exists():
            return False
        with open(path) as handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except BlockingIOError:
                return True
            fcntl.flock(handle, fcntl.LOCK_UN)
        return False

    @contextmanager
    def lock(self) -> Iterator[None]:
        """Held while runs or merged runs are written here: two harnesses on one ledger would
        run the same run ids into the same directories."""
        self.work.mkdir(parents=True, exist_ok=True)
        path = self.work / LOCK
        with open(path, "a+") as handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                handle.seek(0)
                holder = handle.read().strip() or "unknown"
                raise LedgerBusy(f"another harness (pid {holder}) is writing into {self.root}: "
                                 "wait for it to finish, or stop it, then run this again") from None
            handle.seek(0)
            handle.truncate()
            handle.write(str(os.getpid()))
            handle.flush()
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)
