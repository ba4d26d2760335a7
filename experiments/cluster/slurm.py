"""Running a round's batches as one Slurm job array.

Each array task boots its own pinned kernel on whatever node Slurm gives it and runs one batch
file (`testbed batch FILE`) into the shared results folder, exactly as a local worker does: the
ledger is the only channel back, so resume, rounds and the report need nothing new. Between
rounds the coordinator waits on the job; a task that was cancelled, failed or ran out of time
leaves its unfinished runs pending, and the next round plans them again.

Settings come from the experiment's `[run.slurm]` table, overridden by `--slurm-*` options:

    partition       where to queue (default: the cluster's default partition)
    task_runs       runs per array task (default: as many as fill about `task_minutes`, but
                    at least as many tasks as the partition runs at once)
    task_minutes    the estimated work per task when task_runs is not given (default 30)
    time_limit_min  per task (default: twice the task's estimate plus 10 minutes, never more
                    than its runs' time-outs add up to)
    memory          per task (default 2G: a 640M kernel, its page cache and Python)
    cpus            per task (default 1)
    sbatch_options  more options for sbatch, verbatim (e.g. ["--account=netlab", "--qos=long"])
    launcher        a command the task runs inside of, e.g. a container (see
                    experiments/README.md): ["apptainer", "exec", "--bind", "/shared",
                    "testbed.sif"]"""
from __future__ import annotations

import math
import re
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from experiments.onhost import launch
from topology.kernel.base import REPO_ROOT

TASK_OVERHEAD_S = 600.0     # queueing aside: a kernel's boot, topology, link checks, tables
# beyond the kernel's own limit for the batch: the task's start and end around the kernel
QUEUE_SLACK_S = TASK_OVERHEAD_S - launch.BATCH_OVERHEAD_S
DEFAULT_TASK_MINUTES = 30.0
POLL_S = 5.0
SETTING_TYPES: dict[str, Any] = {
    "partition": str, "task_runs": int, "task_minutes": float, "time_limit_min": int,
    "memory": str, "cpus": int, "sbatch_options": list, "launcher": list,
}
MEMORY = re.compile(r"[1-9][0-9]*[KMGT]?")
PARTITION = re.compile(r"[A-Za-z0-9_.,-]+")
# slurmstepd's words in a task's output when the task did not end on its own
ENDED_BY_SLURM = re.compile(r"CANCELLED AT \S+( DUE TO (?P<why>[A-Z ]+))?")


class SlurmError(RuntimeError):
    """Slurm cannot take or run the job; the message says what to do."""


@dataclass(frozen=True)
class SlurmSettings:
    partition: str | None = None
    task_runs: int | None = None
    task_minutes: float = DEFAULT_TASK_MINUTES
    time_limit_min: int | None = None
    memory: str = "2G"
    cpus: int = 1
    sbatch_options: tuple[str, ...] = ()
    launcher: tuple[str, ...] = ()

    def problems(self) -> list[tuple[str, str]]:
        """(key, reason) for every setting that Slurm would refuse or that makes no sense."""
        found = []
        if self.partition is not None and not PARTITION.fullmatch(self.partition):
            found.append(("partition", f"{self.partition!r} is not a partition name"))
        if self.task_runs is not None and not 1 <= self.task_runs <= 10_000:
            found.append(("task_runs", "between 1 and 10000 runs per task"))
        if not 1 <= self.task_minutes <= 10_080:
            found.append(("task_minutes", "between 1 minute and one week"))
        if self.time_limit_min is not None and not 1 <= self.time_limit_min <= 525_600:
            found.append(("time_limit_min", "between 1 minute and one year"))
        if not MEMORY.fullmatch(self.memory):
            found.append(("memory", f"{self.memory!r}: a size such as 2G or 1500M"))
        if not 1 <= self.cpus <= 1024:
            found.append(("cpus", "between 1 and 1024"))
        for key in ("sbatch_options", "launcher"):
            if not all(isinstance(word, str) and word for word in getattr(self, key)):
                found.append((key, "a list of non-empty strings"))
        return found

    def record(self) -> dict[str, Any]:
        return {k: list(v) if isinstance(v, tuple) else v for k, v in vars(self).items()}


