"""A progress line for long batches: done/total, failures, elapsed and an ETA."""
from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable

from experiments.onhost.forecast import duration


class Progress(threading.Thread):
    """Polls `status()` -> (done, failed, the ETA as text) and prints a line every few seconds
    until stopped."""

    def __init__(self, label: str, total: int, status: Callable[[], tuple[int, int, str]],
                 every_s: float = 5.0) -> None:
        super().__init__(daemon=True)
        self.label, self.total, self.status, self.every_s = label, total, status, every_s
        self.stopped = threading.Event()
        self.started_at = time.monotonic()
        self.tty = sys.stderr.isatty()

    def line(self, final: bool = False) -> str:
        done, failed, eta = self.status()
        elapsed = time.monotonic() - self.started_at
        return (f"{self.label}: {done}/{self.total} runs done, {failed} failed, "
                f"elapsed {duration(elapsed)}{'' if final else f', {eta}'}")

    def run(self) -> None:
        while not self.stopped.wait(1.0 if self.tty else self.every_s):
            self.emit()

    def emit(self, final: bool = False) -> None:
        end = "\n" if final or not self.tty else "\r"
        sys.stderr.write(self.line(final) + end)
        sys.stderr.flush()

    def stop(self) -> None:
        self.stopped.set()
        self.join()
        self.emit(final=True)
