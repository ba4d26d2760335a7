"""A progress line for long batches: done/total, failures, elapsed and an ETA."""
from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable


def _clock(seconds: float) -> str:
    seconds = max(0, int(seconds))
    hours, rest = divmod(seconds, 3600)
    return f"{hours}h{rest // 60:02d}m" if hours else f"{rest // 60}m{rest % 60:02d}s"


class Progress(threading.Thread):
    """Polls `count()` -> (done, failed, share of the estimated work done) and prints a line
    every few seconds until stopped. The ETA follows the share of work, not the count of runs:
    the longest runs go first, so a count would promise far too late an end."""

    def __init__(self, label: str, total: int, estimate_s: float,
                 count: Callable[[], tuple[int, int, float]], every_s: float = 5.0) -> None:
        super().__init__(daemon=True)
        self.label, self.total, self.estimate_s = label, total, estimate_s
        self.count, self.every_s = count, every_s
        self.stopped = threading.Event()
        self.started_at = time.monotonic()
        self.tty = sys.stderr.isatty()

    def line(self) -> str:
        done, failed, share = self.count()
        elapsed = time.monotonic() - self.started_at
        if done and share > 0:
            remaining = elapsed * (1 - share) / share
        else:
            remaining = max(self.estimate_s - elapsed, 0)
        return (f"{self.label}: {done}/{self.total} runs done, {failed} failed, "
                f"elapsed {_clock(elapsed)}, ETA {_clock(remaining)}")

    def run(self) -> None:
        while not self.stopped.wait(1.0 if self.tty else self.every_s):
            self.emit()

    def emit(self, final: bool = False) -> None:
        end = "\n" if final or not self.tty else "\r"
        sys.stderr.write(self.line() + end)
        sys.stderr.flush()

    def stop(self) -> None:
        self.stopped.set()
        self.join()
        self.emit(final=True)
