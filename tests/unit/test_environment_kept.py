"""Importing the queue-counter reader leaves the environment that programs started afterwards
inherit as it was. pyroute2's import starts GNU readline, which (TERM set, no terminal) writes
COLUMNS=80 and LINES=24 into it: in a full test session that made `ps` cut the kernels'
command lines at 80 columns, so running kernels looked absent."""
from __future__ import annotations

import os
import subprocess
import sys

from tests.conftest import REPO

SHOW = ("import subprocess; print(subprocess.run(['sh', '-c', 'echo ${COLUMNS-unset} "
        "${LINES-unset}'], capture_output=True, text=True).stdout.strip())")


def inherited_after(statement: str) -> str:
    """COLUMNS and LINES as a program started after `statement` sees them."""
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    env["TERM"] = "xterm"
    done = subprocess.run([sys.executable, "-c", f"{statement}; {SHOW}"], cwd=REPO, env=env,
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.strip()


def test_pyroute2_alone_changes_what_children_inherit():
    """The premise: if this fails, pyroute2 no longer starts readline and the guard can go."""
    assert inherited_after("import pyroute2") == "80 24"


def test_the_queue_counter_reader_leaves_it_as_it_was():
    assert inherited_after("import topology.net.qdisc_stats") == "unset unset"
    assert inherited_after("import topology.net.qdisc_stats; import readline") == "80 24"
