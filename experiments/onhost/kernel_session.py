"""On the host: one pinned kernel kept booted across an experiment's rounds, running batch after
batch (kernel_serve.py inside). A round of its own kernels would pay a boot, a Python start and
a topology's build, link checks and teardown again, about 7 s of a core each, every round.

Only a real-time kernel is kept. An idle virtual-time kernel's clock jumps from timer to timer
as fast as the host can run it: it would take a core from the analysis between rounds, and its
clock would race days ahead. Virtual time keeps one boot per batch (launch.py).

A batch run here leaves what launch.py leaves: its runs in the ledger, BATCH.log,
BATCH.wall.json (its first batch's wall time holds the boot). A kernel that fails a batch (it
died, or overran the batch's time limit and was stopped) is not used again."""
from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

from experiments.inkernel.kernel_inbox import DONE, POLL_S, REQUEST, STOP, write_atomically
from experiments.onhost import stamps
from experiments.onhost.launch import KERNEL_MEMORY, PYTHON, runs_it_may_run, timeout_s
from topology.kernel import BackendError, open_backend
from topology.kernel.base import REAL_CLOCK, RunResult
from topology.kernel.uml import UmlBackend

STOP_GRACE_S = 60.0
# the kernel's own limit: longer than any experiment; each batch has its own (launch.timeout_s)
KERNEL_LIMIT_S = 30 * 24 * 3600.0


def keeps_kernels(backend: object) -> bool:
    """Whether `backend` boots a User-Mode Linux kernel in real time: the kind kept."""
    return isinstance(backend, UmlBackend) and backend.clock == REAL_CLOCK


class KernelGone(RuntimeError):
    """The kernel had stopped before it took the batch: another kernel may run it."""


class KernelSession:
    """One kernel, booted at the first batch, until `close`."""

    def __init__(self, kernel: str | None, folder: Path) -> None:
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)
        self.backend = open_backend(kernel, memory=KERNEL_MEMORY)
        self.result: RunResult | None = None
        self.error: str | None = None
        self.thread = threading.Thread(target=self._boot, daemon=True,
                                       name=f"kernel {folder.name}")
        self.thread.start()

    def _boot(self) -> None:
        try:
            self.result = self.backend.run(
                [PYTHON, "-m", "experiments.inkernel.kernel_serve", str(self.folder)],
                timeout_s=KERNEL_LIMIT_S)
        except BackendError as error:
            self.error = str(error)
        else:
            (self.folder / "kernel.log").write_text(self.result.stdout + self.result.stderr)

    @property
    def alive(self) -> bool:
        return self.thread.is_alive()

    def run_batch_file(self, batch_file: Path) -> str | None:
        """Runs the batch in this kernel; None when it ran to its end, else why not. Raises
        KernelGone, and leaves no trace of the batch, if the kernel stopped before taking it."""
        limit_s = timeout_s(runs_it_may_run(json.loads(batch_file.read_text())))
        stamper = stamps.Stamper(stamps.marks_file(batch_file))
        launched = time.time()
        stamper.start()
        try:
            answer = self._ask(batch_file, limit_s)
        finally:
            stamper.stop()
        stamps.write(batch_file, launched, time.time(), stamper, {}, self.backend.clock)
        if answer.get("status") != 0:
            return f"stopped early: {answer.get('error')}"
        return None

    def _ask(self, batch_file: Path, limit_s: float) -> dict[str, Any]:
        done, request = self.folder / DONE, self.folder / REQUEST
        done.unlink(missing_ok=True)
        write_atomically(request, str(batch_file))
        deadline = time.monotonic() + limit_s
        while not done.exists():
            if not self.alive:
                if request.exists():
                    request.unlink()
                    raise KernelGone(self.ended_why())
                return {"status": 1, "error": self.ended_why()}
            if time.monotonic() > deadline:
                self.backend.cancel.set()
                self.thread.join()
                return {"status": 1, "error": f"the batch ran past its {limit_s:.0f} s "
                                              "wall-time limit; its kernel was stopped"}
            time.sleep(POLL_S)
        answer = self._read_answer(done)
        done.unlink()
        return answer

    def _read_answer(self, done: Path) -> dict[str, Any]:
        """The kernel's answer, waited for while its bytes are on their way; a failed batch if
        the kernel died before they reached the host."""
        while True:
            try:
                answer: dict[str, Any] = json.loads(done.read_text())
                return answer
            except json.JSONDecodeError:
                if not self.alive:
                    why = self.ended_why()
                    return {"status": 1, "error": "the kernel stopped before its answer for "
                                                  f"the batch reached the host:\n{why}"}
            time.sleep(POLL_S)

    def ended_why(self) -> str:
        if self.error:
            return self.error
        if self.result is not None:
            tail = "\n".join(self.result.stderr.strip().splitlines()[-8:])
            return f"the kernel stopped (exit {self.result.returncode}):\n{tail}"
        return "the kernel stopped"

    def close(self) -> None:
        """Lets the kernel halt; stops it after a grace period."""
        self.ask_to_stop()
        self.wait_stopped()

    def ask_to_stop(self) -> None:
        if self.alive:
            write_atomically(self.folder / STOP, "")

    def wait_stopped(self) -> None:
        self.thread.join(STOP_GRACE_S)
        if self.alive:
            self.backend.cancel.set()
            self.thread.join()


def close_all(sessions: list[KernelSession]) -> None:
    """Every kernel asked to halt at once, then waited for."""
    for session in sessions:
        session.ask_to_stop()
    for session in sessions:
        session.wait_stopped()
