"""Links that change during a run: a schedule of instants and new settings, applied in place.

A change names a shaped direction of the topology and what becomes of it at an instant counted
from the schedule's start: a new rate, delay, loss or loss burst, `down` (every packet dropped,
as a dead link would) or `up` (the loss it had before it went down). The tc lines of every
change are worked out before the start, and one applier process per router is started then too
(schedule_apply.py) with its `tc -batch` reading from a pipe: at each instant one write, and tc
applies the line as it reads it, so no process starts at the instant (a fork inside the pinned
kernel costs tens of milliseconds) and nothing in the harness's own process holds it back.
When each change was written is recorded (each one, up to RECORDED_CHANGES, and always how
late they were); `stop` puts the links back as the run had them."""
from __future__ import annotations

import json
import subprocess
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..params import LinkShape, ParameterError
from . import shaping

if TYPE_CHECKING:
    from .base import Topology

SETTINGS = ("rate_bps", "delay_s", "loss", "loss_burst", "down")
PYTHON = "/usr/bin/python3"
# the applier and its tc run before any program of the run that wants the CPU at the instant
# (the pinned kernel has one CPU): a change is not held back behind a program's start
REAL_TIME_PRIORITY = ("chrt", "--fifo", "50")
# a record lists each change and when it was written up to this many (a run's fades can be
# thousands); past it, their count and lags only
RECORDED_CHANGES = 100


class ScheduleError(RuntimeError):
    """A schedule that could not be carried out on the running topology."""


@dataclass(frozen=True)
class Change:
    at_s: float
    link: str
    settings: dict[str, Any]  # some of SETTINGS, in SI units; down: True (down) or False (up)

    def __post_init__(self) -> None:
        unknown = sorted(set(self.settings) - set(SETTINGS))
        if unknown:
            raise ParameterError(f"unknown link setting {unknown[0]!r}: one of "
                                 f"{', '.join(SETTINGS)}")
        if not self.settings:
            raise ParameterError("a change needs at least one setting")
        if "down" in self.settings and not isinstance(self.settings["down"], bool):
            raise ParameterError(f"down must be true or false, got {self.settings['down']!r}")
        if not isinstance(self.at_s, (int, float)) or isinstance(self.at_s, bool) \
                or not 0 <= self.at_s <= 86_400:
            raise ParameterError(f"a change's instant must be 0 s to one day, got {self.at_s!r}")

    def to_dict(self) -> dict[str, Any]:
        return {"at_s": self.at_s, "link": self.link, **self.settings}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Change:
        rest = {k: v for k, v in data.items() if k not in ("at_s", "link")}
        return cls(float(data["at_s"]), str(data["link"]), rest)


def ordered(changes: list[Change]) -> None:
    """Refuses instants that go back in time: a schedule is read as written."""
    for before, after in zip(changes, changes[1:], strict=False):
        if after.at_s < before.at_s:
            raise ParameterError(f"change at {after.at_s:g} s comes after one at "
                                 f"{before.at_s:g} s: list the changes in time order")


def shapes_over_time(base: dict[str, LinkShape], changes: list[Change]
                     ) -> list[tuple[Change, LinkShape, LinkShape]]:
    """Each change with the link's shape before and after it; a shape that cannot be (a loss
    its burst cannot carry, a link brought up that was never down) is refused here, before any
    run."""
    current = dict(base)
    loss_before_down: dict[str, float] = {}
    steps = []
    for change in changes:
        if change.link not in current:
            raise ParameterError(f"no shaped link {change.link!r}: choose among "
                                 f"{', '.join(current)}")
        old = current[change.link]
        values = {k: v for k, v in change.settings.items() if k != "down"}
        down = change.settings.get("down")
        if down is True:
            loss_before_down[change.link] = values.get("loss", old.loss)
            values.update(loss=1.0, loss_burst=None)
        elif down is False:
            if change.link not in loss_before_down:
                raise ParameterError(f"link {change.link!r} is brought up at "
                                     f"{change.at_s:g} s but was not down")
            values.setdefault("loss", loss_before_down.pop(change.link))
        new = old.with_changes(**values)
        steps.append((change, old, new))
        current[change.link] = new
    return steps


@dataclass
class Running:
    """A schedule under way on a built topology: one applier process per router that has
    changes to make (schedule_apply.py)."""

    topology: Topology
    changes: list[Change]
    base: dict[str, LinkShape] = field(default_factory=dict)
    applied: list[dict[str, Any]] = field(default_factory=list)
    lags: list[float] = field(default_factory=list)
    start: float = 0.0
    start_epoch: float = 0.0
    _appliers: dict[str, subprocess.Popen] = field(default_factory=dict)
    _error: list[str] = field(default_factory=list)

    def begin(self) -> None:
        egress = self.topology.egress
        self.base = {d: e.shape for d, e in egress.items()}
        plans: dict[str, list[list[Any]]] = {}
        for index, (change, old, new) in enumerate(shapes_over_time(self.base, self.changes)):
            e = egress[change.link]
            text = "".join(f"{line}\n" for line in
                           shaping.change(e.dev, old, new, e.frame_bytes))
            plans.setdefault(e.node.name, []).append([index, change.at_s, text])
        for node_name, plan in plans.items():
            applier = self.topology.node(node_name).popen(
                [*REAL_TIME_PRIORITY, PYTHON, "-m", "topology.net.schedule_apply"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            self._appliers[node_name] = applier
            assert applier.stdin is not None and applier.stdout is not None
            applier.stdin.write(json.dumps(plan) + "\n")
            applier.stdin.flush()
            if applier.stdout.readline().strip() != "ready":
                raise ScheduleError(f"{node_name}: the schedule's applier did not start: "
                                    f"{applier.communicate(timeout=30)[1].strip()}")
        self.start, self.start_epoch = time.monotonic(), time.time()
        for applier in self._appliers.values():
            assert applier.stdin is not None
            applier.stdin.write(f"{self.start!r}\n")
            applier.stdin.flush()

    def stop(self) -> dict[str, Any]:
        """Ends the schedule (changes not yet due are not made), waits for its appliers, and
        puts every link back as the run began; what was applied and when, for the record."""
        written: list[tuple[int, float]] = []
        for node_name, applier in self._appliers.items():
            out, err = applier.communicate(timeout=30)   # closing its input stops it
            try:
                said = json.loads(out.strip().splitlines()[-1])
            except (ValueError, IndexError):
                self._error.append(f"{node_name}: the schedule's applier failed "
                                   f"({applier.returncode}): {err.strip()[-500:]}")
                continue
            written += [(int(i), float(t)) for i, t in said["applied"]]
            if said["error"] or said["tc_returncode"] != 0:
                self._error.append(f"{node_name}: tc -batch ({said['tc_returncode']}): "
                                   f"{said['error']}")
        for index, applied_s in sorted(written, key=lambda w: w[1]):
            change = self.changes[index]
            self.applied.append({**change.to_dict(), "applied_s": applied_s})
            self.lags.append(applied_s - change.at_s)
        self.topology.rebuild_links({link: self.base[link]
                                     for link in {c.link for c in self.changes}})
        record: dict[str, Any] = {
            "start_epoch": self.start_epoch, "start_monotonic": self.start,
            "changes_made": len(self.applied),
            "not_reached": len(self.changes) - len(self.applied),
            "lag_max_s": max(self.lags, default=0.0),
            "lag_mean_s": sum(self.lags) / len(self.lags) if self.lags else 0.0}
        if len(self.applied) <= RECORDED_CHANGES:
            record["applied"] = self.applied
        if self._error:
            raise ScheduleError("the link schedule failed: " + "; ".join(self._error))
        return record
