"""The virtual-time tests need the time-travel kernel: the session builds it first through the
cached build (`make kernel`; about 5 minutes once, then nothing), rather than skipping. The
wall-cpu clock's wake-up latency calibration (about 70 s once per machine) follows, before any
test loads the machine."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from topology.kernel import wake_latency
from topology.kernel.uml_virtual import calibrated_wake_table

BUILD = Path(__file__).resolve().parents[2] / "topology" / "kernel" / "timetravel" / "build.sh"


@pytest.fixture(scope="session", autouse=True)
def virtual_kernel() -> Path:
    build = subprocess.run(["bash", str(BUILD)], capture_output=True, text=True, timeout=3600)
    assert build.returncode == 0, f"the time-travel kernel did not build:\n{build.stderr[-3000:]}"
    binary = Path(build.stdout.strip().splitlines()[-1])
    if os.environ.get(wake_latency.ENV, "auto") == "auto":
        calibrated_wake_table(binary)
    return binary
