"""The schedule's applier process, on this host's tc with a harmless command: it writes each
change at its instant, stops when its input closes, and says what it wrote and when."""
import json
import subprocess
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PYTHON = "/usr/bin/python3"


def test_changes_are_written_at_their_instants_until_the_input_closes():
    applier = subprocess.Popen([PYTHON, "-m", "topology.net.schedule_apply"],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, cwd=REPO)
    plan = [[0, 0.05, "qdisc show dev lo\n"], [1, 0.2, "qdisc show dev lo\n"],
            [2, 30.0, "qdisc show dev lo\n"]]
    applier.stdin.write(json.dumps(plan) + "\n")
    applier.stdin.flush()
    assert applier.stdout.readline().strip() == "ready"
    start = time.monotonic()
    applier.stdin.write(f"{start!r}\n")
    applier.stdin.flush()
    time.sleep(0.6)
    out, err = applier.communicate(timeout=30)
    said = json.loads(out.strip().splitlines()[-1])
    assert said["error"] == "" and said["tc_returncode"] == 0, (said, err)
    assert [index for index, _ in said["applied"]] == [0, 1]     # the third was not due
    for (_, applied_s), due in zip(said["applied"], (0.05, 0.2), strict=True):
        assert due <= applied_s < due + 0.1, said
    assert time.monotonic() - start < 5                          # it stopped when told


def test_a_change_tc_refuses_is_reported():
    applier = subprocess.run(
        [PYTHON, "-m", "topology.net.schedule_apply"], cwd=REPO, timeout=30,
        input=json.dumps([[0, 0.0, "qdisc frobnicate dev lo\n"]]) + f"\n{time.monotonic()!r}\n",
        capture_output=True, text=True)
    said = json.loads(applier.stdout.strip().splitlines()[-1])
    assert said["tc_returncode"] != 0 and said["error"], said
