"""Speed-ups with confidence: how much faster one variant is than another at the same path,
loss and file size, as the ratio of their mean transfer times.

Method (also in README.md). Speed-up of A over B = mean_B / mean_A (above 1: A is faster).
Each mean has a 90% Student-t interval [m - h, m + h] (summary.csv's ci90_half_s). The ratio's
interval is the range of ratios the two intervals allow:

    low  = max(0, mean_B - h_B) / (mean_A + h_A)      high = (mean_B + h_B) / (mean_A - h_A)

(a time is never negative; high is unbounded when mean_A - h_A <= 0). The speed-up is
significant when that interval excludes 1, which is the same as the two points' 90% intervals
not overlapping; otherwise it is shown as "not significant". Conservative: non-overlapping 90%
intervals imply a difference at a
level well above 90%, overlapping ones do not prove there is none."""
from __future__ import annotations

import math
from dataclasses import dataclass

from analysis.results import FINISHED
from experiments.workloads.base import KERNEL_SCTP
from experiments.workloads.ftp_mget.report.points import (
    FtpResults,
    Point,
    PointKey,
    series_label,
    size_label,
)
from experiments.workloads.ftp_mget.workload import TCP_VARIANTS

# (faster candidate, baseline): the speed-up of the first over the second. The last two are
# the multistreaming study's argument measured: pipelining on one TCP data connection against
# classic FTP, and SCTP's streams against that.
COMPARISONS: tuple[tuple[str, str], ...] = (
    ("sctp-ms", "sctp-naive"),
    ("sctp-ms-cp", "sctp-ms"),
    ("sctp-naive", "tcp"),
    ("tcp-pipelined", "tcp"),
    ("sctp-ms-cp", "tcp-pipelined"),
)
COLUMNS = ["comparison", "path", "file_size", "files", "loss", "variant", "baseline",
           "baseline_profile", "mean_variant_s", "ci90_half_variant_s", "mean_baseline_s",
           "ci90_half_baseline_s", "speedup", "speedup_low", "speedup_high", "significant",
           "verdict", "complete"]


@dataclass(frozen=True)
class SpeedUp:
    comparison: str
    variant: Point
    baseline: Point

    @property
    def ratio(self) -> float:
        return self.baseline.mean_s / self.variant.mean_s if self.variant.mean_s > 0 else math.nan

    @property
    def low(self) -> float:
        den = self.variant.ci90_high
        return max(0.0, self.baseline.ci90_low) / den if den > 0 else math.nan

    @property
    def high(self) -> float:
        den = self.variant.ci90_low
        return self.baseline.ci90_high / den if den > 0 else math.inf

    @property
    def significant(self) -> bool:
        """The ratio interval excludes 1 (the two 90% intervals do not overlap)."""
        return (math.isfinite(self.variant.ci90_half_s) and math.isfinite(self.baseline.ci90_half_s)
                and (self.low > 1 or self.high < 1))

    @property
    def complete(self) -> bool:
        return self.variant.status in FINISHED and self.baseline.status in FINISHED

    @property
    def verdict(self) -> str:
        if not math.isfinite(self.ratio):
            return "no data"
        if not self.significant:
            return "not significant"
        return "faster" if self.ratio > 1 else "slower"

    def row(self) -> dict[str, object]:
        key = self.variant.key
        return {"comparison": self.comparison, "path": key.path, "file_size": key.file_size,
                "files": key.files, "loss": key.loss, "variant": key.variant,
                "baseline": self.baseline.key.variant,
                "baseline_profile": self.baseline.key.profile,
                "mean_variant_s": self.variant.mean_s,
                "ci90_half_variant_s": self.variant.ci90_half_s,
                "mean_baseline_s": self.baseline.mean_s,
                "ci90_half_baseline_s": self.baseline.ci90_half_s, "speedup": self.ratio,
                "speedup_low": self.low, "speedup_high": self.high,
                "significant": self.significant, "verdict": self.verdict,
                "complete": self.complete}


def comparison_name(variant: str, baseline: str, baseline_profile: str = "",
                    stack: str = "", sctp_stack: str = "") -> str:
    base = series_label(baseline, baseline_profile) if baseline_profile else baseline
    on = f" on {sctp_stack}" if sctp_stack and sctp_stack != KERNEL_SCTP else ""
    return f"{variant} over {base}{on}" + (f" [{stack}]" if stack else "")


def speedups(results: FtpResults) -> list[SpeedUp]:
    """Every comparison the result set allows, ordered by comparison, path, size, loss."""
    usable = {p.key: p for p in results.points if p.usable}
    out: list[SpeedUp] = []
    for candidate, baseline in COMPARISONS:
        for key, point in usable.items():
            if key.variant != candidate:
                continue
            for other_key, other in usable.items():
                if (other_key.variant == baseline and _same_cell(key, other_key)
                        and _same_tcp_profile(key, other_key)
                        and _same_sctp_stack(key, other_key)):
                    name = comparison_name(candidate, baseline,
                                           other_key.profile if baseline in TCP_VARIANTS
                                           else "", key.stack, key.sctp_stack)
                    out.append(SpeedUp(name, point, other))
    paths = results.paths
    order = {name: i for i, name in enumerate(_comparison_order(results))}
    out.sort(key=lambda s: (order.get(s.comparison, 99), paths.index(s.variant.key.path)
                            if s.variant.key.path in paths else 99,
                            s.variant.key.file_size, s.variant.key.loss))
    return out


def _same_tcp_profile(a: PointKey, b: PointKey) -> bool:
    """Two TCP variants compare under one TCP profile; an SCTP variant against any."""
    return not (a.variant in TCP_VARIANTS and b.variant in TCP_VARIANTS) or a.profile == b.profile


def _same_sctp_stack(a: PointKey, b: PointKey) -> bool:
    """Two SCTP variants compare on one SCTP stack; a TCP variant against any."""
    return a.variant in TCP_VARIANTS or b.variant in TCP_VARIANTS or a.sctp_stack == b.sctp_stack


def _comparison_order(results: FtpResults) -> list[str]:
    names = []
    sctp_stacks = sorted({p.key.sctp_stack for p in results.points},
                         key=lambda s: (s not in ("", KERNEL_SCTP), s))
    for stack in sorted({p.key.stack for p in results.points}):
        for sctp_stack in sctp_stacks:
            for candidate, baseline in COMPARISONS:
                if baseline in TCP_VARIANTS:
                    profiles = sorted({p.key.profile for p in results.points
                                       if p.key.variant == baseline})
                    names += [comparison_name(candidate, baseline, prof, stack, sctp_stack)
                              for prof in profiles]
                else:
                    names.append(comparison_name(candidate, baseline, stack=stack,
                                                 sctp_stack=sctp_stack))
    return list(dict.fromkeys(names))


def _same_cell(a: PointKey, b: PointKey) -> bool:
    return ((a.path, a.loss, a.file_size, a.files, a.stack)
            == (b.path, b.loss, b.file_size, b.files, b.stack))


def format_ratio(s: SpeedUp) -> str:
    """'1.42 [1.10, 1.80]' or '1.05 [0.80, 1.40] not significant'."""
    high = "inf" if not math.isfinite(s.high) else f"{s.high:.2f}"
    text = f"{s.ratio:.2f} [{s.low:.2f}, {high}]"
    return text if s.significant else text + " not significant"


def describe_cell(key: PointKey) -> str:
    return f"{key.path} {key.files} x {size_label(key.file_size)} loss {key.loss:g}"
