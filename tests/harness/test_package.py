"""The testbed is one installable package with one command: `pip install .` into a fresh venv
that sees Debian's Python packages gives `testbed`, whose help and every subcommand's help say
what it does with an example, and which works from any folder."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SUBCOMMANDS = ("run", "validate", "plan", "tables", "report", "net", "kernel", "fidelity",
               "bench", "assign", "bundle", "merge", "deploy-emulated")


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """testbed installed (not editable) into a fresh venv from a copy of the tracked tree (a
    build leaves build/ and egg-info beside the sources); the command's path."""
    source = tmp_path_factory.mktemp("source")
    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True,
                             check=True).stdout.decode().split("\0")
    for name in filter(None, tracked):
        if (REPO / name).is_file():
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, source / name)
    venv = tmp_path_factory.mktemp("venv")
    subprocess.run(["/usr/bin/python3", "-m", "venv", "--system-site-packages", str(venv)],
                   check=True, timeout=120)
    install = subprocess.run([str(venv / "bin" / "pip"), "install", "--quiet",
                              "--disable-pip-version-check", "--no-build-isolation", str(source)],
                             capture_output=True, text=True, timeout=600)
    assert install.returncode == 0, install.stderr[-3000:]
    return venv / "bin" / "testbed"


def run(command: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(command), *args], cwd=cwd, capture_output=True, text=True,
                          timeout=120)


def test_testbed_help_lists_every_command(installed, tmp_path):
    helped = run(installed, "--help", cwd=tmp_path)
    assert helped.returncode == 0, helped.stderr
    for name in SUBCOMMANDS:
        assert f"\n    {name}" in helped.stdout, name
    assert "testbed run demo" in helped.stdout


@pytest.mark.parametrize("name", SUBCOMMANDS)
def test_every_subcommand_says_what_it_does_with_an_example(installed, tmp_path, name):
    helped = run(installed, name, "--help", cwd=tmp_path)
    assert helped.returncode == 0, helped.stderr
    assert "example:\n  testbed " in helped.stdout


def test_the_installed_command_reads_the_shipped_experiments_from_anywhere(installed, tmp_path):
    checked = run(installed, "validate", "fairness", cwd=tmp_path)
    assert checked.returncode == 0, checked.stderr
    assert "bulk-flows workload on dumbbell, 16 points" in checked.stdout
    planned = run(installed, "plan", "smoke", cwd=tmp_path)
    assert "lan_loss0.03_200Kx10_sctp-ms-cp_sctp_published" in planned.stdout
    refused = run(installed, "validate", "no-such-experiment", cwd=tmp_path)
    assert refused.returncode == 2 and "no experiment called" in refused.stderr


def test_the_makefile_calls_the_installed_command():
    makefile = (REPO / "Makefile").read_text()
    assert "TESTBED := $(CURDIR)/.venv/bin/testbed" in makefile
    assert "PYTHONPATH" not in makefile
    assert (REPO / ".venv" / "bin" / "testbed").is_file(), "make setup installs the command"
