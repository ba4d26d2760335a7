"""Where an experiment's wall time went, by phase, from what the harness kept in its ledger.

Sources, all on the host's clock: the coordinator's steps (coordinator.wall.jsonl: each
analysis of the pcaps, each round of runs, the tables) and, per batch, its launch, its
kernel's exit and every step its kernel reached, stamped as it appeared (stamps.py).

A round's wall time is shared by its workers: W workers for T seconds are W x T core-seconds,
spent in one of the phases below or idle (a worker whose batch ended while another ran on).
Analysis and tables run between rounds; they are counted once, on the wall clock.

    boot        launch to the batch's first line: the kernel's boot, init, Python's start
    metadata    the kernel's and tools' versions collected
    topology    building each topology, its link checks, tearing it down
    setup       per run: links and sysctls, then its programs and capture started
    transfer    per run: the workload's own traffic (ftpc's session, the bulk flows)
    verify      per run: the downloads checked
    stop        per run: programs and capture stopped, the pcap written, the record written
    shutdown    the batch's last line to the kernel's exit; a kernel kept across rounds
                (kernel_session.py): its topology's teardown and halt after the last round
    idle        a round's workers without a batch
    analysis    the coordinator reading pcaps, and writing the tables"""
from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from experiments.onhost.stamps import COORDINATOR

PHASES = ("boot", "metadata", "topology", "setup", "transfer", "verify", "stop", "shutdown",
          "idle", "analysis")
# each step a batch reports (kernel_batch.py and the workloads' mark()) -> the phase that
# ended with it
STEP_PHASE = {
    "started": "boot", "metadata": "metadata", "topology": "topology",
    "link_checks": "topology", "last_run": "stop", "topology_stop": "topology",
    "ended": "topology",
    "links_and_sysctls": "setup", "server_and_capture_start": "setup",
    "receivers_and_capture_start": "setup",
    "client": "transfer", "flows": "transfer",
    "verify": "verify", "stop": "stop", "record": "stop",
}
PROFILE = "wall-profile.json"
KERNELS_STOP = "kernels stop"   # the coordinator's step that halts the kernels it kept


@dataclass
class Batch:
    name: str
    launched: float
    ended: float
    phases: dict[str, float]
    runs: int

    @property
    def wall_s(self) -> float:
        return self.ended - self.launched


@dataclass
class Profile:
    wall_s: float = 0.0
    core_s: float = 0.0
    phases: dict[str, float] = field(default_factory=lambda: dict.fromkeys(PHASES, 0.0))
    batches: list[Batch] = field(default_factory=list)
    runs: int = 0

    def share(self, phase: str) -> float:
        return self.phases[phase] / self.core_s if self.core_s > 0 else 0.0

    @property
    def harness_share(self) -> float:
        """Everything but the transfers themselves, of all core-seconds."""
        return 1 - self.share("transfer") if self.core_s > 0 else 0.0

    def as_dict(self) -> dict[str, Any]:
        return {"wall_s": self.wall_s, "core_s": self.core_s, "runs": self.runs,
                "phases_s": self.phases,
                "shares": {p: self.share(p) for p in PHASES},
                "harness_share": self.harness_share,
                "per_run_s": {p: self.phases[p] / self.runs
                              for p in ("setup", "transfer", "verify", "stop")}
                if self.runs else {},
                "batches": [{"name": b.name, "wall_s": b.wall_s, "runs": b.runs,
                             "phases_s": b.phases} for b in self.batches]}


def batch_phases(wall: dict[str, Any]) -> tuple[dict[str, float], int]:
    """A batch's wall time cut at its stamped steps; (phase -> seconds, runs recorded)."""
    phases = dict.fromkeys(PHASES, 0.0)
    previous = wall["launched"]
    runs = 0
    for stamped_at, step, _ in wall["marks"]:
        phase = STEP_PHASE.get(step, "stop")
        phases[phase] += max(0.0, stamped_at - previous)
        previous = max(previous, stamped_at)
        runs += step == "record"
    phases["shutdown"] += max(0.0, wall["ended"] - previous)
    return phases, runs


def read_steps(work: Path) -> list[dict[str, Any]]:
    path = work / COORDINATOR
    if not path.exists():
        return []
    steps = []
    for line in path.read_text(errors="replace").splitlines():
        try:
            steps.append(json.loads(line))
        except json.JSONDecodeError:
            continue  # cut short when its disk filled, or its harness was killed
    return [step for step in steps if isinstance(step, dict)]


def read_batches(work: Path) -> list[Batch]:
    out = []
    for path in sorted(work.glob("*.wall.json")):
        wall = json.loads(path.read_text())
        phases, runs = batch_phases(wall)
        out.append(Batch(path.name.removesuffix(".wall.json"), wall["launched"], wall["ended"],
                         phases, runs))
    return out


def profile(work: Path) -> Profile:
    """The whole ledger's profile: every coordinator step on this ledger (a resumed
    experiment's too) and every batch."""
    result = Profile()
    steps = read_steps(work)
    batches = read_batches(work)
    result.batches = batches
    rounds = [step for step in steps if step["step"].startswith("round")]
    owners = {batch.name: _round_of(batch, rounds) for batch in batches}
    for step in steps:
        length = step["ended"] - step["started"]
        result.wall_s += length
        if step["step"].startswith("round"):
            inside = [b for b in batches if owners[b.name] is step]
            cores = step["workers"] * length
            busy = sum(b.wall_s for b in inside)
            result.core_s += max(cores, busy)
            result.phases["idle"] += max(0.0, cores - busy)
            for batch in inside:
                for phase, seconds in batch.phases.items():
                    result.phases[phase] += seconds
                result.runs += batch.runs
        elif step["step"] == KERNELS_STOP:
            result.core_s += step["workers"] * length
            result.phases["shutdown"] += step["workers"] * length
        else:
            result.core_s += length
            result.phases["analysis"] += length
    return result


def _round_of(batch: Batch, rounds: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The round a batch was launched in: the latest that had started by then. With the
    runs analysed as they finish, one round ends and the next begins within the second of
    slack that `_within` allows, so a batch may fall within two."""
    within = [step for step in rounds if _within(batch, step)]
    return max(within, key=lambda step: step["started"], default=None)


def _within(batch: Batch, step: dict[str, Any]) -> bool:
    # a batch belongs to the round it was launched in (a second of slack for the clocks of
    # two threads)
    return step["started"] - 1 <= batch.launched <= step["ended"] + 1


def table(result: Profile) -> Iterable[str]:
    yield (f"wall time {result.wall_s:.1f} s, {result.core_s:.1f} core-seconds, "
           f"{result.runs} runs, {len(result.batches)} batches")
    yield f"{'phase':<10} {'core-s':>9} {'share':>7} {'per run':>9}"
    for phase in PHASES:
        per_run = (f"{result.phases[phase] / result.runs:9.3f}"
                   if result.runs and phase in ("setup", "transfer", "verify", "stop")
                   else f"{'':>9}")
        yield (f"{phase:<10} {result.phases[phase]:9.1f} {100 * result.share(phase):6.1f}% "
               f"{per_run}")
    yield f"harness share (everything but the transfers): {100 * result.harness_share:.1f}%"


def write(results: Path) -> tuple[Path, Profile]:
    """results/<experiment>/wall-profile.json from its ledger."""
    result = profile(results / ".work")
    out = results / PROFILE
    out.write_text(json.dumps(result.as_dict(), indent=1) + "\n")
    return out, result
