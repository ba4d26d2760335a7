"""The scorecard: every claim judged against the result sets of its experiment, a verdict per
stack and TCP profile the results hold, and each point's own verdict behind it.

A compared claim pairs each of its `a` points with the `b` point that has the same columns but
for the compared ones and the hosts' profile (an SCTP point pairs with each TCP profile's, and
a TCP point with each SCTP setting's), so the same claim is judged once per stack, SCTP
setting and TCP profile. Runs that count are those with status
`ok`; a point with fewer than two is not measured."""
from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from statistics import fmean
from typing import Any

from analysis.results import ResultSet
from analysis.scorecard import rules
from experiments.claims import BEST, SCTP_ONLY, Claim

SCTP_PROFILE = "sctp"
Columns = dict[str, Any]


@dataclass
class PointVerdict:
    label: str            # the points judged, as their columns
    verdict: str
    estimate: rules.Estimate | None
    why: str
    runs: tuple[int, ...]  # runs that count on each side


@dataclass
class Verdict:
    claim: Claim
    group: str             # stack and TCP profile, as "published / tcp-newreno"
    verdict: str
    points: list[PointVerdict] = field(default_factory=list)
    note: str = ""

    @property
    def measured(self) -> list[PointVerdict]:
        return [p for p in self.points if p.verdict != rules.NOT_MEASURED]

    def ours(self) -> tuple[float, float, float] | None:
        """The measured points' estimates: the geometric mean of ratios (the mean of other
        numbers) with the lowest low and highest high of their intervals."""
        est = [p.estimate for p in self.measured if p.estimate is not None]
        if not est:
            return None
        if self.claim.kind in ("ratio", "same", "trend", "optimum") \
                and all(e.value > 0 for e in est):
            centre = math.exp(fmean(math.log(e.value) for e in est))
        else:
            centre = fmean(e.value for e in est)
        return centre, min(e.low for e in est), max(e.high for e in est)


class Samples:
    """The runs that count of one result set, per point key, as each metric's values."""

    def __init__(self, results: ResultSet) -> None:
        self.results = results
        self.runs: dict[str, list[dict[str, Any]]] = defaultdict(list)
        self.ended: dict[str, int] = defaultdict(int)     # every run that ended, failed too
        for run in results.runs:
            key = str(run["run_id"]).rsplit("_r", 1)[0]
            self.ended[key] += 1
            if run.get("status") == "ok":
                self.runs[key].append(run)
        self.points: list[Columns] = [dict(p) for p in results.expected] or self._from_runs()

    def _from_runs(self) -> list[Columns]:
        columns = self.results.point_columns
        return [{"key": key, **{c: runs[0].get(c) for c in columns}}
                for key, runs in self.runs.items()]

    def outcome(self, point: Columns) -> tuple[int, int]:
        """The point's runs that finished (status ok) and that ended."""
        return len(self.runs.get(point["key"], [])), self.ended.get(point["key"], 0)

    def values(self, point: Columns, metric: str) -> list[float]:
        out = []
        for run in self.runs.get(point["key"], []):
            value = derived(metric, run) if metric == "utilization" and metric not in run \
                else run.get(metric)
            if isinstance(value, (int, float)) and not math.isnan(value):
                out.append(float(value))
        return out


def derived(metric: str, run: dict[str, Any]) -> float:
    """A metric the scorecard computes from a run's columns: an FTP transfer's utilization is
    the files' bits over its time and the link's rate."""
    try:
        bits = 8 * float(run["file_size"]) * float(run["files"])
        return bits / (float(run["transfer_time_s"]) * float(run["rate_bps"]))
    except (KeyError, TypeError, ValueError, ZeroDivisionError):
        return math.nan


# Of the columns only SCTP points fill (experiments.claims.SCTP_ONLY), each SCTP setting is a
# group of its own, as each TCP profile is (the SCTP stack, group_of, where not the kernel's).
SCTP_SETTINGS = ("sctp_settings",)


def _unset(value: Any) -> bool:
    return value is None or value == "" or (isinstance(value, float) and math.isnan(value))


def _settings_agree(a: Columns, b: Columns) -> bool:
    return all(_unset(a.get(k)) or _unset(b.get(k)) or a.get(k) == b.get(k) for k in SCTP_ONLY)


# The SCTP stack a point's SCTP ran on where not the kernel's (the sctp_stack column):
# a group of its own, so a finding is judged on each SCTP stack apart.
KERNEL_SCTP = "kernel"


def group_of(columns: list[Columns], by_profile: bool) -> str:
    stack = next((str(c["stack"]) for c in columns if c.get("stack")), "")
    sctp_stacks = sorted({str(c["sctp_stack"]) for c in columns
                          if not _unset(c.get("sctp_stack")) and c["sctp_stack"] != KERNEL_SCTP})
    profiles = sorted({str(c["profile"]) for c in columns if c.get("profile")})
    tcp = [p for p in profiles if p != SCTP_PROFILE] or profiles
    settings = sorted({str(c[k]) for c in columns for k in SCTP_SETTINGS
                       if not _unset(c.get(k))})
    parts = [stack, *sctp_stacks, *settings] + ([] if not by_profile else ["+".join(tcp)])
    return " / ".join(p for p in parts if p) or "-"