def read_settings(table: dict[str, Any], fail: Callable[[str, str], Exception],
                  where: str = "run.slurm") -> SlurmSettings:
    """The `[run.slurm]` table (types already checked against SETTING_TYPES)."""
    values = {key: tuple(value) if isinstance(value, list) else value
              for key, value in table.items()}
    if "task_minutes" in values:
        values["task_minutes"] = float(values["task_minutes"])
    settings = SlurmSettings(**values)
    for key, reason in settings.problems():
        raise fail(f"{where}.{key}", reason)
    return settings


def overridden(settings: SlurmSettings, **options: Any) -> SlurmSettings:
    """The file's settings with the command line's (those given) on top."""
    given = {key: tuple(value) if isinstance(value, list) else value
             for key, value in options.items() if value is not None}
    changed = replace(settings, **given)
    for key, reason in changed.problems():
        raise SlurmError(f"--slurm-{key.replace('_', '-')}: {reason}")
    return changed


def task_count(orders: list[dict[str, Any]], settings: SlurmSettings,
               slots: int | None = None) -> int:
    """How many array tasks a round's runs go into: `task_runs` each when given; else tasks of
    about `task_minutes` of estimated work, but never fewer than the tasks the partition can
    run at once (`slots`), so that a small round still spreads over the cluster."""
    if not orders:
        return 0
    if settings.task_runs:
        return math.ceil(len(orders) / settings.task_runs)
    work_s = sum(o["estimate_s"] for o in orders)
    by_work = math.ceil(work_s / (60 * settings.task_minutes))
    return max(1, min(len(orders), max(by_work, slots or 1)))


def slots(settings: SlurmSettings) -> int | None:
    """Tasks the partition can run at once: its usable CPUs (not down or drained) over the CPUs
    a task asks for; None when sinfo cannot say."""
    argv = ["sinfo", "-h", "-o", "%C", *(["-p", settings.partition] if settings.partition
                                          else [])]
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    total = 0
    for line in proc.stdout.split():
        counts = line.split("/")  # allocated/idle/other/total
        if len(counts) == 4 and all(c.isdigit() for c in counts):
            total += int(counts[3]) - int(counts[2])
    return total // settings.cpus if proc.returncode == 0 and total > 0 else None


def time_limit_min(batches: list[list[dict[str, Any]]], settings: SlurmSettings) -> int:
    """One limit for every task of the array: the largest task's need. Twice its estimate plus
    the overhead, so that a slow node does not lose runs, but never more than its runs'
    time-outs allow, which no run can outlast."""
    if settings.time_limit_min:
        return settings.time_limit_min
    need = 0.0
    for batch in batches:
        estimate = 2 * sum(o["estimate_s"] for o in batch) + TASK_OVERHEAD_S
        ceiling = launch.timeout_s(batch) + QUEUE_SLACK_S
        need = max(need, min(estimate, ceiling))
    return max(1, math.ceil(need / 60))


@dataclass
class Job:
    """One submitted array: its id, the batch files its tasks run, where they log."""
    job_id: str
    batch_files: list[Path]
    logs: list[Path] = field(default_factory=list)


def job_script(batch_prefix: Path, kernel: str, settings: SlurmSettings) -> str:
    """The script every task of the array runs: the batch file of its own index, in a kernel
    of its own (inside the launcher, when one is set)."""
    # the checkout first on the path, whatever the working directory: a container starts in
    # its image's, where another copy of the testbed may live
    entry = (f"import sys; sys.path.insert(0, {str(REPO_ROOT)!r}); "
             "from testbed.cli import main; sys.exit(main())")
    command = " ".join(shlex.quote(word) for word in
                       (*settings.launcher, sys.executable, "-c", entry, "batch"))
    return ("#!/bin/bash\n"
            "# One task of a testbed round: one batch of runs in its own pinned kernel.\n"
            "set -euo pipefail\n"
            f"cd {shlex.quote(str(REPO_ROOT))}\n"
            f'batch={shlex.quote(str(batch_prefix))}"task${{SLURM_ARRAY_TASK_ID}}.json"\n'
            f'exec {command} "$batch" --kernel {shlex.quote(kernel)} '
            '--host "${SLURMD_NODENAME:-$(hostname)}"\n')


def require_commands() -> None:
    missing = [c for c in ("sbatch", "squeue", "scancel") if shutil.which(c) is None]
    if missing:
        raise SlurmError(f"{', '.join(missing)} not found: --slurm needs Slurm's client "
                         "commands on this machine (Debian: apt-get install slurm-client) and "
                         "a cluster they reach (SLURM_CONF)")


