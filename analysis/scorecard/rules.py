"""One rule per kind of claim (experiments/claims/README.md states them in words): from the
runs' samples to a verdict, with the number the verdict rests on and its 90% interval.

Every interval is at CONFIDENCE and comes from the runs themselves: a ratio of means from both
sides' spreads (on the log scale, Welch-Satterthwaite degrees of freedom), a difference of
means and a single mean from Student's t. A difference is significant by Welch's t-test at the
same level (experiments/stats.welch_p); where neither side varies (a deterministic clock) the
means either are equal or they are not."""
from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import fmean, stdev

from experiments import stats

CONFIDENCE = 0.90
ALPHA = 1 - CONFIDENCE
# "about", "roughly", "nearly": the published number counts as ours within 20% of it
ABOUT = 0.20
# "no significant difference", "almost identical", "minimal": a ratio within 10% of 1
SAME = 0.10

REPRODUCED = "reproduced"
DIRECTION_ONLY = "direction only"
DIVERGES = "diverges"
INCONCLUSIVE = "inconclusive"
NOT_MEASURED = "not measured"
VERDICTS = (REPRODUCED, DIRECTION_ONLY, DIVERGES, INCONCLUSIVE, NOT_MEASURED)


@dataclass(frozen=True)
class Estimate:
    """A number with its interval, and whether it differs from its null (1 for a ratio, 0 for
    a difference, the published number for a value)."""

    value: float
    low: float
    high: float
    significant: bool

    def within(self, published: tuple[float, float], tolerance: float = 0.0) -> bool:
        low, high = published
        if self.low <= high and low <= self.high:
            return True
        return tolerance > 0 and low * (1 - tolerance) <= self.value <= high * (1 + tolerance)


@dataclass(frozen=True)
class Judged:
    verdict: str
    estimate: Estimate | None
    why: str


def _t(df: float) -> float:
    return float(stats._student_t().ppf(1 - ALPHA / 2, df))


def _spread(samples: list[float]) -> tuple[int, float, float]:
    n = len(samples)
    return n, fmean(samples), (stdev(samples) if n > 1 else math.nan)


def enough(*sides: list[float]) -> bool:
    return all(len(s) >= 2 for s in sides)


def significant(a: list[float], b: list[float]) -> bool:
    if stats.constant(a) and stats.constant(b):
        return not stats.constant([fmean(a), fmean(b)])
    p = stats.welch_p(a, b)
    return p is not None and p < ALPHA


def _welch_df(u: float, v: float, na: int, nb: int) -> float:
    if u + v == 0:
        return math.inf
    return (u + v) ** 2 / ((u * u / (na - 1) if u else 0) + (v * v / (nb - 1) if v else 0))


def ratio(a: list[float], b: list[float]) -> Estimate:
    """mean(a) / mean(b) with its interval (delta method on the log scale)."""
    na, ma, sa = _spread(a)
    nb, mb, sb = _spread(b)
    if ma <= 0 or mb <= 0:
        raise ValueError("a ratio of means needs positive means")
    u, v = (sa / ma) ** 2 / na, (sb / mb) ** 2 / nb
    value = ma / mb
    half = _t(_welch_df(u, v, na, nb)) * math.sqrt(u + v) if u + v else 0.0
    return Estimate(value, value * math.exp(-half), value * math.exp(half), significant(a, b))


def difference(a: list[float], b: list[float]) -> Estimate:
    na, ma, sa = _spread(a)
    nb, mb, sb = _spread(b)
    u, v = sa * sa / na, sb * sb / nb
    half = _t(_welch_df(u, v, na, nb)) * math.sqrt(u + v) if u + v else 0.0
    value = ma - mb
    return Estimate(value, value - half, value + half, significant(a, b))


def mean(samples: list[float], null: float = 0.0) -> Estimate:
    n, m, s = _spread(samples)
    half = _t(n - 1) * s / math.sqrt(n) if s else 0.0
    return Estimate(m, m - half, m + half, not m - half <= null <= m + half)


