"""Runs an experiment to completion: rounds of runs until every point's confidence interval is
tight or its cap is reached, each round split into batches that run in parallel, one pinned
kernel per worker. Resumable: finished runs are never run again, half-finished ones are. Before
it plans, a harness stops the kernels a killed one left working on its ledger (leftovers.py);
a full results disk stops it with what to do (disk.py)."""
from __future__ import annotations

import json
import os
import re
import shutil
import socket
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from experiments import stats
from experiments.cluster import slurm
from experiments.onhost import disk, forecast, launch, leftovers, simulated, stamps, tables
from experiments.onhost.alongside import RoundAnalysis
from experiments.onhost.analyze import analyses
from experiments.onhost.kernel_session import KernelGone, KernelSession, close_all, keeps_kernels
from experiments.onhost.ledger import Ledger, LedgerBusy
from experiments.onhost.progress import Progress
from experiments.onhost.wall_profile import KERNELS_STOP
from experiments.spec import Experiment
from experiments.stacks import STACKS, refusal_without_switches, sysctls_for
from experiments.workloads.base import Point, WorkloadError
from topology.kernel import metadata, open_backend
from topology.kernel.uml import stop_all

MAX_FAILURES_PER_POINT = 3
T = TypeVar("T")


class HarnessError(RuntimeError):
    pass


@dataclass
class PointState:
    point: Point
    values: dict[str, list[float]]   # every metric's values over the runs that count
    reps: list[int]
    failures: int
    metric: str                      # the one that decides when the point is tight

    @property
    def samples(self) -> list[float]:
        return self.values[self.metric]

    def needed(self, experiment: Experiment) -> int:
        reps = experiment.repetitions
        if self.failures >= MAX_FAILURES_PER_POINT and len(self.samples) < reps.min:
            return 0  # given up: reported as failed
        reps = experiment.repetitions
        return stats.runs_still_needed(self.samples, reps.confidence, reps.target_half_width,
                                       reps.min, reps.max)


def free_reps(taken: list[int], count: int) -> list[int]:
    """The `count` lowest repetition numbers no finished run holds: a run left half-finished
    (an interrupted worker, a cancelled Slurm task) is redone under its own id, and ids stay
    1..n without gaps."""
    free, rep, held = [], 1, set(taken)
    while len(free) < count:
        if rep not in held:
            free.append(rep)
        rep += 1
    return free


