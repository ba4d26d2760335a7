"""`testbed bench kill-campaign`: SIGKILL the harness, and its kernels, at random instants of
a smoke-sized experiment in virtual time, resuming after each kill, and count what that costs:
runs redone, and runs lost (which must be none). Prints the figures and writes
results/bench-kill-campaign.json.

A pass runs the experiment into a fresh results folder: `testbed run` is started, and after a
random delay either the coordinator is killed (then resumed at once, the same command) or, now
and then, one of its kernels (the coordinator goes on without it). After the pass's kills it
runs to its end, and the pass is judged:

  - every record valid, every run that counts with its pcap present and non-empty and its row
    in runs.csv, nothing set aside;
  - each point's n in summary.csv what a clean run gives (min = max repetitions: fixed);
  - no run finished before a kill was changed or lost after it (a record seen once must stay
    byte for byte);
  - no resume refused by the lock, no process of any kernel its harnesses booted left
    behind, the lock free.

Runs redone: the attempts beyond the first of each run (each attempt leaves a mark in its
batch's marks file). Passes repeat until the kills or the minutes run out.

    testbed bench kill-campaign [--minutes 20] [--kills-per-pass 12] [--kernel-share 0.3]
                                [--seed 1] [--out results/bench-kill-campaign.json]
"""
from __future__ import annotations

import argparse
import contextlib
import csv
import hashlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from experiments.onhost import ledger as ledgers
from experiments.onhost import leftovers
from experiments.onhost.ledger import RECORD, SET_ASIDE, Ledger
from topology.kernel.base import REPO_ROOT
from topology.kernel.uml import scratch_root

PYTHON = "/usr/bin/python3"
OUTPUT = REPO_ROOT / "results" / "bench-kill-campaign.json"
SMOKE = REPO_ROOT / "experiments" / "smoke.toml"
PCAP_HEADER = 24
RUN_LIMIT_S = 900.0      # a pass's last, unkilled run of the harness
LOCK_REFUSAL = "another harness is writing into"


def smoke_sized(name: str = "killsmoke") -> str:
    """The smoke experiment (20 points) with min = max = 3 repetitions: 60 runs, and each
    point's n fixed, so that a clean run's tables are known without running one."""
    text = SMOKE.read_text()
    text = text.replace('name = "smoke"', f'name = "{name}"', 1)
    text = text.replace("max = 4", "max = 3", 1)
    assert f'name = "{name}"' in text and "min = 3" in text and "max = 3" in text
    return text


@dataclass
class Tally:
    passes: int = 0
    kills_coordinator: int = 0
    kills_kernel: int = 0
    resumes: int = 0
    refused_resumes: int = 0
    stopped_with_error: int = 0        # a harness that ended 2 by itself (a round lost to a kill)
    left_kernels_stopped: int = 0      # kernels of a killed harness its resume stopped
    kernels_left_at_end: int = 0       # kernels of the pass still running once it ended
    locks_held_at_end: int = 0
    runs_finished: int = 0
    runs_redone: int = 0
    runs_lost: int = 0
    failed_records: int = 0
    wall_s: float = 0.0
    problems: list[str] = field(default_factory=list)

    @property
    def kills(self) -> int:
        return self.kills_coordinator + self.kills_kernel


class Pass:
    """One experiment run into its own results folder, killed `kills` times."""

    def __init__(self, experiment: Path, results: Path, name: str, kernel: str,
                 logs: Path) -> None:
        self.experiment, self.results, self.kernel, self.logs = experiment, results, kernel, logs
        self.ledger = Ledger(results / name)
        self.seen: dict[str, str] = {}          # run id -> digest of its record, once finished
        self.pids: list[int] = []
        self.attempt = 0

    def start(self) -> subprocess.Popen[bytes]:
        self.attempt += 1
        log = self.logs / f"{self.results.name}-{self.attempt:03d}"
        with open(f"{log}.out", "wb") as out, open(f"{log}.err", "wb") as err:
            proc = subprocess.Popen(
                [PYTHON, "-m", "testbed", "run", str(self.experiment), "--results",
                 str(self.results), "--workers", "1", "--kernel", self.kernel],
                cwd=REPO_ROOT, stdin=subprocess.DEVNULL, stdout=out, stderr=err)
        self.pids.append(proc.pid)
        return proc

    def output(self) -> tuple[str, str]:
        log = self.logs / f"{self.results.name}-{self.attempt:03d}"
        return (Path(f"{log}.out").read_text(errors="replace"),
                Path(f"{log}.err").read_text(errors="replace"))

    def kernels_of(self, proc: subprocess.Popen[bytes]) -> list[int]:
        """The first process of each kernel `proc` booted that still runs."""
        found = []
        for entry in os.scandir("/proc"):
            if not entry.name.isdigit():
                continue
            try:
                argv = Path(entry.path, "cmdline").read_bytes().split(b"\0")
                leader = int(Path(entry.path, "stat").read_text().rsplit(")", 1)[1].split()[2])
            except (OSError, IndexError, ValueError):
                continue
            if (argv[0].endswith(b"linux.uml") and leader == int(entry.name)
                    and f"umid=tb{proc.pid}-".encode() in b" ".join(argv)):
                found.append(int(entry.name))
        return found

    def check_seen(self, tally: Tally) -> None:
        """Every record seen before is still there, byte for byte; new ones are remembered."""
        for run_id, digest in self.seen.items():
            path = self.ledger.run_dir(run_id) / RECORD
            if not path.is_file() or _digest(path) != digest:
                tally.runs_lost += 1
                tally.problems.append(f"{self.ledger.root.name}: finished run {run_id} was "
                                      "changed or lost after a kill")
        for path in self.ledger.runs.glob(f"*/{RECORD}"):
            self.seen.setdefault(path.parent.name, _digest(path))


