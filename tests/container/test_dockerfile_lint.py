"""The Dockerfile passes hadolint, every rule it ignores says why, and the build context keeps
what the image needs (.git for the commit in meta.json) and leaves out results and builds."""
from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from tests.container.conftest import DOCKERFILE, REPO

# Where `make setup-test` (docker/setup.sh --test-tools) installs the pinned linter.
HADOLINT_VERSION = "2.15.1"
HADOLINT = Path(os.environ.get("TESTBED_TOOLS", "/var/cache/testbed/tools"),
                f"hadolint-{HADOLINT_VERSION}", "bin", "hadolint")


def hadolint() -> Path:
    if not HADOLINT.is_file():
        pytest.fail(f"hadolint {HADOLINT_VERSION} is not installed at {HADOLINT}: "
                    "run `make setup-test`", pytrace=False)
    return HADOLINT


def test_hadolint_passes():
    lint = subprocess.run([str(hadolint()), "--no-color", str(DOCKERFILE)],
                          capture_output=True, text=True, timeout=60)
    assert lint.returncode == 0, lint.stdout + lint.stderr


def test_hadolint_is_the_pinned_version():
    version = subprocess.run([str(hadolint()), "--version"], capture_output=True, text=True,
                             timeout=60).stdout
    assert f" {HADOLINT_VERSION}" in version, version


def test_every_ignored_rule_is_justified_in_a_comment_above_it():
    lines = DOCKERFILE.read_text().splitlines()
    ignores = [(i, line) for i, line in enumerate(lines) if "hadolint ignore=" in line]
    for index, line in ignores:
        rules = re.search(r"hadolint ignore=([\w,]+)", line).group(1).split(",")
        comment_above = []
        for above in reversed(lines[:index]):
            if not above.startswith("#"):
                break
            comment_above.append(above)
        for rule in rules:
            assert any(rule in c for c in comment_above), \
                f"line {index + 1} ignores {rule} without a comment above saying why"


def test_the_linter_reads_the_file_and_would_fail_without_the_ignores(tmp_path):
    """The linter really reads this file: a rule broken on purpose in a copy of it is reported,
    and the copy without the file's ignores (if it has any) fails too."""
    broken = tmp_path / "broken" / "Dockerfile"
    broken.parent.mkdir()
    broken.write_text(DOCKERFILE.read_text() + "RUN cd /tmp && ls\n")  # DL3003: use WORKDIR
    lint = subprocess.run([str(hadolint()), "--no-color", str(broken)], capture_output=True,
                          text=True, timeout=60)
    assert lint.returncode != 0 and "DL3003" in lint.stdout, lint.stdout
    ignores = [line for line in DOCKERFILE.read_text().splitlines() if "hadolint ignore=" in line]
    if ignores:
        stripped = tmp_path / "Dockerfile"
        stripped.write_text("".join(line for line in DOCKERFILE.read_text().splitlines(True)
                                    if "hadolint ignore=" not in line))
        lint = subprocess.run([str(hadolint()), "--no-color", str(stripped)],
                              capture_output=True, text=True, timeout=60)
        assert lint.returncode != 0 and "DL" in lint.stdout, lint.stdout


def test_build_context_keeps_git_and_drops_results_and_builds():
    patterns = [line.strip() for line in (REPO / ".dockerignore").read_text().splitlines()
                if line.strip() and not line.startswith("#")]
    assert "results/" in patterns
    assert any(p.startswith("ftp-impl/build") for p in patterns)
    assert not any(p.lstrip("/").startswith(".git") and p != ".gitignore" for p in patterns), \
        "meta.json's commit is read from .git inside the image"
