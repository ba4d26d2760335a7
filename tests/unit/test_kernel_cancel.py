"""A process that runs kernels and is cancelled with SIGTERM (a Slurm task) takes them with it:
they run in sessions of their own, and Python's default SIGTERM ends it without its cleanup."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

CHILD = """
import subprocess, sys
from topology.kernel import uml
uml.exit_on_sigterm()
kernel = subprocess.Popen(["sleep", "300"], start_new_session=True)  # stands in for a kernel
uml._running.add(kernel)
print(kernel.pid, flush=True)
kernel.wait()
"""


def test_sigterm_kills_the_kernels_and_exits_143():
    child = subprocess.Popen([sys.executable, "-c", CHILD], stdout=subprocess.PIPE, text=True,
                             cwd=os.path.dirname(os.path.dirname(os.path.dirname(__file__))))
    kernel = int(child.stdout.readline())
    child.send_signal(signal.SIGTERM)
    assert child.wait(timeout=10) == 128 + signal.SIGTERM
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and _alive(kernel):
        time.sleep(0.05)
    assert not _alive(kernel)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(")")[1].split()[0] != "Z"
    except FileNotFoundError:
        return False
