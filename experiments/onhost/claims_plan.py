"""`testbed reproduce`: run what the studies' claims need, and nothing else.

For each experiment some claim reads, the harness runs exactly the points the claims select
(`only`), into the experiment's usual result folder, so finished runs of `testbed run` count
and an interrupted reproduction resumes like any run. `--quick` runs a reduced copy of each
experiment instead, as its claims file's `[quick.<experiment>]` table says (fewer files,
shorter flows, two runs a point), at the cheapest points that still give every measurable
claim a verdict, into results/reproduce/quick/. The copy's file is written beside its results,
so what was run is on record. The judging is analysis/scorecard's."""
from __future__ import annotations

import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import tomli_w

from experiments import claims as claims_data
from experiments import spec
from experiments.claims import Claim
from experiments.workloads.base import Point

QUICK_SUFFIX = "-quick"
REPRODUCE = "reproduce"


@dataclass(frozen=True)
class Job:
    """One experiment to run for the claims: the experiment (or its quick copy), the points
    the claims need, and the results root its folder goes under."""

    claims_of: str                 # the experiment's name, as the claims name it
    experiment: spec.Experiment
    points: list[str]
    results_root: Path

    @property
    def folder(self) -> Path:
        return self.results_root / self.experiment.name


def plan(claims: list[Claim], results_root: Path, quick: bool) -> list[Job]:
    names = list(dict.fromkeys(c.experiment for c in claims if c.measurable))
    jobs = []
    for name in names:
        mine = [c for c in claims if c.experiment == name]
        if quick:
            root = results_root / REPRODUCE / "quick"
            experiment = quick_copy(name, mine, root / "experiments")
            points = cheapest_points(mine, experiment)
        else:
            root = results_root
            experiment = spec.load(name)
            points = claims_data.needed_points(mine, experiment)
        jobs.append(Job(name, experiment, [p.key for p in points], root))
    return jobs


def quick_copy(name: str, claims: list[Claim], folder: Path) -> spec.Experiment:
    """The experiment file with its claims file's quick overrides, written to `folder` under
    the name NAME-quick and read back through the same checks as every experiment file."""
    data = tomllib.loads(spec.find(name).read_text())
    overrides = quick_overrides(claims[0].file, name)
    data["name"] = name + QUICK_SUFFIX
    data["description"] = f"{data.get('description', name)} (reduced for testbed reproduce " \
                          "--quick)"
    for table, values in overrides.items():
        data.setdefault(table, {}).update(values)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}{QUICK_SUFFIX}.toml"
    path.write_text(tomli_w.dumps(data))
    return spec.load(str(path))


def quick_overrides(claims_file: Path, experiment: str) -> dict[str, dict[str, Any]]:
    quick = tomllib.loads(claims_file.read_text()).get("quick", {})
    overrides = quick.get(experiment)
    if not isinstance(overrides, dict):
        raise claims_data.ClaimError(f"{claims_file}: quick.{experiment}: missing (the tables "
                                     "of the experiment file --quick changes)")
    for table, values in overrides.items():
        if not isinstance(values, dict):
            raise claims_data.ClaimError(f"{claims_file}: quick.{experiment}.{table}: must be "
                                         "a table of the experiment file's keys")
    return overrides


def cheapest_points(claims: list[Claim], experiment: spec.Experiment) -> list[Point]:
    """Per measurable claim, the fewest and cheapest points that can give it a verdict: the
    cheapest point of a side with every point it pairs with; for a trend the cheapest line's
    two ends, for an optimum or a `best` its whole line."""
    def cost(point: Point) -> float:
        return float(experiment.kind.estimate_s(experiment, point))

    points = experiment.points()
    chosen: dict[str, Point] = {}
    for claim in claims:
        if not claim.measurable or claim.kind == "premise":
            continue
        mine = [p for p in points if claim.selects(dict(p.columns))]
        for point in _for_claim(claim, mine, cost):
            chosen[point.key] = point
    return [p for p in points if p.key in chosen]


def _rest(point: Point, skip: tuple[str, ...]) -> tuple[Any, ...]:
    return tuple((k, v) for k, v in point.columns if k not in skip)


def _for_claim(claim: Claim, points: list[Point], cost: Callable[[Point], float]
               ) -> list[Point]:
    if not points:
        return []
    skip = (*claim.compare, "profile", *claims_data.SCTP_ONLY)   # as the scorecard pairs them
    if claim.axis or claim.best:
        axis = claim.axis or claim.best
        lines: dict[tuple[Any, ...], list[Point]] = {}
        for p in points:
            lines.setdefault(_rest(p, (*skip, axis)), []).append(p)
        line = min(lines.values(), key=lambda ps: sum(map(cost, ps)))
        if claim.kind != "trend":
            return line
        ends = {min(p.get(axis) for p in line), max(p.get(axis) for p in line)}
        return [p for p in line if p.get(axis) in ends]
    if not claim.compare:
        # a claim of one side is judged once per SCTP stack (and its settings) the results
        # hold, so each gets its cheapest point
        setups: dict[tuple[Any, ...], list[Point]] = {}
        for p in points:
            setups.setdefault(tuple(dict(p.columns).get(k) for k in claims_data.SCTP_ONLY),
                              []).append(p)
        return [min(group, key=cost) for group in setups.values()]
    a_side = [p for p in points if claim.side(dict(p.columns)) == "a"]
    if not a_side:
        return []
    first = min(a_side, key=cost)
    return [p for p in points if _rest(p, skip) == _rest(first, skip)]
