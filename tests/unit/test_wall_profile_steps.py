"""The wall-time profile's accounting of the coordinator's own steps (wall_profile.profile): a
round is its workers' core-seconds, analysis counts once on the wall clock, and halting the
kernels kept across rounds counts for each of them."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from experiments.onhost import stamps, wall_profile


def write_steps(work: Path, steps: list[tuple[str, float, float]], workers: int = 2) -> None:
    for step, started, ended in steps:
        stamps.coordinator_step(work, "host", step, started, ended, workers)


def write_batch(work: Path, name: str, launched: float, marks: list[tuple[float, str]],
                ended: float) -> None:
    (work / f"{name}.wall.json").write_text(json.dumps({
        "launched": launched, "ended": ended, "clock": "real", "backend_timings_s": {},
        "marks": [[at, step, "r1" if step not in ("started", "metadata") else ""]
                  for at, step in marks]}))


def test_kernels_stop_is_shutdown_for_every_worker(tmp_path):
    write_steps(tmp_path, [("analysis", 0.0, 1.0), ("round 1", 1.0, 11.0),
                           ("tables", 11.0, 11.5), (wall_profile.KERNELS_STOP, 11.5, 12.5)])
    write_batch(tmp_path, "host-round-1-worker1-1", 1.0,
                [(4.0, "started"), (4.2, "metadata"), (6.0, "topology"), (6.5, "link_checks"),
                 (6.7, "links_and_sysctls"), (6.9, "server_and_capture_start"),
                 (9.9, "client"), (10.0, "verify"), (10.1, "stop"), (10.2, "record"),
                 (10.3, "last_run"), (10.35, "ended")], 10.4)
    result = wall_profile.profile(tmp_path)
    assert result.phases["shutdown"] == pytest.approx(2 * 1.0 + 0.05)
    assert result.phases["idle"] == pytest.approx(2 * 10.0 - 9.4)
    assert result.phases["analysis"] == pytest.approx(1.5)
    assert result.phases["transfer"] == pytest.approx(3.0)
    assert result.core_s == pytest.approx(2 * 10.0 + 1.5 + 2 * 1.0)
    assert sum(result.phases.values()) == pytest.approx(result.core_s)
    assert result.runs == 1


def test_a_round_without_kept_kernels_has_no_kernels_stop(tmp_path):
    write_steps(tmp_path, [("round 1", 0.0, 5.0)], workers=1)
    write_batch(tmp_path, "host-round-1-worker1-1", 0.0,
                [(2.0, "started"), (2.1, "metadata"), (4.0, "client"), (4.1, "record"),
                 (4.5, "ended")], 5.0)
    result = wall_profile.profile(tmp_path)
    assert result.phases["shutdown"] == pytest.approx(0.5)
    assert result.phases["boot"] == pytest.approx(2.0)
    assert sum(result.phases.values()) == pytest.approx(result.core_s) == pytest.approx(5.0)


def test_a_step_cut_short_spoils_no_other(tmp_path):
    """A line left unfinished (its disk was full, its harness killed) is skipped, and the next
    step starts a line of its own."""
    write_steps(tmp_path, [("analysis", 0.0, 1.0)])
    with (tmp_path / stamps.COORDINATOR).open("a") as out:
        out.write('{"host": "host", "step": "round 1", "sta')
    write_steps(tmp_path, [("tables", 2.0, 3.0)])
    assert [step["step"] for step in wall_profile.read_steps(tmp_path)] == ["analysis", "tables"]
