"""The progress line's ETA: learned from the wall time runs took, not from their kernel-time
estimates, so that a virtual-clock round whose estimates add up to hours says minutes."""
from __future__ import annotations

import json
import os
import random
from types import SimpleNamespace

import pytest

from experiments.onhost import forecast
from experiments.onhost.coordinator import RoundWatch
from experiments.onhost.forecast import BatchState, Fit
from experiments.onhost.ledger import Ledger


def test_the_fit_recovers_a_fixed_cost_and_a_ratio():
    samples = [(e, 4.0 + 0.25 * e) for e in (10, 40, 90, 300)]
    model = forecast.fit(samples)
    assert model.overhead_s == pytest.approx(4.0)
    assert model.ratio == pytest.approx(0.25)
    assert model.spread == pytest.approx((1, 1, 1, 1))


def test_alike_estimates_give_the_mean_ratio():
    model = forecast.fit([(20.0, 5.0), (20.0, 7.0)])
    assert (model.overhead_s, model.ratio) == (0.0, pytest.approx(0.3))


def test_no_run_ended_on_the_virtual_clock_gives_no_number():
    states = [BatchState((3600.0 * 16,), 0.0, False)]
    assert forecast.eta(states, forecast.prior("virtual-wall-cpu")) is None
    assert forecast.describe(None) == "ETA once runs have ended"
    real = forecast.eta(states, forecast.prior("real"))
    assert real.seconds == pytest.approx(3600 * 16 + forecast.BOOT_S)
    assert "before any run ended" in forecast.describe(real)


def test_a_virtual_round_of_32_kernel_hours_is_forecast_in_wall_minutes():
    """Satellite points, virtual clock: each run's wall time is a fiftieth of its kernel-time
    estimate plus 3 s; two batches. After the first runs the ETA is the real rest, within 5%,
    and the truth is inside the range."""
    rng = random.Random(7)
    estimates = sorted((rng.uniform(1200, 3600) for _ in range(60)), reverse=True)
    assert sum(estimates) > 32 * 3600

    def wall(e: float) -> float:
        return (3.0 + e / 50) * rng.uniform(0.95, 1.05)

    batches: list[list[float]] = [[], []]
    for e in estimates:  # longest first onto the lighter batch, as the harness does
        min(batches, key=sum).append(e)
    walls = [[wall(e) for e in batch] for batch in batches]
    ended = 6
    samples = [(e, w) for batch, times in zip(batches, walls, strict=True)
               for e, w in zip(batch[:ended // 2], times[:ended // 2], strict=True)]
    states = [BatchState(tuple(batch[ended // 2:]), 0.0, True) for batch in batches]
    got = forecast.eta(states, forecast.fit(samples))
    truth = max(sum(times[ended // 2:]) for times in walls)
    assert got.seconds == pytest.approx(truth, rel=0.05)
    assert got.low_s <= truth <= got.high_s
    assert got.runs == ended and not got.rough
    assert got.seconds < 3600


def test_the_current_run_s_time_so_far_is_taken_off():
    model = Fit(2.0, 1.0, (1.0,) * 10)
    fresh = forecast.eta([BatchState((100.0, 50.0), 0.0, True)], model)
    later = forecast.eta([BatchState((100.0, 50.0), 40.0, True)], model)
    overdue = forecast.eta([BatchState((100.0, 50.0), 500.0, True)], model)
    assert fresh.seconds == pytest.approx(154.0)
    assert later.seconds == pytest.approx(114.0)
    assert overdue.seconds == pytest.approx(52.0)  # never less than the runs still queued


def test_the_last_batch_to_end_decides_and_a_new_batch_pays_its_boot():
    model = Fit(0.0, 1.0, (1.0,) * 10)
    states = [BatchState((10.0,), 0.0, True), BatchState((30.0,), 0.0, False),
              BatchState((), 5.0, True)]
    assert forecast.eta(states, model).seconds == pytest.approx(30.0 + forecast.BOOT_S)


def test_few_runs_give_a_wide_range_said_to_be_rough():
    model = forecast.fit([(10.0, 10.0), (20.0, 21.0)])
    got = forecast.eta([BatchState((100.0,), 0.0, True)], model)
    assert got.rough
    assert got.low_s <= 0.5 * got.seconds and got.high_s >= 2 * got.seconds
    assert "rough" in forecast.describe(got) and "from 2 runs" in forecast.describe(got)


def test_runs_that_took_no_time_teach_nothing():
    assert forecast.fit([(5.0, 0.0), (50.0, 0.0)]) is None


def test_the_round_learns_from_when_records_reached_the_disk_not_from_their_times(tmp_path):
    """On the virtual clock a record's own times are the kernel's: a run of 400 kernel seconds
    may take 4 s. The progress line must learn the 4 s."""
    ledger = Ledger(tmp_path / "exp")
    ledger.prepare()
    harness = SimpleNamespace(ledger=ledger, wall_samples=[],
                              intended_kernel=lambda: ("uml", "virtual-wall-cpu"))
    batch = [{"id": f"run{i}", "estimate_s": 400.0} for i in range(5)]
    watch = RoundWatch(harness, [batch])
    assert watch.status() == (0, 0, "ETA once runs have ended")
    for i in range(3):
        record = ledger.run_dir(f"run{i}") / "result.json"
        record.parent.mkdir(parents=True)
        record.write_text(json.dumps({"status": "ok", "started": 400.0 * i,
                                      "ended": 400.0 * (i + 1)}))
        written = watch.began + 10 + 4 * i
        os.utime(record, (written, written))
    done, failed, text = watch.status()
    assert (done, failed) == (3, 0)
    assert harness.wall_samples == [(400.0, pytest.approx(4.0)), (400.0, pytest.approx(4.0))]
    eta = forecast.eta([watch.batch_state(batch, watch.began + 18)], forecast.fit(
        harness.wall_samples))
    assert eta.seconds == pytest.approx(8.0)  # two runs of 4 s, the first just begun
    assert "from 2 runs" in text
