"""One run's row: its record from inside the kernel joined with what its workload reads from
its pcap (through experiments.tshark) and from its programs' event logs, into the fields of
runs.csv. Written beside the record as analysis.json, so a run is analysed once however often
the tables are rebuilt."""
from __future__ import annotations

import contextlib
import ctypes
import json
import os
import signal
import sys
import time
from concurrent.futures import Future, ProcessPoolExecutor, as_completed
from pathlib import Path
from typing import Any

from experiments.onhost.ledger import Ledger
from experiments.spec import Experiment
from experiments.tshark import TsharkError

ANALYSIS = "analysis.json"
# Bumped whenever this generic part changes; each workload has its own version beside it.
ANALYSIS_VERSION = 5
WORKERS_ENV = "TESTBED_ANALYSIS_WORKERS"
PROGRESS_ABOVE = 20  # pending runs; fewer take seconds, and a line each time would be noise
PR_SET_PDEATHSIG = 1


class AnalysisError(RuntimeError):
    """A setting of the analysis is wrong (not a run that failed to analyse)."""


def capture_of(run_dir: Path, record: dict[str, Any]) -> Path | None:
    """The run's pcap in the ledger the run directory belongs to (<root>/pcaps/<run id>.pcap).
    The record's absolute path names the directory of the host that ran it, which is not this
    one once runs are merged from several hosts."""
    if not record.get("pcap"):
        return None
    return run_dir.parent.parent / "pcaps" / f"{run_dir.name}.pcap"


def version(experiment: Experiment) -> str:
    return f"{ANALYSIS_VERSION}.{experiment.kind.analysis_version}"


def analyse(experiment: Experiment, run_dir: Path, record: dict[str, Any]) -> dict[str, Any]:
    workload = experiment.kind
    row: dict[str, Any] = {column: None for column in workload.run_columns}
    row["flagged"] = False
    notes: list[str] = []
    capture = capture_of(run_dir, record)
    if capture is not None and capture.exists():
        row["pcap_bytes"] = capture.stat().st_size
    else:
        capture = None
        notes.append("no pcap")
    try:
        measured = workload.analyse(experiment, run_dir, record, capture)
        notes += measured.pop("notes", [])
        row.update(measured)
    except TsharkError as error:
        notes.append(str(error))
    row["notes"] = "; ".join(notes)
    return row


def current(run_dir: Path, expected: str) -> dict[str, Any] | None:
    """The run's cached analysis, or None when it must be redone: missing, older than the
    record (the run was redone or merged over) or of another analysis version."""
    cached = run_dir / ANALYSIS
    if cached.exists() and cached.stat().st_mtime >= (run_dir / "result.json").stat().st_mtime:
        try:
            row = json.loads(cached.read_text())
        except (json.JSONDecodeError, UnicodeDecodeError):
            return None  # damaged by hand: analysed again
        if isinstance(row, dict) and row.get("analysis_version") == expected:
            return row
    return None


def analyse_into_cache(experiment: Experiment, run_dir: Path,
                       record: dict[str, Any]) -> dict[str, Any]:
    row = analyse(experiment, run_dir, record)
    row["analysis_version"] = version(experiment)
    # atomic: an interrupted write leaves the old cache or none, never half a file
    partial = (run_dir / ANALYSIS).with_suffix(".tmp")
    partial.write_text(json.dumps(row, indent=1))
    os.replace(partial, run_dir / ANALYSIS)
    return row


def analysis_workers(workers: int | None = None) -> int:
    """Processes for the analyses: `workers`, else $TESTBED_ANALYSIS_WORKERS, else one per
    core (tshark is single-threaded, so each run keeps one core busy)."""
    if workers is not None:
        return max(1, workers)
    text = os.environ.get(WORKERS_ENV, "").strip()
    if not text:
        return os.cpu_count() or 1
    if not text.isdigit() or int(text) < 1:
        raise AnalysisError(f"{WORKERS_ENV}={text!r}: expected a whole number of analysis "
                            "processes, 1 or more (unset: one per core)")
    return int(text)


def analyses(experiment: Experiment, ledger: Ledger, records: dict[str, dict[str, Any]],
             workers: int | None = None) -> dict[str, dict[str, Any]]:
    """Every run's analysis row by run id: each cache read once, the missing or stale ones
    analysed in parallel first."""
    return _complete(experiment, ledger, records, workers)[0]


def analyse_pending(experiment: Experiment, ledger: Ledger, workers: int | None = None,
                    records: dict[str, dict[str, Any]] | None = None) -> int:
    """Analyses every finished run (of `records`, by default all of the ledger's) whose cached
    analysis is missing or stale, in parallel. Returns how many runs were analysed. With
    everything cached no process is started."""
    return _complete(experiment, ledger, ledger.finished() if records is None else records,
                     workers)[1]