def _digest(path: Path) -> str:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return ""


def kill(proc: subprocess.Popen[bytes], run: Pass, rng: random.Random, kernel_share: float,
         tally: Tally) -> str:
    """SIGKILL to one of the coordinator's kernels (with probability `kernel_share`, when it
    has one) or to the coordinator; which one."""
    kernels = run.kernels_of(proc)
    if kernels and rng.random() < kernel_share:
        # the kernel's whole process group: its first process alone would leave the guest's
        # processes, which User-Mode Linux 6.1 traces without a parent-death signal, to run on
        # the host, a system call caught in flight executed by the host's kernel (a guest's
        # `hostname` renamed the host)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(rng.choice(kernels), signal.SIGKILL)
        tally.kills_kernel += 1
        return "kernel"
    proc.kill()
    proc.wait()
    tally.kills_coordinator += 1
    return "coordinator"


def ended(proc: subprocess.Popen[bytes], run: Pass, tally: Tally) -> bool:
    """A harness that ended by itself: True if it finished the experiment."""
    if proc.returncode == 0:
        return True
    out, err = run.output()
    if LOCK_REFUSAL in err:
        tally.refused_resumes += 1
        tally.problems.append(f"a resume was refused by the lock: {err.strip()[-300:]}")
    else:
        tally.stopped_with_error += 1
    return False


def run_pass(run: Pass, kills: int, deadline: float, rng: random.Random,
             delays: tuple[float, float], kernel_share: float, tally: Tally) -> None:
    """The pass's kills at random instants, each followed by a resume, then its end."""
    proc = run.start()
    while True:
        killing = kills > 0 and time.monotonic() < deadline
        try:
            proc.wait(timeout=rng.uniform(*delays) if killing else RUN_LIMIT_S)
        except subprocess.TimeoutExpired:
            if not killing:
                proc.kill()
                proc.wait()
                tally.problems.append(f"{run.ledger.root.name}: a harness ran past "
                                      f"{RUN_LIMIT_S:.0f} s unkilled")
                return
            what = kill(proc, run, rng, kernel_share, tally)
            kills -= 1
            run.check_seen(tally)
            if what == "kernel":
                continue
        else:
            if ended(proc, run, tally):
                tally.left_kernels_stopped += _left_stopped(run)
                return
            if tally.refused_resumes:
                return
        tally.left_kernels_stopped += _left_stopped(run)
        tally.resumes += 1
        proc = run.start()


def _left_stopped(run: Pass) -> int:
    out, _ = run.output()
    return out.count("a kernel left running by a harness that is gone")


def judge(run: Pass, repetitions: int, tally: Tally) -> None:
    """The pass's ledger as the module docstring says it must be: each run that is not is
    one lost."""
    run.check_seen(tally)
    lost: list[str] = []
    records = {}
    for path in sorted(run.ledger.runs.glob(f"*/{RECORD}")):
        try:
            record = json.loads(path.read_text())
        except (OSError, ValueError) as error:
            lost.append(f"{path.parent.name}: unreadable record ({error})")
            continue
        problem = ledgers.record_problem(path.parent.name, record, ledgers.COUNTED,
                                         ledgers.COUNTED_IF_PRESENT)
        if problem:
            lost.append(f"{path.parent.name}: {problem}")
            continue
        records[path.parent.name] = record
    lost += [f"{p.parent.name}: set aside ({p.name})"
             for p in run.ledger.runs.glob(f"*/{SET_ASIDE}*")]
    for run_id, record in records.items():
        pcap = run.ledger.pcap(run_id)
        if record["status"] == "ok" and (not pcap.is_file() or pcap.stat().st_size <= PCAP_HEADER):
            lost.append(f"{run_id}: counted, but its pcap is missing or empty")
    in_table = {row["run_id"] for row in _csv(run.ledger.root / "runs.csv")}
    lost += [f"{run_id}: not in runs.csv" for run_id in sorted(set(records) - in_table)]
    lost += [f"{run_id}: in runs.csv without a record"
             for run_id in sorted(in_table - set(records))]
    for row in _csv(run.ledger.root / "summary.csv"):
        short = repetitions - int(row["n"])
        lost += [f"point {row['point']}: n = {row['n']}, a clean run gives "
                 f"{repetitions}"] * abs(short)
    left = left_processes(run)
    tally.kernels_left_at_end += len(left)
    tally.locks_held_at_end += run.ledger.busy()
    name = run.ledger.root.name
    tally.runs_lost += len(lost)
    tally.problems += [f"{name}: {p}" for p in lost]
    tally.problems += [f"{name}: kernel {group} left running (processes {members})"
                       for group, members in left.items()]
    tally.runs_finished += len(records)
    tally.failed_records += sum(r["status"] != "ok" for r in records.values())
    tally.runs_redone += redone(run.ledger)