def submit(batch_files: list[Path], name: str, kernel: str, settings: SlurmSettings,
           limit_min: int, work: Path) -> Job:
    """One `sbatch --array` job, a task per batch file."""
    require_commands()
    prefix = _common_prefix(batch_files)
    script = work / f"{prefix}slurm.sh"
    script.write_text(job_script(work / prefix, kernel, settings))
    script.chmod(0o755)
    argv = ["sbatch", "--parsable", f"--array=0-{len(batch_files) - 1}",
            f"--job-name=testbed-{name}", f"--cpus-per-task={settings.cpus}",
            f"--mem={settings.memory}", f"--time={limit_min}",
            f"--output={work / (prefix + 'task%a.slurm.log')}", "--export=ALL",
            *([f"--partition={settings.partition}"] if settings.partition else []),
            *settings.sbatch_options, str(script)]
    proc = _slurm(argv)
    job_id = proc.stdout.strip().split(";")[0]
    if not job_id.isdigit():
        raise SlurmError(f"sbatch answered {proc.stdout.strip()!r}, not a job id")
    return Job(job_id, batch_files,
               [work / f"{prefix}task{i}.slurm.log" for i in range(len(batch_files))])


def _common_prefix(batch_files: list[Path]) -> str:
    """Batch files are named PREFIXtask<i>.json; PREFIX names the round."""
    prefixes = {re.sub(r"task\d+\.json$", "", f.name) for f in batch_files}
    if len(prefixes) != 1 or any(not re.search(r"task\d+\.json$", f.name) for f in batch_files):
        raise SlurmError(f"batch files not of one round: {sorted(f.name for f in batch_files)}")
    return prefixes.pop()


def active_tasks(job_id: str) -> list[tuple[str, str]]:
    """(task id, state) of the job's tasks that are still queued or running."""
    proc = subprocess.run(["squeue", "-h", "-j", job_id, "-o", "%i %T"], capture_output=True,
                          text=True)
    if proc.returncode != 0:
        if "Invalid job id" in proc.stderr:
            return []  # already gone from the controller's memory: ended
        raise SlurmError(f"squeue failed: {proc.stderr.strip()}")
    tasks = []
    for line in proc.stdout.splitlines():
        task, _, state = line.strip().partition(" ")
        if state and state not in ("COMPLETED", "CANCELLED", "FAILED", "TIMEOUT",
                                   "OUT_OF_MEMORY", "NODE_FAIL", "PREEMPTED", "BOOT_FAIL"):
            tasks.append((task, state))
    return tasks


def wait(job: Job, poll_s: float = POLL_S) -> None:
    """Until no task of the job is queued or running. Interrupted (Ctrl-C, SIGTERM): the job is
    cancelled, and only this job."""
    try:
        while active_tasks(job.job_id):
            time.sleep(poll_s)
    except BaseException:
        cancel(job)
        raise


def cancel(job: Job) -> None:
    subprocess.run(["scancel", job.job_id], capture_output=True, text=True)


def endings(job: Job, unfinished: set[int]) -> list[str]:
    """Why tasks left runs unfinished (`unfinished`: their indexes): what Slurm wrote into
    their logs when it ended them, or the end of what they wrote themselves."""
    found = []
    for index in sorted(unfinished):
        name = f"Slurm task {job.job_id}_{index}"
        try:
            text = job.logs[index].read_text(errors="replace")
        except (OSError, IndexError):
            found.append(f"{name} left runs unfinished and no log; they are pending again")
            continue
        match = ENDED_BY_SLURM.search(text)
        if match:
            why = (match.group("why") or "scancel").strip().lower()
            found.append(f"{name} was cancelled ({why}); its unfinished runs are pending again"
                         + ("; raise --slurm-time-limit-min" if "time limit" in why else ""))
        else:
            tail = "\n  ".join(text.strip().splitlines()[-6:])
            found.append(f"{name} ended with runs unfinished; they are pending again. The end "
                         f"of its log ({job.logs[index]}):\n  {tail}")
    return found


def _slurm(argv: list[str]) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(argv, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SlurmError(f"{argv[0]} refused the job (exit {proc.returncode}): "
                         f"{proc.stderr.strip() or proc.stdout.strip()}")
    return proc
