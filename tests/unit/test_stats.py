"""The repetition statistics against values worked out by hand."""
import math

import pytest

from experiments import stats


def test_student_t_interval():
    ci = stats.interval([10.0, 12.0, 11.0, 13.0, 9.0], 0.90)
    # mean 11, sd sqrt(2.5); t(0.95, 4) = 2.1318
    assert ci.mean == pytest.approx(11.0)
    assert ci.sd == pytest.approx(math.sqrt(2.5))
    assert ci.half_width == pytest.approx(2.1318 * math.sqrt(2.5) / math.sqrt(5), rel=1e-4)


def test_a_single_run_has_no_interval():
    assert math.isinf(stats.interval([3.0]).half_width)


def test_more_runs_until_tight_or_capped():
    assert stats.runs_still_needed([], 0.9, 0.05, 3, 10) == 3
    assert stats.runs_still_needed([1.0, 1.0, 1.0], 0.9, 0.05, 3, 10) == 0   # tight
    noisy = [1.0, 2.0, 3.0]
    assert 1 <= stats.runs_still_needed(noisy, 0.9, 0.05, 3, 10) <= 3       # at most doubles
    assert stats.runs_still_needed(noisy * 4, 0.9, 0.05, 3, 12) == 0        # capped
