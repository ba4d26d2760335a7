"""Speed-ups: the ratio of means, its interval from the two 90% intervals, and "not
significant" exactly when those intervals overlap."""
from __future__ import annotations

import csv
import math
from types import SimpleNamespace

import pytest

from analysis import results as results_module
from experiments.workloads.ftp_mget.report import speedup
from experiments.workloads.ftp_mget.report.points import FtpResults, Point, PointKey


def point(variant: str, mean: float, half: float) -> Point:
    return Point(PointKey("lan", 0.03, 10240, 2, variant,
                          "tcp-newreno" if variant.startswith("tcp") else "sctp"), 4, mean, 0.1,
                 half,
                 "tight")


def test_significant_when_intervals_do_not_overlap():
    s = speedup.SpeedUp("x", point("sctp-ms", 1.0, 0.1), point("sctp-naive", 2.0, 0.2))
    assert s.ratio == pytest.approx(2.0)
    assert s.low == pytest.approx(1.8 / 1.1) and s.high == pytest.approx(2.2 / 0.9)
    assert s.significant and s.verdict == "faster"
    assert "not significant" not in speedup.format_ratio(s)


def test_overlapping_intervals_are_not_significant():
    s = speedup.SpeedUp("x", point("sctp-ms", 1.0, 0.3), point("sctp-naive", 1.2, 0.3))
    assert s.low < 1 < s.high
    assert not s.significant and s.verdict == "not significant"
    assert speedup.format_ratio(s).endswith("not significant")


def test_slower_and_unbounded():
    s = speedup.SpeedUp("x", point("sctp-naive", 3.0, 0.1), point("tcp", 1.0, 0.1))
    assert s.verdict == "slower"
    wide = speedup.SpeedUp("x", point("sctp-ms", 1.0, 1.5), point("sctp-naive", 2.0, 0.1))
    assert math.isinf(wide.high) and not wide.significant


def test_tables_from_the_result_set(tiny_results):
    rs = FtpResults(results_module.load(tiny_results))
    items = speedup.speedups(rs)
    names = {s.comparison for s in items}
    assert names == {"sctp-ms over sctp-naive", "sctp-ms-cp over sctp-ms",
                     "sctp-naive over tcp (tcp-newreno)"}
    assert len(items) == 3 * 2                      # three comparisons x two loss ratios
    with (tiny_results / "summary.csv").open() as handle:
        means = {(r["variant"], float(r["loss"])): float(r["mean_s"])
                 for r in csv.DictReader(handle)}
    for s in items:
        key = s.variant.key
        assert s.ratio == pytest.approx(means[(s.baseline.key.variant, key.loss)] /
                                        means[(key.variant, key.loss)])
        assert s.low <= s.ratio <= s.high
        row = s.row()
        assert set(row) == set(speedup.COLUMNS)


def test_tcp_pipelined_rows_compare_under_one_tcp_profile():
    """tcp-pipelined against tcp only under the same TCP profile; sctp-ms-cp against each
    profile's tcp-pipelined."""
    def at(variant: str, profile: str, mean: float) -> Point:
        return Point(PointKey("lan", 0.0, 10240, 2, variant, profile), 4, mean, 0.1, 0.05,
                     "tight")
    points = [at("tcp", "tcp-newreno", 4.0), at("tcp", "tcp-linux", 3.0),
              at("tcp-pipelined", "tcp-newreno", 2.0), at("tcp-pipelined", "tcp-linux", 1.5),
              at("sctp-ms-cp", "sctp", 1.0)]
    results = SimpleNamespace(points=points, paths=["lan"])
    found = {s.comparison: s.ratio for s in speedup.speedups(results)}
    assert found == {"tcp-pipelined over tcp (tcp-newreno)": pytest.approx(2.0),
                     "tcp-pipelined over tcp (tcp-linux)": pytest.approx(2.0),
                     "sctp-ms-cp over tcp-pipelined (tcp-newreno)": pytest.approx(2.0),
                     "sctp-ms-cp over tcp-pipelined (tcp-linux)": pytest.approx(1.5)}