def _complete(experiment: Experiment, ledger: Ledger, records: dict[str, dict[str, Any]],
              workers: int | None) -> tuple[dict[str, dict[str, Any]], int]:
    rows: dict[str, dict[str, Any]] = {}
    pending = []
    expected = version(experiment)
    for run_id, record in records.items():
        row = current(ledger.run_dir(run_id), expected)
        if row is None:
            pending.append((run_id, record))
        else:
            rows[run_id] = row
    if not pending:
        return rows, 0
    workers = min(analysis_workers(workers), len(pending))
    tally = _Tally(len(pending), workers) if len(pending) > PROGRESS_ABOVE else None
    if workers == 1:
        for done, (run_id, record) in enumerate(pending, 1):
            rows[run_id] = _analyse_run(experiment, ledger, run_id, record)
            if tally:
                tally.step(done)
    else:
        # largest pcaps first, so the processes finish together, not one on a big last run
        pending.sort(key=lambda item: -_pcap_size(ledger, *item))
        rows.update(_in_pool(experiment, ledger, pending, workers, tally))
    return rows, len(pending)


def _pcap_size(ledger: Ledger, run_id: str, record: dict[str, Any]) -> int:
    capture = capture_of(ledger.run_dir(run_id), record)
    return capture.stat().st_size if capture is not None and capture.exists() else 0


def _analyse_run(experiment: Experiment, ledger: Ledger, run_id: str,
                 record: dict[str, Any]) -> dict[str, Any]:
    try:
        return analyse_into_cache(experiment, ledger.run_dir(run_id), record)
    except Exception as error:
        raise RuntimeError(f"analysing run {run_id} failed: {error!r}") from error


def _in_pool(experiment: Experiment, ledger: Ledger, pending: list[tuple[str, dict[str, Any]]],
             workers: int, tally: _Tally | None) -> dict[str, dict[str, Any]]:
    """A failure in one run is raised once all the others are written, so that a rerun has
    only the failed ones left to redo."""
    rows: dict[str, dict[str, Any]] = {}
    failures: list[tuple[str, BaseException]] = []
    pool = ProcessPoolExecutor(workers, initializer=worker_setup, initargs=(os.getpid(),))
    try:
        futures: dict[Future, str] = {
            pool.submit(analyse_into_cache, experiment, ledger.run_dir(run_id), record): run_id
            for run_id, record in pending}
        for done, future in enumerate(as_completed(futures), 1):
            error = future.exception()
            if error is not None:
                failures.append((futures[future], error))
            else:
                rows[futures[future]] = future.result()
            if tally:
                tally.step(done)
    except BaseException:
        # an interrupt: the queued runs are dropped and the running ones stopped, rather
        # than waited for; what they had not written is redone by the next run
        stop_pool(pool)
        raise
    else:
        pool.shutdown(wait=True)
    if failures:
        run_id, error = failures[0]
        others = ""
        if len(failures) > 1:
            others = f" (and {len(failures) - 1} more: {', '.join(r for r, _ in failures[1:6])})"
        raise RuntimeError(f"analysing run {run_id} failed: {error!r}{others}") from error
    return rows


def worker_setup(parent: int | None = None) -> None:
    """A worker leaves Ctrl-C to the main process, which stops it. Otherwise the terminal's
    SIGINT reaches every worker too, each prints a traceback, and one caught while taking
    the next task off the queue leaves the pool waiting for it forever. It leads a process
    group of its own, so that stopping it stops its tshark too, and dies of SIGTERM (not
    the main process's handler, inherited at fork, that turns it into an interrupt). It dies
    with `parent`, the process that forked it, even of SIGKILL (die_with_parent)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    os.setpgrp()
    die_with_parent(parent)


def die_with_parent(parent: int | None) -> None:
    """SIGKILL to this process when the thread that forked it ends (PR_SET_PDEATHSIG; pools
    fork their workers from the coordinator's main thread): a coordinator killed with SIGKILL
    leaves no worker analysing on, nor waiting forever on its queue. If `parent` died before
    this was set, the worker ends now."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        return  # not Linux: the worker outlives a killed parent, as before
    if parent is not None and os.getppid() != parent:
        os._exit(1)


def _signal_worker(process: Any, signum: int) -> None:
    """The worker's process group (the worker and its tshark), or the worker alone if it has
    not made its group yet."""
    try:
        os.killpg(process.pid, signum)
    except (ProcessLookupError, PermissionError):
        # it may end between the two calls (its parent's death ends it too)
        with contextlib.suppress(ProcessLookupError):
            os.kill(process.pid, signum)


def stop_pool(pool: ProcessPoolExecutor, grace_s: float = 2.0) -> None:
    """Cancel what has not started and end the workers with their tshark: SIGTERM, then
    SIGKILL after `grace_s`. A half-written analysis is never seen (the cache is written
    atomically), so nothing is lost but the runs in progress, which the next run redoes."""
    processes = list((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        if process.is_alive():
            _signal_worker(process, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    for process in processes:
        process.join(max(0.0, deadline - time.monotonic()))
        if process.is_alive():
            _signal_worker(process, signal.SIGKILL)
            process.join(1.0)


class _Tally:
    """A line to stderr at each tenth of the runs analysed: a large experiment's pcaps take
    minutes, which would otherwise look like a hang before the first round or the tables."""

    def __init__(self, total: int, workers: int) -> None:
        self.total, self.next_tenth = total, 1
        self.started = time.monotonic()
        print(f"analysing the pcaps of {total} runs, {workers} at a time", file=sys.stderr,
              flush=True)

    def step(self, done: int) -> None:
        if done * 10 >= self.next_tenth * self.total:
            self.next_tenth = done * 10 // self.total + 1
            print(f"analysed {done}/{self.total} runs, elapsed "
                  f"{time.monotonic() - self.started:.0f} s", file=sys.stderr, flush=True)
