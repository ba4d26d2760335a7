"""The harness and its kernels killed with SIGKILL at random instants of a small experiment in
virtual time, resumed after each kill (experiments/benchmarks/kill_campaign.py, small: 8 kills
over 12 runs): every run ends finished and whole or redone, none lost or counted twice, each
point's n what a clean run gives; no resume refused by the lock, no kernel left behind. The
figures are printed and written to a JSON file. `testbed bench kill-campaign` runs the big
one over the smoke experiment."""
from __future__ import annotations

import json

import pytest

from experiments.benchmarks import kill_campaign
from tests.conftest import stray_kernels

pytestmark = pytest.mark.slow

KILLS = 8
SMALL = """
name = "killtiny"
[network]
queue = "500KB"
[[network.paths]]
name = "lan"
rate = "3Mbit"
delay = "1ms"
[matrix]
loss = [0.0, 0.03]
file_sizes = ["10K", "200K"]
files = 3
variants = ["tcp"]
[repetitions]
min = 3
max = 3
[run]
timeout_s = 120
"""


def test_kills_at_random_instants_lose_no_run(tmp_path):
    tally = kill_campaign.campaign(tmp_path, SMALL, "killtiny", 3, minutes=8,
                                   kills_per_pass=KILLS, max_kills=KILLS, delays=(1.5, 6.0),
                                   seed=7)
    figures = kill_campaign.figures(tally, 12)
    (tmp_path / "kill-campaign.json").write_text(json.dumps(figures, indent=2))
    print(f"kills {tally.kills} ({tally.kills_coordinator} coordinator, {tally.kills_kernel} "
          f"kernel), runs redone {tally.runs_redone}, runs lost {tally.runs_lost}, kernels left "
          f"by a killed harness stopped {tally.left_kernels_stopped}, wall {tally.wall_s:.0f} s")
    assert tally.kills == KILLS, figures
    assert tally.runs_lost == 0, tally.problems
    assert tally.refused_resumes == 0, tally.problems
    assert tally.kernels_left_at_end == 0 and tally.locks_held_at_end == 0, tally.problems
    assert tally.runs_finished >= 12 * tally.passes
    assert kill_campaign.clean(tally)
    for log in (tmp_path / "logs").glob("*.err"):
        assert "Traceback" not in log.read_text(), log.read_text()[-2000:]
    assert stray_kernels() == []   # none of this test's kernels (they carry its owner) runs on
