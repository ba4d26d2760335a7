"""Statistics, in one place: Student-t confidence intervals, how many runs a point still needs,
and the tests the benchmarks compare clocks with (Welch's t, one-way ANOVA)."""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache
from statistics import fmean, stdev
from types import ModuleType
from typing import Any


@cache
def _scipy_stats() -> ModuleType:
    """scipy.stats, loaded on first use: importing it costs a second on the host and several
    in the pinned kernel, and most commands never need it."""
    from scipy import stats
    return stats


def _student_t() -> Any:
    return _scipy_stats().t


@dataclass(frozen=True)
class Interval:
    n: int
    mean: float
    sd: float
    half_width: float  # of the two-sided interval at the given confidence
    confidence: float

    @property
    def relative(self) -> float:
        return self.half_width / self.mean if self.mean else math.inf


def interval(samples: list[float], confidence: float = 0.90) -> Interval:
    n = len(samples)
    if n == 0:
        return Interval(0, math.nan, math.nan, math.inf, confidence)
    mean = fmean(samples)
    if n == 1:
        return Interval(1, mean, math.nan, math.inf, confidence)
    sd = stdev(samples)
    half = float(_student_t().ppf(0.5 + confidence / 2, n - 1)) * sd / math.sqrt(n)
    return Interval(n, mean, sd, half, confidence)


def is_tight(ci: Interval, target_fraction: float) -> bool:
    return ci.n >= 2 and ci.relative <= target_fraction


def runs_still_needed(samples: list[float], confidence: float, target_fraction: float,
                      minimum: int, maximum: int) -> int:
    """How many more runs the point should get in the next round (0 when done or capped).
    Estimated from the current spread; never more than the cap allows."""
    n = len(samples)
    if n < minimum:
        return minimum - n
    ci = interval(samples, confidence)
    if is_tight(ci, target_fraction) or n >= maximum:
        return 0
    if not ci.mean or math.isnan(ci.sd):
        return min(1, maximum - n)
    z = float(_student_t().ppf(0.5 + confidence / 2, n - 1))
    wanted = math.ceil((z * ci.sd / (target_fraction * ci.mean)) ** 2)
    # at least one more, at most doubling per round so a noisy estimate cannot overshoot much
    return max(1, min(wanted - n, n, maximum - n))


def constant(values: list[float]) -> bool:
    return max(values) - min(values) <= 1e-9 * max(1.0, abs(max(values)))


def welch_p(a: list[float], b: list[float]) -> float | None:
    """Welch's two-sided t-test of equal means; None where either side has no spread (a
    deterministic clock has none to test against)."""
    if len(a) < 2 or len(b) < 2 or constant(a) or constant(b):
        return None
    return float(_scipy_stats().ttest_ind(a, b, equal_var=False).pvalue)


def anova_p(groups: list[list[float]]) -> float | None:
    """One-way ANOVA across groups: small when the groups differ by more than their members
    vary; None with fewer than two groups of two or without spread."""
    groups = [g for g in groups if len(g) > 1]
    if len(groups) < 2 or all(constant(g) for g in groups):
        return None
    return float(_scipy_stats().f_oneway(*groups).pvalue)