def stack_of_group(group: str) -> str:
    """The stack a group names (group_of: the stack first)."""
    return group.split(" / ")[0]


def label(columns: Columns, skip: tuple[str, ...] = ("key",)) -> str:
    return " ".join(f"{k}={v}" for k, v in columns.items() if k not in skip)


def judge(claim: Claim, samples: Samples | None) -> list[Verdict]:
    if not claim.measurable:
        return [Verdict(claim, "-", rules.NOT_MEASURED, note=claim.unmeasured)]
    if samples is None:
        return [Verdict(claim, "-", rules.NOT_MEASURED,
                        note=f"no results of {claim.experiment} yet")]
    points = [p for p in samples.points if claim.selects(p)]
    judge_kind = JUDGES[claim.kind]
    groups: dict[str, list[PointVerdict]] = defaultdict(list)
    for group, verdict in judge_kind(claim, samples, points):
        groups[group].append(verdict)
    if not groups:
        return [Verdict(claim, "-", rules.NOT_MEASURED, note="no point of the results matches")]
    return [Verdict(claim, g, rules.combine([p.verdict for p in pv]), pv)
            for g, pv in sorted(groups.items())]


Judging = Callable[[Claim, Samples, list[Columns]], list[tuple[str, PointVerdict]]]


def _pairs(claim: Claim, points: list[Columns]) -> list[tuple[Columns, Columns]]:
    """Each `a` point with every `b` point equal to it but for the compared columns, the
    hosts' profile and the axis; a side's `best` picks its best point in `_choose_best`."""
    ignore = set(claim.compare) | {"key", "profile", *SCTP_ONLY}

    def key(p: Columns) -> tuple[Any, ...]:
        return tuple(sorted((k, v) for k, v in p.items() if k not in ignore))

    by_key: dict[tuple[Any, ...], list[Columns]] = defaultdict(list)
    for p in points:
        if claim.side(p) == "b":
            by_key[key(p)].append(p)
    return [(a, b) for a in points if claim.side(a) == "a" for b in by_key[key(a)]
            if _settings_agree(a, b)]


def _measured(a: list[float], b: list[float]) -> bool:
    return len(a) >= 2 and len(b) >= 2


def _judge_pairs(claim: Claim, samples: Samples, points: list[Columns]
                 ) -> list[tuple[str, PointVerdict]]:
    out = []
    for a, b in _resolve_best(claim, samples, _pairs(claim, points)):
        va, vb = samples.values(a, claim.metric), samples.values(b, claim.metric)
        group = group_of([a, b], by_profile="profile" not in claim.compare)
        shown = label({k: v for k, v in a.items() if k not in claim.compare})
        if not _measured(va, vb):
            out.append((group, PointVerdict(shown, rules.NOT_MEASURED, None,
                                            "fewer than two runs on a side",
                                            (len(va), len(vb)))))
            continue
        judged = _rule(claim, va, vb)
        out.append((group, PointVerdict(shown, judged.verdict, judged.estimate, judged.why,
                                        (len(va), len(vb)))))
    return out


def _rule(claim: Claim, a: list[float], b: list[float]) -> rules.Judged:
    published = claim.published or (math.nan, math.nan)
    if claim.kind == "direction":
        return rules.direction(a, b, claim.expect)
    if claim.kind == "ratio":
        return rules.ratio_claim(a, b, published, claim.about)
    if claim.kind == "difference":
        return rules.difference_claim(a, b, published, claim.about)
    return rules.same(a, b)


def _resolve_best(claim: Claim, samples: Samples, pairs: list[tuple[Columns, Columns]]
                  ) -> list[tuple[Columns, Columns]]:
    """Where a side names `best` for a column, keep per pair only the point whose mean on
    that column's axis is the best (the lowest time, the highest utilization)."""
    best_a = [c for c, v in claim.a.items() if v == BEST]
    best_b = [c for c, v in claim.b.items() if v == BEST]
    if not best_a and not best_b:
        return pairs
    chosen: dict[tuple[Any, ...], tuple[Columns, Columns]] = {}
    for a, b in pairs:
        free = set(best_a) if best_a else set(best_b)
        key = tuple(sorted((k, v) for k, v in {**a, **{f"b.{k}": v for k, v in b.items()}}
                           .items() if k not in free and k != "key"))
        side = a if best_a else b
        old = chosen.get(key)
        if old is None or _better(claim, samples, side, old[0] if best_a else old[1]):
            chosen[key] = (a, b)
    return list(chosen.values())


def _better(claim: Claim, samples: Samples, new: Columns, old: Columns) -> bool:
    vn, vo = samples.values(new, claim.metric), samples.values(old, claim.metric)
    if not vn:
        return False
    if not vo:
        return True
    higher = claim.metric == "utilization"
    return fmean(vn) > fmean(vo) if higher else fmean(vn) < fmean(vo)


