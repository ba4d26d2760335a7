"""The benchmark's comparison of clocks: intervals built from batch means carry the shift
between batches that run-level intervals hide, and a deterministic clock's batches give a
zero-width interval that overlaps only if real time's interval holds its value."""
from __future__ import annotations

import pytest

from experiments.benchmarks.virtual_clock import batch_summary, compare_point
from experiments.stats import anova_p as batch_effect_p

# two real-time batches shifted by 30 ms, each tight within itself (as measured at loss 0)
REAL = [[1.499, 1.500, 1.501], [1.529, 1.530, 1.531], [1.512, 1.514, 1.516]]


def test_batch_interval_is_wider_than_run_interval_when_batches_shift():
    summary = batch_summary(REAL, 0.90)
    assert summary["n_runs"] == 9 and summary["n_batches"] == 3
    assert summary["mean"] == pytest.approx((1.500 + 1.530 + 1.514) / 3)
    by_batch = summary["ci"][1] - summary["ci"][0]
    by_run = summary["ci_runs"][1] - summary["ci_runs"][0]
    assert by_batch > 2 * by_run
    # separately, each batch's own interval excludes the others' means
    first, second = batch_summary([REAL[0]], 0.90), batch_summary([REAL[1]], 0.90)
    assert first["ci"] is None  # one batch: no interval from batch means
    assert first["ci_runs"][1] < second["ci_runs"][0]


def test_batch_effect_is_detected_only_when_batches_differ():
    assert batch_effect_p(REAL) < 0.001
    same = [[1.50, 1.52, 1.51], [1.51, 1.50, 1.52], [1.52, 1.51, 1.50]]
    assert batch_effect_p(same) > 0.5
    assert batch_effect_p([[2.0, 2.0], [2.0, 2.0]]) is None  # deterministic: nothing to test


def test_deterministic_clock_overlaps_only_if_real_interval_holds_it():
    point = {"path": "lan", "loss": 0.0, "variant": "tcp", "point": "p"}
    inside = [[1.51, 1.51], [1.51, 1.51], [1.51, 1.51]]
    outside = [[1.40, 1.40], [1.40, 1.40], [1.40, 1.40]]
    row = compare_point({"real": REAL, "virtual": inside, "inf-cpu": outside},
                        {"real": 0, "virtual": 0, "inf-cpu": 0}, point, 0.90)
    assert row["virtual"]["ci_overlap"] is True
    assert row["inf-cpu"]["ci_overlap"] is False
    assert row["inf-cpu_s"]["ci"] == [pytest.approx(1.40), pytest.approx(1.40)]
    assert row["inf-cpu"]["difference_pct"] == pytest.approx(
        100 * (1.40 - row["real_s"]["mean"]) / row["real_s"]["mean"])


def test_a_clock_without_samples_never_counts_as_overlapping():
    point = {"path": "lan", "loss": 0.1, "variant": "tcp", "point": "p"}
    row = compare_point({"real": REAL, "virtual": [[], [], []], "inf-cpu": [[1.5], [], []]},
                        {"real": 0, "virtual": 3, "inf-cpu": 2}, point, 0.90)
    assert row["virtual_s"]["mean"] is None and row["virtual"]["ci_overlap"] is False
    assert row["inf-cpu_s"]["ci"] is None and row["inf-cpu"]["ci_overlap"] is False