class Harness:
    def __init__(self, experiment: Experiment, workers: int | None = None,
                 kernel: str | None = None, ledger: Ledger | None = None,
                 only: list[str] | None = None, host: str | None = None,
                 slurm_settings: slurm.SlurmSettings | None = None) -> None:
        """`only`: run just these point keys (a share of a fanned-out experiment); the ledger's
        runs of other points are kept and left alone. `host`: the name every run records as
        the host that ran it (default: this machine's hostname). `slurm_settings`: run each
        round as a Slurm job array instead of on this machine's kernels."""
        self.experiment = experiment
        self.workers = max(1, workers or os.cpu_count() or 1)
        self.kernel = kernel
        self.ledger = ledger or Ledger.for_experiment(experiment.name)
        self.workload = experiment.kind
        self.points = {p.key: p for p in experiment.points()}
        if only is not None:
            unknown = sorted(set(only) - set(self.points))
            if unknown:
                raise HarnessError(
                    f"not points of {experiment.name}: {', '.join(unknown[:5])} (list them with "
                    f"`testbed plan {experiment.file}`)")
            self.points = {key: p for key, p in self.points.items() if key in set(only)}
        self.host = host or socket.gethostname()
        self.slurm = slurm_settings
        self.prepared: Any = None
        self._testbed: dict[str, Any] | None = None
        # (estimate_s, wall_s) of the runs this process saw end, for the progress line's ETA
        self.wall_samples: list[tuple[float, float]] = []
        self._intended: tuple[str, str] | None = None
        # per worker, its kernel kept across rounds (real time only: kernel_session.py)
        self.sessions: dict[int, KernelSession] = {}
        self._keeps_kernels: bool | None = None

    # -- the whole experiment ---------------------------------------------------------------
    def run(self) -> Path:
        try:
            with self.ledger.lock():
                try:
                    return self._run()
                finally:
                    if self.sessions:
                        self.timed(KERNELS_STOP, self.close_sessions)
        except (LedgerBusy, WorkloadError, slurm.SlurmError) as error:
            raise HarnessError(str(error)) from None
        except Exception as error:
            refused = disk.no_space(error)
            if refused is not None:
                raise HarnessError(disk.full_message(self.ledger, refused)) from None
            raise

    def _run(self) -> Path:
        if self.experiment.simulator and self.slurm:
            raise HarnessError(f"{self.experiment.name} runs in {self.experiment.simulator} on "
                               "this host, a run in seconds: drop --slurm (or [run.slurm])")
        for line in leftovers.stop_left_kernels(self.ledger):
            print(f"warning: {line}", flush=True)
        self.ledger.prepare()
        self.refuse_mixed_kernels(self.intended_kernel())
        self.refuse_stacks_without_switches(self.intended_kernel()[0])
        self.testbed()  # once, before the batches' threads ask for it
        self.prepared = self.workload.prepare(self.experiment, self.ledger.data)
        round_number = 0
        while True:
            states = self.timed("analysis", self.states)
            orders = self.next_round(states)
            if not orders:
                break
            round_number += 1
            before = len(self.ledger.counted())
            self.timed(f"round {round_number}", self.execute, orders, f"round {round_number}")
            self.refuse_mixed_kernels()
            if len(self.ledger.counted()) == before:
                raise HarnessError(f"round {round_number} finished no run; the kernel's "
                                   f"console logs are under {self.ledger.work}")
        return self.timed("tables", tables.write, self.experiment, self.ledger, states)

    def timed(self, step: str, work: Callable[..., T], *args: Any) -> T:
        """`work(*args)`, its wall time kept in the ledger for the wall-time profile."""
        started = time.time()
        try:
            return work(*args)
        finally:
            stamps.coordinator_step(self.ledger.work, self.host, step, started, time.time(),
                                    self.workers)

    # -- planning ---------------------------------------------------------------------------
    def states(self) -> dict[str, PointState]:
        metric = self.experiment.repetitions.metric
        names = [m.name for m in self.workload.metrics]
        states = {key: PointState(point, {name: [] for name in names}, [], 0, metric)
                  for key, point in self.points.items()}
        # runs of points no longer in the experiment file (or of another share) are left out
        records = {run_id: record for run_id, record in self.ledger.counted().items()
                   if record["point"] in states}
        rows = analyses(self.experiment, self.ledger, records)  # new pcaps read in parallel
        for run_id, record in records.items():
            state = states[record["point"]]
            state.reps.append(record["rep"])
            row = rows[run_id]
            if record["status"] == "ok" and row.get(metric) is not None:
                for name in names:
                    if row.get(name) is not None:
                        state.values[name].append(row[name])
            else:
                state.failures += 1
        return states

    def next_round(self, states: dict[str, PointState]) -> list[dict[str, Any]]:
        orders = []
        for state in states.values():
            for rep in free_reps(state.reps, state.needed(self.experiment)):
                orders.append(self.order(state.point, rep))
        return orders

    def order(self, point: Point, rep: int) -> dict[str, Any]:
        """Everything the kernel-side worker needs for one run."""
        run_id = point.run_id(rep)
        network = self.experiment.network
        topology = network.topology(network.entry(point.network), point.loss)
        return {
            "id": run_id, "point": point.key, "rep": rep, "params": point.as_row(),
            "dir": str(self.ledger.run_dir(run_id)), "pcap": str(self.ledger.pcap(run_id)),
            "topology": {k: v for k, v in topology.items() if k != "links"},
            "links": topology["links"],
            "schedule": [change.to_dict() for change in network.schedule],
            "fades": network.fades(network.entry(point.network), point.loss, run_id),
            "sysctls": sysctls_for(point.profile, point.sctp_over(self.experiment.sctp),
                                   point.stack),
            "route_metrics": STACKS[point.stack].route_metrics(),
            "workload_kind": self.experiment.workload,
            "workload": self.workload.order(self.experiment, point, self.prepared),
            "timeout_s": self.experiment.run_timeout_s, "snaplen": self.experiment.snaplen,
            "capture": self.experiment.capture,
            "server_pcap": (str(self.ledger.server_pcap(run_id))
                            if "server" in self.experiment.capture_at else None),
            "estimate_s": self.workload.estimate_s(self.experiment, point),
            "host": self.host,
        }

    def capture_estimate(self, order: dict[str, Any]) -> float | None:
        """What the workload expects a run's capture to weigh, where it has an estimate."""
        estimate = getattr(self.workload, "capture_bytes", None)
        return estimate(self.experiment, self.points[order["point"]]) if estimate else None

    # -- one kernel and one clock per experiment ---------------------------------------------
    def intended_kernel(self) -> tuple[str, str]:
        """(backend, clock) that this harness's batches will boot; asked of the backend once."""
        if self._intended is None and self.experiment.simulator:
            self._intended = (self.experiment.simulator, simulated.CLOCK)
            self._keeps_kernels = False
        if self._intended is None:
            backend = open_backend(self.kernel, memory=launch.KERNEL_MEMORY)
            self._intended = (backend.name, getattr(backend, "clock", "real"))
            self._keeps_kernels = keeps_kernels(backend)
        return self._intended

    def refuse_mixed_kernels(self, intended: tuple[str, str] | None = None) -> None:
        """Runs of one experiment come from one backend, kernel release and clock, whichever
        host ran them: a mean over two kernels or two clocks would measure neither."""
        seen: dict[tuple[str, str, str], set[str]] = {}
        for batch in self.ledger.batch_metadata():
            kernel = (str(batch.get("backend")), str(batch.get("kernel_release")),
                      str(batch.get("clock")))
            seen.setdefault(kernel, set()).add(str(batch.get("host") or "unknown"))
        described = [f"{b} {k}, clock {c} (on {', '.join(sorted(hosts))})"
                     for (b, k, c), hosts in sorted(seen.items())]
        if len(seen) > 1:
            raise HarnessError(
                f"{self.ledger.root} holds runs of more than one kernel or clock: "
                f"{'; '.join(described)}. One experiment's results come from one kernel and "
                "one clock: give the hosts the same kernel, or run into another --results "
                "folder")
        if intended and seen and {(b, c) for b, _, c in seen} != {intended}:
            raise HarnessError(
                f"{self.ledger.root} holds runs made on {described[0]}; this run would use "
                f"{intended[0]}, clock {intended[1]}. Resume with the same KERNEL (and "
                "TESTBED_TIME_TRAVEL), or run into another --results folder")

    def refuse_stacks_without_switches(self, backend: str) -> None:
        if self.experiment.simulator:
            return  # a simulator's agents carry no kernel stack
        for stack in sorted({point.stack for point in self.points.values()}):
            refusal = refusal_without_switches(stack, backend)
            if refusal:
                raise HarnessError(f"{self.experiment.name}: {refusal}")

    # -- execution --------------------------------------------------------------------------
    def batches(self, orders: list[dict[str, Any]], count: int) -> list[list[dict[str, Any]]]:
        """Longest first onto the least-loaded of `count` batches, so they finish together."""
        batches: list[list[dict[str, Any]]] = [[] for _ in range(min(count, len(orders)))]
        loads = [0.0] * len(batches)
        for order in sorted(orders, key=lambda o: -o["estimate_s"]):
            lightest = loads.index(min(loads))
            batches[lightest].append(order)
            loads[lightest] += order["estimate_s"]
        return batches

    def execute(self, orders: list[dict[str, Any]], label: str) -> None:
        try:
            problem = disk.shortfall(orders, self.ledger, self.capture_estimate, label)
        except ValueError as error:
            raise HarnessError(str(error)) from None
        if problem:
            raise HarnessError(problem)
        count = (slurm.task_count(orders, self.slurm, slurm.slots(self.slurm)) if self.slurm
                 else self.workers)
        batches = self.batches(orders, count)
        where = f"on Slurm, {len(batches)} tasks" if self.slurm else ""
        progress = Progress(f"{self.experiment.name} {label}{f' ({where})' if where else ''}",
                            len(orders), RoundWatch(self, batches).status)
        with RoundAnalysis(self.experiment, self.ledger, [o["id"] for o in orders]):
            progress.start()
            try:
                if self.slurm:
                    errors = self.execute_on_slurm(batches, label, self.slurm)
                else:
                    errors = self.execute_here(batches, label)
            finally:
                progress.stop()
        for error in errors:
            print(f"warning: {error}", flush=True)
        if errors and disk.is_full(self.ledger):
            raise HarnessError(disk.full_message(self.ledger, f"in {label}"))

    def execute_here(self, batches: list[list[dict[str, Any]]], label: str) -> list[str]:
        """One thread per batch, each booting a pinned kernel on this machine. A kernel done
        with its batch takes the runs the others have not reached (sharing.py)."""
        errors: list[str] = []
        stop = threading.Event()
        todo = [[o for o in batch if not self.ledger.is_finished(o["id"])] for batch in batches]
        claims = self.ledger.work / f"claims-{label.replace(' ', '-')}-{int(time.time())}"
        claims.mkdir(parents=True, exist_ok=True)
        pool = ThreadPoolExecutor(len(batches))
        try:
            futures = [pool.submit(self.run_batch, i, batch, label, stop,
                                   {"claims_dir": str(claims),
                                    "stealable": [other for j, other in enumerate(todo)
                                                  if j != i and other]})
                       for i, batch in enumerate(todo)]
            for future in futures:
                error = future.result()
                if error:
                    errors.append(error)
        except BaseException:
            # The kernels run in sessions of their own: stop them before waiting for the
            # workers, or an interrupt would wait for every batch to finish.
            stop.set()
            stop_all()
            pool.shutdown(wait=True, cancel_futures=True)
            raise
        else:
            pool.shutdown(wait=True)
        finally:
            shutil.rmtree(claims, ignore_errors=True)
        return errors

    def execute_on_slurm(self, batches: list[list[dict[str, Any]]], label: str,
                         settings: slurm.SlurmSettings) -> list[str]:
        """One array task per batch; waits for the whole job (Ctrl-C cancels it)."""
        prefix = f"{self.tag_host()}-{label.replace(' ', '-')}-slurm-{int(time.time())}-"
        todo = [[o for o in batch if not self.ledger.is_finished(o["id"])] for batch in batches]
        todo = [batch for batch in todo if batch]
        if not todo:
            return []
        files = [self.write_batch(f"{prefix}task{i}", batch) for i, batch in enumerate(todo)]
        job = slurm.submit(files, self.experiment.name, self.intended_kernel()[0], settings,
                           slurm.time_limit_min(todo, settings), self.ledger.work)
        print(f"{self.experiment.name} {label}: Slurm job {job.job_id}, {len(files)} tasks "
              f"(scancel {job.job_id} stops it; so does Ctrl-C here)", flush=True)
        slurm.wait(job)
        unfinished = {i for i, batch in enumerate(todo)
                      if not all(self.ledger.is_finished(o["id"]) for o in batch)}
        return slurm.endings(job, unfinished)

    def tag_host(self) -> str:
        # the host in a batch's name keeps batches of several hosts apart once merged
        return re.sub(r"[^A-Za-z0-9_.-]", "_", self.host)

    def write_batch(self, tag: str, runs: list[dict[str, Any]],
                    shared: dict[str, Any] | None = None) -> Path:
        batch_file = self.ledger.work / f"{tag}.json"
        batch_file.write_text(json.dumps({
            "runs": runs, **(shared or {}),
            "metadata_file": str(self.ledger.work / f"{tag}.metadata.json"),
            "marks_file": str(stamps.marks_file(batch_file)),
            "provenance": {"host": self.host, "testbed": self.testbed(),
                           "container": metadata.container()}}))
        return batch_file

    def testbed(self) -> dict[str, Any]:
        """The commit of the checkout that runs the batches, recorded per host in meta.json."""
        if self._testbed is None:
            self._testbed = tables.testbed_commit()
        return self._testbed

    def run_batch(self, index: int, batch: list[dict[str, Any]], label: str,
                  stop: threading.Event, shared: dict[str, Any] | None = None) -> str | None:
        """`batch`: its runs not finished yet; `shared`: the round's claims folder and the
        other batches' runs, to take."""
        if not (batch or (shared or {}).get("stealable")) or stop.is_set():
            return None
        tag = f"{self.tag_host()}-{label.replace(' ', '-')}-worker{index + 1}-{int(time.time())}"
        batch_file = self.write_batch(tag, batch, shared)
        if self.experiment.simulator:
            error = simulated.run_batch_file(batch_file, self.experiment.simulator)
        elif not self.keeps_kernels():
            error = launch.run_batch_file(batch_file, self.kernel)
        else:
            error = self.in_session(index, batch_file)
        return f"worker {index + 1}: {error}" if error else None

    def in_session(self, index: int, batch_file: Path) -> str | None:
        """The batch run in worker `index`'s kept kernel; in a new one if that one had stopped
        before it took the batch. A kernel that failed a batch is not used again."""
        try:
            error = self.session(index).run_batch_file(batch_file)
        except KernelGone as gone:
            print(f"warning: worker {index + 1}'s kernel had stopped ({gone}); booting another",
                  flush=True)
            self.sessions.pop(index).close()
            error = self.session(index).run_batch_file(batch_file)
        if error:
            self.sessions.pop(index).close()
        return error

    def keeps_kernels(self) -> bool:
        """Asked of the backend with the intended kernel, once (_run asks that first)."""
        self.intended_kernel()
        return bool(self._keeps_kernels)

    def session(self, index: int) -> KernelSession:
        """Worker `index`'s kernel, booted if it has none that lives."""
        session = self.sessions.get(index)
        if session is None or not session.alive:
            folder = self.ledger.work / f"{self.tag_host()}-kernel{index + 1}-{int(time.time())}"
            session = self.sessions[index] = KernelSession(self.kernel, folder)
        return session

    def close_sessions(self) -> None:
        sessions, self.sessions = list(self.sessions.values()), {}
        close_all(sessions)