def left_processes(run: Pass) -> dict[int, list[int]]:
    """The processes, by kernel, of every kernel one of the pass's harnesses booted that are
    still there once the pass has ended (a kernel's first process or any other)."""
    return {group: [member[0] for member in members]
            for group, members in leftovers.kernel_processes().items()
            if any(member[2] in run.pids for member in members)}


def redone(ledger: Ledger) -> int:
    """Attempts beyond each run's first: each attempt's first mark (its links and sysctls set)
    in its batch's marks file."""
    attempts: dict[str, int] = {}
    for marks in ledger.work.glob("*.marks.jsonl"):
        for line in marks.read_text(errors="replace").splitlines():
            try:
                mark = json.loads(line)
            except ValueError:
                continue
            if isinstance(mark, dict) and mark.get("step") == "links_and_sysctls":
                attempts[mark["run"]] = attempts.get(mark["run"], 0) + 1
    return sum(count - 1 for count in attempts.values())


def _csv(path: Path) -> list[dict[str, str]]:
    if not path.is_file():
        return []
    with path.open() as handle:
        return list(csv.DictReader(handle))


def campaign(root: Path, experiment_text: str, name: str, repetitions: int, *, minutes: float,
             kills_per_pass: int, max_kills: int | None = None, kernel_share: float = 0.3,
             delays: tuple[float, float] = (0.3, 8.0), seed: int = 1,
             kernel: str = "uml-virtual") -> Tally:
    """Passes of the experiment in `experiment_text` (its n per point `repetitions`) under
    `root`, each with `kills_per_pass` kills, until `minutes` or `max_kills` are spent."""
    rng = random.Random(seed)
    tally = Tally()
    experiment = root / f"{name}.toml"
    experiment.write_text(experiment_text)
    logs = root / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    deadline = started + 60 * minutes
    while time.monotonic() < deadline and (max_kills is None or tally.kills < max_kills):
        tally.passes += 1
        run = Pass(experiment, root / f"pass{tally.passes:03d}", name, kernel, logs)
        budget = kills_per_pass if max_kills is None else min(kills_per_pass,
                                                              max_kills - tally.kills)
        run_pass(run, budget, deadline, rng, delays, kernel_share, tally)
        judge(run, repetitions, tally)
        _remove_scratch(run.pids)
        print(f"pass {tally.passes}: {tally.kills} kills so far, {tally.runs_redone} runs redone, "
              f"{tally.runs_lost} lost", flush=True)
        if tally.refused_resumes:
            break
    tally.wall_s = time.monotonic() - started
    return tally


def _remove_scratch(pids: list[int]) -> None:
    """The scratch folders its harnesses' killed kernels kept (named after the harness)."""
    for pid in pids:
        for folder in scratch_root().glob(f"tb{pid}-*"):
            shutil.rmtree(folder, ignore_errors=True)


def figures(tally: Tally, runs_per_pass: int) -> dict[str, Any]:
    return {**asdict(tally), "kills": tally.kills, "runs_per_pass": runs_per_pass,
            "problems": tally.problems[:50]}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="testbed bench kill-campaign", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--minutes", type=float, default=20.0)
    parser.add_argument("--kills-per-pass", type=int, default=12)
    parser.add_argument("--kernel-share", type=float, default=0.3,
                        help="of the kills, the share aimed at a kernel (when one runs)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--kernel", default="uml-virtual")
    parser.add_argument("--out", type=Path, default=OUTPUT)
    args = parser.parse_args(argv)
    import tempfile
    with tempfile.TemporaryDirectory(prefix="kill-campaign-") as scratch:
        tally = campaign(Path(scratch), smoke_sized(), "killsmoke", 3, minutes=args.minutes,
                         kills_per_pass=args.kills_per_pass, kernel_share=args.kernel_share,
                         seed=args.seed, kernel=args.kernel)
    result = figures(tally, 60)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"kills {tally.kills} ({tally.kills_coordinator} of the coordinator, "
          f"{tally.kills_kernel} of a kernel) over {tally.passes} passes of 60 runs; "
          f"{tally.resumes} resumes, {tally.refused_resumes} refused; "
          f"{tally.left_kernels_stopped} kernels left by a killed harness stopped; "
          f"runs redone {tally.runs_redone}, runs lost {tally.runs_lost}; "
          f"wall {tally.wall_s:.0f} s; written to {args.out}")
    for problem in tally.problems[:20]:
        print(f"  {problem}", file=sys.stderr)
    return 0 if clean(tally) else 1


def clean(tally: Tally) -> bool:
    """Nothing lost, no resume refused, nothing left behind."""
    return not (tally.runs_lost or tally.refused_resumes or tally.kernels_left_at_end
                or tally.locks_held_at_end)