def _toward(value: float, null: float, expect: str) -> bool:
    return value < null if expect == "less" else value > null


def direction(a: list[float], b: list[float], expect: str) -> Judged:
    """a's mean against b's, expected `less` or `greater`; the estimate is their ratio (their
    difference where a mean is not positive)."""
    if not enough(a, b):
        return Judged(INCONCLUSIVE, None, "fewer than two runs on a side")
    positive = fmean(a) > 0 and fmean(b) > 0
    est, null = (ratio(a, b), 1.0) if positive else (difference(a, b), 0.0)
    if not est.significant:
        return Judged(INCONCLUSIVE, est, "no significant difference")
    if _toward(est.value, null, expect):
        return Judged(REPRODUCED, est, f"a {expect} than b, significantly")
    return Judged(DIVERGES, est, f"a significantly {'greater' if expect == 'less' else 'less'}")


def _magnitude(est: Estimate, published: tuple[float, float], null: float, about: bool
               ) -> Judged:
    if est.within(published, ABOUT if about else 0.0):
        return Judged(REPRODUCED, est, "the published number lies within ours")
    expect = "less" if published[1] < null else "greater"
    if published[0] <= null <= published[1]:
        return Judged(DIVERGES if est.significant else INCONCLUSIVE, est, "outside the range")
    if not est.significant:
        return Judged(INCONCLUSIVE, est, "no significant difference, and not the published size")
    if _toward(est.value, null, expect):
        return Judged(DIRECTION_ONLY, est, "the published direction, another size")
    return Judged(DIVERGES, est, "the opposite direction, significantly")


def ratio_claim(a: list[float], b: list[float], published: tuple[float, float], about: bool
                ) -> Judged:
    if not enough(a, b):
        return Judged(INCONCLUSIVE, None, "fewer than two runs on a side")
    return _magnitude(ratio(a, b), published, 1.0, about)


def difference_claim(a: list[float], b: list[float], published: tuple[float, float],
                     about: bool) -> Judged:
    if not enough(a, b):
        return Judged(INCONCLUSIVE, None, "fewer than two runs on a side")
    return _magnitude(difference(a, b), published, 0.0, about)


def same(a: list[float], b: list[float]) -> Judged:
    """No difference that matters: the ratio's interval within SAME of 1 (an equivalence test)."""
    if not enough(a, b):
        return Judged(INCONCLUSIVE, None, "fewer than two runs on a side")
    est = ratio(a, b)
    if est.low >= 1 - SAME and est.high <= 1 + SAME:
        return Judged(REPRODUCED, est, f"the ratio's interval lies within {SAME:.0%} of 1")
    if est.significant and not 1 - SAME <= est.value <= 1 + SAME:
        return Judged(DIVERGES, est, f"significantly different, by more than {SAME:.0%}")
    return Judged(INCONCLUSIVE, est, "neither shown equal nor shown different")


def value(samples: list[float], published: tuple[float, float], about: bool, sign: bool
          ) -> Judged:
    """A metric's mean against the published number; with `sign`, a mean of the published
    sign that misses the number is the direction only."""
    if len(samples) < 2:
        return Judged(INCONCLUSIVE, None, "fewer than two runs")
    est = mean(samples)
    if est.within(published, ABOUT if about else 0.0):
        return Judged(REPRODUCED, est, "the published number lies within ours")
    if sign and est.significant and _toward(est.value, 0.0,
                                            "less" if published[1] < 0 else "greater"):
        return Judged(DIRECTION_ONLY, est, "the published sign, another size")
    return Judged(DIVERGES, est, "the published number lies outside ours")


def bound(samples: list[float], published: tuple[float, float], expect: str) -> Judged:
    """The mean's interval wholly below (`less`) or above (`greater`) the published number."""
    if len(samples) < 2:
        return Judged(INCONCLUSIVE, None, "fewer than two runs")
    est = mean(samples, published[0])
    if expect == "less" and est.high < published[0] or \
            expect == "greater" and est.low > published[1]:
        return Judged(REPRODUCED, est, f"wholly {expect} than the bound")
    if expect == "less" and est.low > published[1] or \
            expect == "greater" and est.high < published[0]:
        return Judged(DIVERGES, est, "wholly on the other side of the bound")
    return Judged(INCONCLUSIVE, est, "the interval straddles the bound")


