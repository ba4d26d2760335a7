"""What every kernel backend offers: run a command on a kernel and bring back what it did."""
from __future__ import annotations

import os
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

REPO_ROOT = Path(__file__).resolve().parents[2]


def default_results_root() -> Path:
    """results/ of the checkout the testbed runs from; for an installed testbed (no checkout
    around it), results/ in the working directory."""
    if (REPO_ROOT / "ftp-impl").is_dir():
        return REPO_ROOT / "results"
    return Path.cwd() / "results"


REAL_CLOCK = "real"


class BackendError(RuntimeError):
    """The kernel backend could not run the job; the message says what to do."""


def clock_label(time_travel: str | None) -> str:
    """How a result names its clock: "real", or "virtual (time-travel=MODE)" for a User-Mode
    Linux booted with time-travel, whose clock skips the time when every program waits."""
    if time_travel is None:
        return REAL_CLOCK
    return f"virtual (time-travel={time_travel})" if time_travel else "virtual (time-travel)"


@dataclass
class RunResult:
    """The outcome of one job on one kernel."""

    backend: str
    kernel_release: str
    returncode: int
    stdout: str
    stderr: str
    timings_s: dict[str, float] = field(default_factory=dict)
    clock: str = REAL_CLOCK  # see clock_label

    def check(self) -> RunResult:
        if self.returncode != 0:
            tail = "\n".join(self.stderr.strip().splitlines()[-20:])
            raise BackendError(
                f"job failed on the {self.backend} backend (exit {self.returncode}):\n{tail}")
        return self


class KernelBackend(Protocol):
    name: str

    def run(self, argv: Sequence[str], *, cwd: Path | None = None,
            env: Mapping[str, str] | None = None, timeout_s: float | None = None,
            stream: bool = False) -> RunResult:
        """Run argv on this backend's kernel; raise BackendError if the kernel itself fails."""
        ...


def job_environment(extra: Mapping[str, str] | None, backend: str) -> dict[str, str]:
    """The environment a job sees on every backend: the project importable, a sane PATH."""
    env = {
        "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        "PYTHONPATH": str(REPO_ROOT),
        # Compiled bytecode goes beside the scratch space, not into the repository.
        "PYTHONPYCACHEPREFIX": os.environ.get("TESTBED_PYCACHE", "/tmp/testbed-pycache"),
        # Mininet imports distutils; setuptools' replacement of it costs seconds per start
        # inside the pinned kernel, the standard library's costs nothing.
        "SETUPTOOLS_USE_DISTUTILS": "stdlib",
        "LANG": "C.UTF-8",
        "HOME": "/root",
        "TESTBED_BACKEND": backend,
    }
    for key in ("TESTBED_DEBUG",):
        if key in os.environ:
            env[key] = os.environ[key]
    if extra:
        env.update(extra)
    return env


def job_script(argv: Sequence[str], cwd: Path, env: Mapping[str, str]) -> str:
    """A POSIX shell script that runs argv in cwd with exactly env."""
    lines = ["#!/bin/sh", "set -e"]
    lines += [f"export {key}={shlex.quote(value)}" for key, value in sorted(env.items())]
    lines.append(f"cd {shlex.quote(str(cwd))}")
    lines.append("set +e")
    lines.append("exec " + shlex.join(argv))
    return "\n".join(lines) + "\n"
