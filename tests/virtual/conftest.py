"""The virtual-time tests need the time-travel kernel: the session builds it first through the
cached build (`make kernel`; about 5 minutes once, then nothing), rather than skipping."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

BUILD = Path(__file__).resolve().parents[2] / "topology" / "kernel" / "timetravel" / "build.sh"


@pytest.fixture(scope="session", autouse=True)
def virtual_kernel() -> Path:
    build = subprocess.run(["bash", str(BUILD)], capture_output=True, text=True, timeout=3600)
    assert build.returncode == 0, f"the time-travel kernel did not build:\n{build.stderr[-3000:]}"
    return Path(build.stdout.strip().splitlines()[-1])
