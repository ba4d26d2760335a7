"""On the host: the wall-clock time of each step a batch reports from inside its kernel.

kernel_batch.py appends a line to the batch's marks file as it reaches each step (started,
topology, each run's phases, record, ended). Inside a virtual-time kernel its own clock is
the kernel's, so this host polls the file and stamps each new line with its own clock as it
appears (the kernel's writes reach the host's file system at once). With the launch and the
kernel's exit, that is where a batch's wall time went: `<batch>.wall.json` beside the batch
file, read by wall_profile.py."""
from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

POLL_S = 0.02   # the stamps' resolution; a run's phases last 0.1 s and more


class Stamper(threading.Thread):
    """Polls `marks` until stopped; `stamped` holds [host time, step, run id] per line."""

    def __init__(self, marks: Path) -> None:
        super().__init__(daemon=True)
        self.marks = marks
        self.stamped: list[list[Any]] = []
        self.finished = threading.Event()
        self.offset = 0
        self.partial = ""

    def run(self) -> None:
        while not self.finished.wait(POLL_S):
            self.read()
        self.read()

    def read(self) -> None:
        try:
            with self.marks.open("r", errors="replace") as source:
                source.seek(self.offset)
                chunk = source.read()
                self.offset = source.tell()
        except FileNotFoundError:
            return
        now = time.time()
        lines = (self.partial + chunk).split("\n")
        self.partial = lines.pop()     # a line not yet written to its end
        for line in lines:
            try:
                mark = json.loads(line)
            except json.JSONDecodeError:
                continue
            self.stamped.append([now, str(mark.get("step", "")), str(mark.get("run", ""))])

    def stop(self) -> None:
        self.finished.set()
        self.join()


def marks_file(batch_file: Path) -> Path:
    return batch_file.with_name(batch_file.stem + ".marks.jsonl")


def wall_file(batch_file: Path) -> Path:
    return batch_file.with_name(batch_file.stem + ".wall.json")


def write(batch_file: Path, launched: float, ended: float, stamper: Stamper,
          timings_s: dict[str, float], clock: str) -> None:
    """The batch's wall record: launch and exit on this host's clock, every stamped step, and
    the backend's own timings."""
    record = {"launched": launched, "ended": ended, "clock": clock, "marks": stamper.stamped,
              "backend_timings_s": timings_s}
    partial = wall_file(batch_file).with_suffix(".tmp")
    partial.write_text(json.dumps(record))
    partial.replace(wall_file(batch_file))


COORDINATOR = "coordinator.wall.jsonl"


def coordinator_step(work: Path, host: str, step: str, started: float, ended: float,
                     workers: int) -> None:
    """One step of the coordinator on this host (analysis, a round of runs, the tables), one
    line appended to the ledger's record of them: a resumed experiment adds its steps."""
    line = json.dumps({"host": host, "step": step, "started": started, "ended": ended,
                       "workers": workers})
    with (work / COORDINATOR).open("a+b") as out:
        # a line cut short (its disk was full) is ended, so that it spoils no other
        out.seek(0, 2)
        cut = out.tell() > 0 and out.seek(-1, 2) >= 0 and out.read(1) != b"\n"
        out.write((b"\n" if cut else b"") + line.encode() + b"\n")
