"""The one rule per kind of claim, on hand-made samples: each verdict of each kind."""
from __future__ import annotations

import pytest

from analysis.scorecard import rules

FAST = [10.0, 10.5, 9.5, 10.2, 9.8]          # mean 10
SLOW = [20.0, 21.0, 19.0, 20.4, 19.6]        # mean 20
NOISY = [5.0, 30.0, 12.0, 22.0, 6.0]         # mean 15, wide
NEAR_FAST = [10.1, 10.4, 9.6, 10.3, 9.9]     # mean 10.06


@pytest.mark.parametrize(("a", "b", "expect", "verdict"), [
    (FAST, SLOW, "less", rules.REPRODUCED),
    (SLOW, FAST, "less", rules.DIVERGES),
    (NOISY, SLOW, "less", rules.INCONCLUSIVE),
    (FAST[:1], SLOW, "less", rules.INCONCLUSIVE),
])
def test_direction(a, b, expect, verdict):
    assert rules.direction(a, b, expect).verdict == verdict


def test_direction_reports_the_ratio_with_its_interval():
    judged = rules.direction(FAST, SLOW, "less")
    assert judged.estimate.value == pytest.approx(0.5)
    assert judged.estimate.low < 0.5 < judged.estimate.high < 0.6


@pytest.mark.parametrize(("published", "about", "verdict"), [
    ((0.5, 0.5), False, rules.REPRODUCED),        # inside the interval
    ((0.58, 0.58), True, rules.REPRODUCED),       # outside it, within 20% of ours
    ((0.25, 0.25), False, rules.DIRECTION_ONLY),  # faster, by another factor
    ((2.0, 2.0), False, rules.DIVERGES),          # published slower, ours faster
    ((0.45, 0.55), False, rules.REPRODUCED),      # a range overlapping ours
])
def test_ratio(published, about, verdict):
    assert rules.ratio_claim(FAST, SLOW, published, about).verdict == verdict


def test_ratio_without_a_significant_difference_is_inconclusive():
    assert rules.ratio_claim(NOISY, SLOW, (0.25, 0.25), False).verdict == rules.INCONCLUSIVE


def test_difference_against_the_published_seconds():
    assert rules.difference_claim(SLOW, FAST, (10.0, 10.0), False).verdict == rules.REPRODUCED
    assert rules.difference_claim(SLOW, FAST, (350.0, 350.0), True).verdict \
        == rules.DIRECTION_ONLY
    assert rules.difference_claim(FAST, SLOW, (350.0, 350.0), True).verdict == rules.DIVERGES


def test_same():
    assert rules.same(FAST, NEAR_FAST).verdict == rules.REPRODUCED
    assert rules.same(FAST, SLOW).verdict == rules.DIVERGES
    assert rules.same(NOISY, FAST).verdict == rules.INCONCLUSIVE


def test_value_with_and_without_its_sign():
    gains = [22.0, 25.0, 24.0, 23.5]
    assert rules.value(gains, (23.9, 23.9), False, True).verdict == rules.REPRODUCED
    assert rules.value(gains, (40.0, 40.0), False, True).verdict == rules.DIRECTION_ONLY
    assert rules.value([-5.0, -6.0, -4.0], (23.9, 23.9), False, True).verdict \
        == rules.DIVERGES
    assert rules.value([0.90, 0.91, 0.92], (0.988, 0.988), False, False).verdict \
        == rules.DIVERGES


def test_bound():
    assert rules.bound([0.60, 0.62, 0.61], (0.9, 0.9), "less").verdict == rules.REPRODUCED
    assert rules.bound([0.60, 0.62, 0.61], (0.9, 0.9), "greater").verdict == rules.DIVERGES
    assert rules.bound([0.5, 1.3, 0.9], (0.9, 0.9), "greater").verdict == rules.INCONCLUSIVE


def test_premise():
    assert rules.premise([0, 0, 0]).verdict == rules.REPRODUCED
    judged = rules.premise([0, 3, 0])
    assert judged.verdict == rules.DIVERGES and "1 of 3" in judged.why


@pytest.mark.parametrize(("a", "b", "verdict", "share"), [
    ((3, 3), (0, 3), rules.REPRODUCED, 1.0),
    ((2, 3), (0, 3), rules.DIRECTION_ONLY, 2 / 3),
    ((3, 3), (3, 3), rules.DIVERGES, 0.0),
    ((0, 3), (3, 3), rules.DIVERGES, -1.0),
    ((1, 1), (0, 3), rules.NOT_MEASURED, None),
])
def test_survives(a, b, verdict, share):
    judged = rules.survives(a, b)
    assert judged.verdict == verdict
    assert (judged.estimate.value if judged.estimate else None) == \
        (pytest.approx(share) if share is not None else None)


def test_trend():
    growing = [(FAST, [11.0, 11.5, 10.5]), (FAST, [19.0, 21.0, 20.0])]   # 0.9 then 0.5
    assert rules.trend(growing, "less").verdict == rules.REPRODUCED
    assert rules.trend(list(reversed(growing)), "less").verdict == rules.DIVERGES
    flat = [(FAST, SLOW), (NEAR_FAST, SLOW)]
    assert rules.trend(flat, "less").verdict == rules.INCONCLUSIVE


def test_optimum():
    times = [[30.0, 31.0], [20.0, 20.5], [15.0, 15.2], [18.0, 18.4]]
    assert rules.optimum(times).verdict == rules.REPRODUCED
    assert rules.optimum([[30.0, 31.0], [20.0, 20.5], [15.0, 15.2]]).verdict == rules.DIVERGES


def test_a_deterministic_clock_gives_exact_estimates():
    judged = rules.direction([4.0, 4.0], [5.0, 5.0], "less")
    assert judged.verdict == rules.REPRODUCED
    assert judged.estimate.low == judged.estimate.high == pytest.approx(0.8)
    assert rules.same([4.0, 4.0], [4.0, 4.0]).verdict == rules.REPRODUCED


@pytest.mark.parametrize(("verdicts", "combined"), [
    ([rules.REPRODUCED, rules.REPRODUCED], rules.REPRODUCED),
    ([rules.REPRODUCED, rules.DIRECTION_ONLY], rules.DIRECTION_ONLY),
    ([rules.REPRODUCED, rules.DIVERGES, rules.INCONCLUSIVE], rules.DIVERGES),
    ([rules.REPRODUCED, rules.INCONCLUSIVE], rules.INCONCLUSIVE),
    ([rules.REPRODUCED, rules.NOT_MEASURED], rules.REPRODUCED),
    ([rules.NOT_MEASURED], rules.NOT_MEASURED),
])
def test_a_claim_over_several_points(verdicts, combined):
    assert rules.combine(verdicts) == combined