class RoundWatch:
    """What the progress line says of a round: runs ended, failed, and when the last batch
    should end, from the wall time that runs actually took (experiments/onhost/forecast.py).
    A run's wall time is read from when its record reached this host's disk, not from the
    times in it: on the virtual clock those are the kernel's. Polled every few seconds: each
    record is read once, and only this round's."""

    def __init__(self, harness: Harness, batches: list[list[dict[str, Any]]]) -> None:
        self.ledger = harness.ledger
        self.batches = batches
        self.began = time.time()
        self.clock = harness.intended_kernel()[1]
        # run id -> (status, when its record was written)
        self.ended: dict[str, tuple[str, float]] = {}
        # the rounds before this one, in this process, teach the forecast as well
        self.samples = harness.wall_samples

    def status(self) -> tuple[int, int, str]:
        now = time.time()
        states = [self.batch_state(batch, now) for batch in self.batches]
        model = forecast.fit(self.samples) or forecast.prior(self.clock)
        text = forecast.describe(forecast.eta(states, model))
        failed = sum(status != "ok" for status, _ in self.ended.values())
        return len(self.ended), failed, text

    def batch_state(self, batch: list[dict[str, Any]], now: float) -> forecast.BatchState:
        """A batch runs its runs in order: each one's wall time is the gap since the one
        before it ended. (A batch's first run shares its time with the boot, which is not
        the runs' to teach.)"""
        last_end: float | None = None
        pending = []
        for order in batch:
            run_id = order["id"]
            if run_id not in self.ended and self.ledger.is_finished(run_id):
                ended = self.read_end(run_id)
                if ended is not None:
                    self.ended[run_id] = ended
                    if last_end is not None:
                        self.samples.append((order["estimate_s"], max(ended[1] - last_end, 0.0)))
            if run_id in self.ended:
                last_end = self.ended[run_id][1]
            else:
                pending.append(order["estimate_s"])
        since = now - (last_end if last_end is not None else self.began)
        return forecast.BatchState(tuple(pending), since, last_end is not None)

    def read_end(self, run_id: str) -> tuple[str, float] | None:
        """(status, when its record was written); None for a record damaged or set aside
        meanwhile (the round's end judges it)."""
        try:
            written = self.ledger.record_written(run_id)
            return str(self.ledger.record(run_id).get("status", "")), written
        except (OSError, ValueError, AttributeError):
            return None
