"""Repetition statistics: Student-t confidence intervals and how many runs a point still needs.
The one place the harness does statistics."""
from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import fmean, stdev

from scipy.stats import t as student_t


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
    half = float(student_t.ppf(0.5 + confidence / 2, n - 1)) * sd / math.sqrt(n)
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
    z = float(student_t.ppf(0.5 + confidence / 2, n - 1))
    wanted = math.ceil((z * ci.sd / (target_fraction * ci.mean)) ** 2)
    # at least one more, at most doubling per round so a noisy estimate cannot overshoot much
    return max(1, min(wanted - n, n, maximum - n))
