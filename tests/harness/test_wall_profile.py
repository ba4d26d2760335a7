"""The smoke experiment's wall-time profile (experiments/onhost/wall_profile.py): the host's
stamps on each batch's steps agree with the kernel's own clock where both are real time,
every core-second of every round is put down to a phase, and `testbed profile` prints it."""
from __future__ import annotations

import json
import statistics
from collections import defaultdict
from pathlib import Path

import pytest

from experiments.onhost import wall_profile
from tests.harness.conftest import harness

STAMP_SLACK_S = 0.1   # two polls of the marks file, and a loaded machine's scheduling


def walls(smoke: Path) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted((smoke / ".work").glob("*.wall.json"))]


def records(smoke: Path) -> dict[str, dict]:
    return {p.parent.name: json.loads(p.read_text())
            for p in (smoke / "runs").glob("*/result.json")}


def test_stamped_phases_agree_with_the_kernel_s_own_clock(smoke):
    """On the real clock the kernel's monotonic clock and the host's run at one rate: each
    run's phases, stamped on the host as the kernel reported them, are the ones the kernel
    measured itself. A stamp is late by the host's poll and its scheduling, which on a loaded
    machine now and then exceeds the slack; a step put down to the wrong phase is wrong in
    every run, so each step's median over the runs is held to the slack."""
    runs = records(smoke)
    errors: dict[str, list[float]] = defaultdict(list)
    for wall in walls(smoke):
        assert wall["clock"] == "real"
        marks = wall["marks"]
        for (before, _, _), (at, step, run) in zip(marks, marks[1:], strict=False):
            own = runs.get(run, {}).get("phases_s", {}).get(step)
            if own is None or step == "links_and_sysctls":   # the first follows the record
                continue
            errors[step].append(at - before - own)
    assert sum(map(len, errors.values())) >= 4 * len(runs)
    for step, errs in errors.items():
        worst = max(errs, key=abs)
        assert abs(statistics.median(errs)) <= STAMP_SLACK_S, (step, worst, len(errs))


def test_the_boot_is_the_backend_s_launch_to_job_and_a_bit_of_python(smoke):
    """A batch in a kernel of its own waits for its boot; one in a kernel kept from an earlier
    round (real time, kernel_session.py) only for that kernel to see it."""
    kept = 0
    for wall in walls(smoke):
        boot = wall["marks"][0][0] - wall["launched"]
        assert wall["marks"][0][1] == "started"
        if "launch_to_job" in wall["backend_timings_s"]:
            launch_to_job = wall["backend_timings_s"]["launch_to_job"]
            assert launch_to_job <= boot <= launch_to_job + 5, (boot, launch_to_job)
        elif boot < 0.5:
            kept += 1
        else:
            assert boot < 30, boot   # the first batch of a kept kernel: its boot
    assert kept > 0   # the smoke's second round ran in its first round's kernels


def test_every_core_second_is_put_down_to_a_phase(smoke):
    profile = wall_profile.profile(smoke / ".work")
    assert profile.runs == len(records(smoke))
    assert sum(profile.phases.values()) == pytest.approx(profile.core_s, rel=1e-6)
    assert min(profile.phases.values()) >= 0
    # the transfers are the clients' sessions, as the kernel timed them
    sessions = sum(r["client_wall_s"] for r in records(smoke).values() if "client_wall_s" in r)
    assert profile.phases["transfer"] == pytest.approx(sessions, abs=STAMP_SLACK_S * profile.runs)
    assert profile.phases["boot"] > 0 and profile.phases["analysis"] > 0
    assert 0 < profile.harness_share < 1


def test_the_profile_command_prints_the_table_and_writes_it(smoke):
    shown = harness("profile", "smoke", "--results", str(smoke.parent), timeout=120)
    assert shown.returncode == 0, shown.stderr
    for phase in wall_profile.PHASES:
        assert any(line.startswith(phase) for line in shown.stdout.splitlines()), phase
    written = json.loads((smoke / wall_profile.PROFILE).read_text())
    assert written["runs"] == len(records(smoke))
    assert "harness share" in shown.stdout
