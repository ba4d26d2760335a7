"""A short run of the libFuzzer targets of ftp-impl (ftp-impl/fuzz/README.md): they build with
clang, each replays its regression inputs and seed corpus, then fuzzes for a few seconds with
ASan, UBSan and LeakSanitizer, and none crashes. `make fuzz` runs the same for longer."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
IMPL = REPO / "ftp-impl"
FUZZ = IMPL / "fuzz"
BUILD = IMPL / "build-fuzz"
TARGETS = ("cmdio", "session", "addrparse", "reply", "listing", "confine", "msxfer", "cmdline",
           "blockmode", "extblock", "httpmsg")
SECONDS = 4            # per target: about 60 s for all eleven, with the replays
MIN_EXECS = 200        # the slowest target (a whole session) runs ~1000/s on 2 busy cores
LINE = re.compile(r"^fuzz_(\w+)\s+execs\s+(\d+)\s+cov\s+(\d+)\s+ft\s+(\d+)\s+corpus\s+(\d+)\s+"
                  r"replayed\s+(\d+)\s+([\d.]+) s\s+crashes\s+(\d+)\s+(.*)$")


def inputs(target: str) -> int:
    return sum(1 for folder in (FUZZ / "corpus" / target, FUZZ / "regressions" / target)
               if folder.is_dir() for p in folder.iterdir() if p.is_file())


def corpus_files() -> list[Path]:
    return sorted(p for p in (FUZZ / "corpus").rglob("*") if p.is_file())


@pytest.fixture(scope="module")
def built() -> Path:
    if shutil.which("clang") is None:
        pytest.fail("clang is not installed: run `make setup-test`", pytrace=False)
    build = subprocess.run(["make", "-C", str(IMPL), "-j2", "fuzz-build"], capture_output=True,
                           text=True, timeout=900)
    assert build.returncode == 0, build.stdout[-3000:] + build.stderr[-3000:]
    return BUILD


@pytest.fixture(scope="module")
def short_run(built: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, re.Match]:
    work = tmp_path_factory.mktemp("fuzz-work")
    before = corpus_files()
    run = subprocess.run([sys.executable, str(FUZZ / "run.py"), "--build", str(built), "--work",
                          str(work), "--seconds", str(SECONDS)], capture_output=True, text=True,
                         timeout=600, env={**os.environ, "TMPDIR": str(work)})
    lines = {m.group(1): m for m in map(LINE.match, run.stdout.splitlines()) if m}
    assert run.returncode == 0, run.stdout + run.stderr[-6000:]
    # what was found went to the scratch folder, not into the repository's corpus
    assert corpus_files() == before
    assert any((work / target).iterdir() for target in TARGETS)
    return lines


@pytest.mark.parametrize("target", TARGETS)
def test_target_runs_clean(short_run: dict[str, re.Match], target: str) -> None:
    m = short_run.get(target)
    assert m is not None, f"no result line for {target}"
    execs, cov, replayed, crashes = (int(m.group(i)) for i in (2, 3, 6, 8))
    assert crashes == 0 and m.group(9) == "ok", m.group(0)
    assert execs >= MIN_EXECS, m.group(0)
    assert cov >= 40, m.group(0)
    assert replayed == inputs(target) > 0, m.group(0)


def test_session_seed_gets_through_its_transfers(built: Path) -> None:
    """The in-memory transport still carries a whole TCP session: a captured seed logs in and
    each of its transfers ends with 226. A socket call of ftpd's that fails on the transport's
    descriptors (a socket option, a send of its own) would end every session early; the fuzzer
    would still run clean, on a fraction of the code."""
    run = subprocess.run([str(built / "fuzz_session"), str(FUZZ / "corpus/session/tcp-lsget")],
                         capture_output=True, text=True, timeout=60,
                         env={**os.environ, "FUZZ_SHOW_REPLIES": "1"})
    assert run.returncode == 0, run.stderr[-3000:]
    codes = [line[:3] for line in run.stderr.splitlines() if re.match(r"^\d{3} ", line)]
    assert "230" in codes and codes[-1] == "221", run.stderr[-3000:]
    assert codes.count("226") == codes.count("150") >= 5, run.stderr[-3000:]


def test_runner_reports_a_sanitizer_crash(tmp_path: Path) -> None:
    """The runner's verdict is not a formality: a target that prints a sanitizer report (here
    a stand-in for the binary) fails the run and is named, with exit status 1."""
    fake = tmp_path / "fuzz_confine"
    fake.write_text("#!/bin/sh\necho '==1==ERROR: AddressSanitizer: heap-buffer-overflow' >&2\n"
                    "exit 1\n")
    fake.chmod(0o755)
    run = subprocess.run([sys.executable, str(FUZZ / "run.py"), "--build", str(tmp_path),
                          "--work", str(tmp_path / "w"), "--targets", "confine", "--seconds",
                          "1"], capture_output=True, text=True, timeout=60)
    assert run.returncode == 1
    assert "fuzz_confine" in run.stdout and "CRASH" in run.stdout
    assert "AddressSanitizer" in run.stdout