def premise(samples: list[float]) -> Judged:
    if not samples:
        return Judged(INCONCLUSIVE, None, "no runs")
    broken = sum(1 for s in samples if s)
    est = Estimate(float(broken), float(broken), float(broken), broken > 0)
    if broken:
        return Judged(DIVERGES, est, f"{broken} of {len(samples)} runs broke it")
    return Judged(REPRODUCED, est, f"held in all {len(samples)} runs")


def survives(a: tuple[int, int], b: tuple[int, int]) -> Judged:
    """Each side's runs as (finished, ended): a's transfers finish where b's do not. The
    number is the difference of the shares that finished (1: all of a's, none of b's)."""
    (a_ok, a_all), (b_ok, b_all) = a, b
    if a_all < 2 or b_all < 2:
        return Judged(NOT_MEASURED, None, "fewer than two runs on a side")
    share = a_ok / a_all - b_ok / b_all
    est = Estimate(share, share, share, share != 0)
    told = f"{a_ok} of {a_all} finished against {b_ok} of {b_all}"
    if a_ok == a_all and b_ok == 0:
        return Judged(REPRODUCED, est, told)
    if share > 0:
        return Judged(DIRECTION_ONLY, est, told)
    return Judged(DIVERGES, est, told)


def trend(ratios: list[tuple[list[float], list[float]]], expect: str) -> Judged:
    """a's ratio to b along an axis, in the axis's order: a's lead grows (`less`: the ratio
    falls) when the last value's interval lies wholly beyond the first's in that direction."""
    measured = [(a, b) for a, b in ratios if enough(a, b)]
    if len(measured) < 2:
        return Judged(INCONCLUSIVE, None, "fewer than two points of the axis measured")
    first, last = ratio(*measured[0]), ratio(*measured[-1])
    change = Estimate(last.value / first.value, last.low / first.high,
                      last.high / first.low, False)
    if (last.high < first.low) if expect == "less" else (last.low > first.high):
        return Judged(REPRODUCED, change, "the lead at the axis's end is clearly larger")
    if (last.low > first.high) if expect == "less" else (last.high < first.low):
        return Judged(DIVERGES, change, "the lead at the axis's end is clearly smaller")
    return Judged(INCONCLUSIVE, change, "the lead does not clearly change along the axis")


def optimum(along: list[list[float]]) -> Judged:
    """Times along an axis in its order: the best lies inside it, its last value significantly
    slower than the best (too much of a good thing)."""
    measured = [s for s in along if len(s) >= 2]
    if len(measured) < 3:
        return Judged(INCONCLUSIVE, None, "fewer than three points of the axis measured")
    best = min(range(len(measured)), key=lambda i: fmean(measured[i]))
    est = ratio(measured[-1], measured[best])
    if best == len(measured) - 1:
        return Judged(DIVERGES, est, "the axis's last value is the best")
    if est.significant and est.value > 1:
        return Judged(REPRODUCED, est, "the last value is significantly slower than the best")
    return Judged(INCONCLUSIVE, est, "the last value is not significantly slower than the best")


def combine(verdicts: list[str]) -> str:
    """A claim's verdict over its points: any divergence diverges it; all reproduced
    reproduce it; reproduced and direction only give the direction only; else inconclusive.
    No point measured: not measured."""
    measured = [v for v in verdicts if v != NOT_MEASURED]
    if not measured:
        return NOT_MEASURED
    if DIVERGES in measured:
        return DIVERGES
    if all(v == REPRODUCED for v in measured):
        return REPRODUCED
    if all(v in (REPRODUCED, DIRECTION_ONLY) for v in measured):
        return DIRECTION_ONLY
    return INCONCLUSIVE
