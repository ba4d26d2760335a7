"""A round's runs analysed while the round goes on: each run's pcap read as soon as its record
is on this host's disk, one run at a time, in one process of the idle scheduling class
(SCHED_IDLE, its tshark too: it runs only on a core nothing else wants, so a real-time run is
not delayed by it), and the round's end finds most analyses cached (analyze.py writes them
beside the records). The kernels of a round leave much of two cores idle: each waits on the
host's ptrace for every system call of its programs.

A run whose analysis fails here is left to the round's end, which analyses whatever is not
cached and reports failures. An interrupt stops the analysis in progress; its run is analysed
again later (the cache is written atomically)."""
from __future__ import annotations

import json
import os
import threading
from concurrent.futures import Future, ProcessPoolExecutor
from types import TracebackType
from typing import Any

from experiments.onhost.analyze import analyse_into_cache, current, stop_pool, version, worker_setup
from experiments.onhost.ledger import RECORD, Ledger
from experiments.spec import Experiment

POLL_S = 2.0


class RoundAnalysis:
    """`with RoundAnalysis(experiment, ledger, run_ids): <run the round>`."""

    def __init__(self, experiment: Experiment, ledger: Ledger, run_ids: list[str],
                 poll_s: float = POLL_S) -> None:
        self.experiment, self.ledger, self.poll_s = experiment, ledger, poll_s
        self.waiting = list(run_ids)
        self.analysed = 0
        self.stopping = threading.Event()
        self.pool: ProcessPoolExecutor | None = None
        self.thread = threading.Thread(target=self._loop, name="round-analysis", daemon=True)

    def __enter__(self) -> RoundAnalysis:
        # forked now, from the one thread there is before the round starts (a fork from a
        # thread among others copies their locks), rather than at the first run: spawned, it
        # would import the program's main module again, which for a script runs it again
        self.pool = ProcessPoolExecutor(1, initializer=_background_worker_setup,
                                        initargs=(os.getpid(),))
        self.pool.submit(os.getpid).result()
        self.thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self.stopping.set()
        assert self.pool is not None
        if kind is None:
            self.thread.join()  # the analysis in progress is finished, not thrown away
            self.pool.shutdown(wait=True)
        else:
            stop_pool(self.pool)
            self.thread.join()

    def ready(self) -> list[tuple[str, dict[str, Any]]]:
        """The waiting runs whose records have arrived, with their records; they stop
        waiting. A run already analysed (a cache as new as its record) is skipped, and so is
        one whose record cannot be read (the ledger sets it aside at the round's end)."""
        arrived, expected = [], version(self.experiment)
        for run_id in list(self.waiting):
            run_dir = self.ledger.run_dir(run_id)
            if not (run_dir / RECORD).exists():
                continue
            self.waiting.remove(run_id)
            if current(run_dir, expected) is None:
                try:
                    record = json.loads((run_dir / RECORD).read_text())
                except (OSError, ValueError):
                    continue
                if isinstance(record, dict):
                    arrived.append((run_id, record))
        return arrived

    def _loop(self) -> None:
        while not self.stopping.is_set():
            ready = self.ready()
            if not ready:
                self.stopping.wait(self.poll_s)
                continue
            for run_id, record in ready:
                if self.stopping.is_set() or not self._analyse(run_id, record):
                    return

    def _analyse(self, run_id: str, record: dict[str, Any]) -> bool:
        """One run through the pool; False once the pool is stopped."""
        assert self.pool is not None
        try:
            future: Future[dict[str, Any]] = self.pool.submit(
                analyse_into_cache, self.experiment, self.ledger.run_dir(run_id), record)
        except RuntimeError:  # shut down by an interrupt
            return False
        if future.exception() is None:
            self.analysed += 1
        return True


def _background_worker_setup(parent: int) -> None:
    worker_setup(parent)
    try:
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
    except (AttributeError, OSError):  # not Linux
        os.nice(19)
