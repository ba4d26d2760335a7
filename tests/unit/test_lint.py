"""The linters the field uses, as configured in the repository, pass on the whole tree: ruff
(pyproject.toml) on the Python, shellcheck on the shell scripts, clang-format
(ftp-impl/.clang-format) on the C. Each is shown to catch what it is there to catch."""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TOOLS = Path(os.environ.get("TESTBED_TOOLS", "/var/cache/testbed/tools"))
RUFF_VERSION = "0.17.6"   # docker/setup.sh installs this one
RUFF = TOOLS / f"ruff-{RUFF_VERSION}" / "bin" / "ruff"


def tool(path_or_name: str | Path) -> str:
    found = str(path_or_name) if Path(path_or_name).is_file() else shutil.which(str(path_or_name))
    if not found:
        pytest.fail(f"{path_or_name} is not installed: run `make setup-test`", pytrace=False)
    return found


def tracked(*patterns: str) -> list[str]:
    out = subprocess.run(["git", "ls-files", *patterns], cwd=REPO, capture_output=True,
                         text=True, check=True).stdout
    return [line for line in out.splitlines() if (REPO / line).exists()]


def run(argv: list[str], **kwargs) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=300, **kwargs)


def test_ruff_passes():
    lint = run([tool(RUFF), "check", "--no-cache", "."])
    assert lint.returncode == 0, lint.stdout[-4000:] + lint.stderr


def test_ruff_is_pinned_and_reads_the_projects_rules(tmp_path):
    assert RUFF_VERSION in run([tool(RUFF), "--version"]).stdout
    bad = tmp_path / "bad.py"
    bad.write_text("import os\nimport sys\n\n\ndef f(x):\n    return x == None\n")
    lint = run([tool(RUFF), "check", "--no-cache", "--config", str(REPO / "pyproject.toml"),
                str(bad)])
    assert lint.returncode != 0 and "F401" in lint.stdout and "E711" in lint.stdout


def test_shellcheck_passes():
    scripts = tracked("*.sh", ".ci/run")
    assert len(scripts) >= 5
    lint = run([tool("shellcheck"), "--external-sources", *scripts])
    assert lint.returncode == 0, lint.stdout[-4000:] + lint.stderr


def test_clang_format_passes():
    # every folder of ftp-impl/: common/, one per program, fuzz/
    sources = tracked("ftp-impl/*.c", "ftp-impl/*.h")
    assert len(sources) >= 30
    lint = run([tool("clang-format"), "--dry-run", "--Werror", *sources])
    assert lint.returncode == 0, lint.stderr[-4000:]


def test_clang_format_uses_the_projects_style(tmp_path):
    misformatted = tmp_path / "ftp-impl" / "common" / "probe.c"
    misformatted.parent.mkdir(parents=True)
    shutil.copy(REPO / "ftp-impl" / ".clang-format", tmp_path / "ftp-impl" / ".clang-format")
    misformatted.write_text("int  main( void ){return 0;}\n")
    lint = run([tool("clang-format"), "--dry-run", "--Werror", str(misformatted)])
    assert lint.returncode != 0