def _judge_single(claim: Claim, samples: Samples, points: list[Columns]
                  ) -> list[tuple[str, PointVerdict]]:
    if claim.best:
        points = _best_of(claim, samples, points, claim.best)
    out = []
    published = claim.published or (math.nan, math.nan)
    for p in points:
        values = samples.values(p, claim.metric)
        group = group_of([p], by_profile=True)
        if len(values) < 2:
            out.append((group, PointVerdict(label(p), rules.NOT_MEASURED, None,
                                            "fewer than two runs", (len(values),))))
            continue
        if claim.kind == "value":
            judged = rules.value(values, published, claim.about, claim.sign)
        else:
            judged = rules.bound(values, published, claim.expect)
        out.append((group, PointVerdict(label(p), judged.verdict, judged.estimate, judged.why,
                                        (len(values),))))
    return out


def _best_of(claim: Claim, samples: Samples, points: list[Columns], axis: str
             ) -> list[Columns]:
    chosen: dict[tuple[Any, ...], Columns] = {}
    for p in points:
        key = tuple(sorted((k, v) for k, v in p.items() if k not in (axis, "key")))
        if key not in chosen or _better(claim, samples, p, chosen[key]):
            chosen[key] = p
    return list(chosen.values())


def _judge_premise(claim: Claim, samples: Samples, points: list[Columns]
                   ) -> list[tuple[str, PointVerdict]]:
    by_group: dict[str, list[float]] = defaultdict(list)
    for p in points:
        by_group[group_of([p], by_profile=False)].extend(samples.values(p, claim.metric))
    out = []
    for group, values in by_group.items():
        judged = rules.premise(values)
        verdict = judged.verdict if values else rules.NOT_MEASURED
        out.append((group, PointVerdict(f"every run ({len(values)})", verdict,
                                        judged.estimate, judged.why, (len(values),))))
    return out


def _along(claim: Claim, points: list[Columns]) -> dict[tuple[Any, ...], list[Columns]]:
    """The points of each line along the claim's axis, in the axis's order."""
    lines: dict[tuple[Any, ...], list[Columns]] = defaultdict(list)
    for p in points:
        key = tuple(sorted((k, v) for k, v in p.items() if k not in (claim.axis, "key")))
        lines[key].append(p)
    return {k: sorted(v, key=lambda p: p[claim.axis]) for k, v in lines.items()}


def _judge_trend(claim: Claim, samples: Samples, points: list[Columns]
                 ) -> list[tuple[str, PointVerdict]]:
    a_points = [p for p in points if claim.side(p) == "a"]
    pairs = {a["key"]: b for a, b in _pairs(claim, points)}
    out = []
    for line in _along(claim, [a for a in a_points if a["key"] in pairs]).values():
        ratios = [(samples.values(a, claim.metric), samples.values(pairs[a["key"]],
                                                                   claim.metric))
                  for a in line]
        group = group_of([line[0], pairs[line[0]["key"]]], by_profile=True)
        shown = label({k: v for k, v in line[0].items()
                       if k not in (*claim.compare, claim.axis)}) + f" along {claim.axis}"
        judged = rules.trend(ratios, claim.expect)
        verdict = judged.verdict if judged.estimate else rules.NOT_MEASURED
        out.append((group, PointVerdict(shown, verdict, judged.estimate, judged.why,
                                        tuple(min(len(a), len(b)) for a, b in ratios))))
    return out


def _judge_optimum(claim: Claim, samples: Samples, points: list[Columns]
                   ) -> list[tuple[str, PointVerdict]]:
    out = []
    for line in _along(claim, points).values():
        along = [samples.values(p, claim.metric) for p in line]
        judged = rules.optimum(along)
        verdict = judged.verdict if judged.estimate else rules.NOT_MEASURED
        shown = label({k: v for k, v in line[0].items() if k != claim.axis}) \
            + f" along {claim.axis}"
        out.append((group_of(line, by_profile=True),
                    PointVerdict(shown, verdict, judged.estimate, judged.why,
                                 tuple(len(v) for v in along))))
    return out


def _judge_survives(claim: Claim, samples: Samples, points: list[Columns]
                    ) -> list[tuple[str, PointVerdict]]:
    out = []
    for a, b in _pairs(claim, points):
        sides = samples.outcome(a), samples.outcome(b)
        judged = rules.survives(*sides)
        shown = label({k: v for k, v in a.items() if k not in claim.compare})
        out.append((group_of([a, b], by_profile="profile" not in claim.compare),
                    PointVerdict(shown, judged.verdict, judged.estimate, judged.why,
                                 (sides[0][1], sides[1][1]))))
    return out


JUDGES: dict[str, Judging] = {
    "direction": _judge_pairs, "ratio": _judge_pairs, "difference": _judge_pairs,
    "same": _judge_pairs, "value": _judge_single, "bound": _judge_single,
    "premise": _judge_premise, "trend": _judge_trend, "optimum": _judge_optimum,
    "survives": _judge_survives,
}
