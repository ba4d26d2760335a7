"""How long a round's runs left will take on the wall clock, learned from the runs that ended.

A workload's estimate of a run is kernel time: its bytes over the link plus the waits its loss
costs. On the real clock a run's wall time follows it, plus set-up, capture and stop; on the
virtual clock idle waits cost nothing and computing costs everything, so the same estimate can
be hours of kernel time and minutes of wall time. No fixed ratio holds across clocks and
machines: the forecast fits wall = overhead + ratio * estimate to the runs that ended (this
round's and earlier rounds' in the same results folder) and gives a range from how far the runs
so far strayed from that fit."""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import fmean

# Booting a kernel and building its topology, before a batch's first run (measured 9 s).
BOOT_S = 10.0
# Below this many ended runs the range is the fit's guess, said to be rough.
SURE_AFTER_RUNS = 5


@dataclass(frozen=True)
class Fit:
    overhead_s: float
    ratio: float
    # each ended run's wall time over the fit's prediction: the spread the range comes from
    spread: tuple[float, ...]

    def predict(self, estimate_s: float) -> float:
        return self.overhead_s + self.ratio * estimate_s


@dataclass(frozen=True)
class Eta:
    seconds: float
    low_s: float
    high_s: float
    runs: int   # the ended runs the fit was learned from

    @property
    def rough(self) -> bool:
        return self.runs < SURE_AFTER_RUNS


def fit(samples: Sequence[tuple[float, float]]) -> Fit | None:
    """(estimate_s, wall_s) pairs -> a least-squares line, never below zero; with one sample,
    or estimates all alike, the mean ratio alone."""
    if not samples:
        return None
    estimates = [e for e, _ in samples]
    walls = [w for _, w in samples]
    mean_e, mean_w = fmean(estimates), fmean(walls)
    spread_e = sum((e - mean_e) ** 2 for e in estimates)
    overhead, ratio = 0.0, mean_w / mean_e if mean_e > 0 else 0.0
    if len(samples) >= 3 and spread_e > 1e-9 * max(mean_e, 1.0) ** 2:
        slope = sum((e - mean_e) * (w - mean_w) for e, w in samples) / spread_e
        if slope >= 0 and mean_w - slope * mean_e >= 0:
            overhead, ratio = mean_w - slope * mean_e, slope
    if ratio == 0:
        if mean_w <= 0:
            return None  # runs that took no time at all teach nothing
        overhead = mean_w  # estimates all zero: each run costs what the others cost
    line = Fit(overhead, ratio, ())
    spread = tuple(w / line.predict(e) for e, w in samples if line.predict(e) > 0)
    return Fit(overhead, ratio, spread)


@dataclass(frozen=True)
class BatchState:
    """One batch of a round: the estimates of its runs not yet ended, in the order it runs
    them, and how long ago its last run ended (or the round began, if none has)."""
    pending: tuple[float, ...]
    since_last_end_s: float
    started_any: bool


def eta(batches: Sequence[BatchState], model: Fit | None) -> Eta | None:
    """The latest batch's end: its current run's predicted rest, then its pending runs."""
    if model is None:
        return None
    ends = [_batch_left(batch, model) for batch in batches if batch.pending]
    seconds = max(ends, default=0.0)
    low_q, high_q = _quantiles(model.spread)
    return Eta(seconds, seconds * low_q, seconds * high_q, len(model.spread))


def _batch_left(batch: BatchState, model: Fit) -> float:
    first, *rest = batch.pending
    boot = 0.0 if batch.started_any else BOOT_S
    current = max(boot + model.predict(first) - batch.since_last_end_s, 0.0)
    return current + sum(model.predict(e) for e in rest)


def _quantiles(spread: Sequence[float]) -> tuple[float, float]:
    """The 10th and 90th percentile of wall/predicted; from few runs, at least half and
    twice, since a handful of runs says little about the next."""
    if not spread:
        return 0.5, 2.0
    ordered = sorted(spread)
    low = ordered[math.floor(0.1 * (len(ordered) - 1))]
    high = ordered[math.ceil(0.9 * (len(ordered) - 1))]
    if len(ordered) < SURE_AFTER_RUNS:
        low, high = min(low, 0.5), max(high, 2.0)
    return min(low, 1.0), max(high, 1.0)


def prior(clock: str) -> Fit | None:
    """Before any run has ended: on the real clock the estimate itself, said to be rough; on
    the virtual clock nothing, rather than hours of kernel time shown as wall time."""
    return None if clock.startswith("virtual") else Fit(0.0, 1.0, ())


def describe(forecast: Eta | None) -> str:
    if forecast is None:
        return "ETA once runs have ended"
    if not forecast.runs:
        return f"ETA {duration(forecast.seconds)} (from the estimates, before any run ended)"
    sure = "rough: " if forecast.rough else ""
    return (f"ETA {duration(forecast.seconds)} ({sure}{duration(forecast.low_s)}-"
            f"{duration(forecast.high_s)}, from {forecast.runs} runs)")


def duration(seconds: float) -> str:
    seconds = max(0, int(seconds))
    hours, rest = divmod(seconds, 3600)
    return f"{hours}h{rest // 60:02d}m" if hours else f"{rest // 60}m{rest % 60:02d}s"
