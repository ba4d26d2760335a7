"""What the container tests share: podman as CI has it (daemonless, runc, explicit limits; see
docker/README.md), and a clear failure, never a skip, where it is missing."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DOCKERFILE = REPO / "docker" / "Dockerfile"
# The limits the runtime must be given on hosts whose hard limits are below podman's defaults
# (here: "error setting rlimit type 7: operation not permitted" without them).
ULIMITS = ["--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1000:1000"]


def podman_command() -> list[str]:
    """podman with runc: crun refuses this kind of host's hybrid cgroups."""
    missing = [tool for tool in ("podman", "runc", "debootstrap") if shutil.which(tool) is None]
    if missing:
        pytest.fail(f"{', '.join(missing)} not installed: run `make setup-test`", pytrace=False)
    return ["podman", "--runtime", "runc"]


@pytest.fixture(scope="session")
def podman() -> list[str]:
    return podman_command()


def run(argv: list[str], timeout: float, **kwargs) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, **kwargs)
