"""Shared by every test folder: the repository importable, and a check at the end of the
session that no pinned-kernel process this test run started is still alive."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))
os.environ.setdefault("SETUPTOOLS_USE_DISTUTILS", "stdlib")


def stray_kernels(marker: str = f"umid=tb{os.getpid()}-") -> list[str]:
    """Command lines of User-Mode Linux processes started from this process."""
    out = subprocess.run(["ps", "-eo", "pid,args"], capture_output=True, text=True).stdout
    return [line.strip() for line in out.splitlines() if "linux.uml" in line and marker in line]


def pytest_sessionfinish(session, exitstatus):  # noqa: ARG001
    leftovers = stray_kernels()
    if leftovers:
        print("\nstray pinned-kernel processes after the test session:\n" + "\n".join(leftovers))
        session.exitstatus = 1
