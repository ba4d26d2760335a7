"""Shared by every test folder: the repository importable, and a check at the end of the
session that no pinned-kernel process this test run started is still alive. Every kernel the
run starts, directly or through the programs it runs, carries the run's TESTBED_OWNER on its
command line (topology/kernel/uml.py): `.ci/run` sets one for the whole of `make test`."""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))
os.environ.setdefault("SETUPTOOLS_USE_DISTUTILS", "stdlib")
os.environ.setdefault("TESTBED_OWNER", f"pytest-{os.getpid()}")


def default_sigint(argv: list[str]) -> list[str]:
    """`argv` run with SIGINT at its default, for a child a test interrupts as a user's Ctrl-C
    would: a test session started in the background without job control (`nohup make test &`)
    ignores SIGINT, its children inherit that, and Python then never turns SIGINT into
    KeyboardInterrupt. A small Python resets it and execs `argv`, keeping its pid. Not a
    `preexec_fn`: that runs Python in a child forked from this multi-threaded process, where a
    lock another thread held at the fork can hang it before the exec."""
    return ["/usr/bin/python3", "-c",
            "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); "
            "os.execvp(sys.argv[1], sys.argv[1:])", *argv]


def command_lines() -> dict[int, list[str]]:
    """Every process's arguments, read from /proc (not from `ps`, whose output a COLUMNS in the
    environment would cut short): processes that end while being read are left out."""
    found = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            raw = Path(entry.path, "cmdline").read_bytes()
        except OSError:
            continue
        if raw:
            found[int(entry.name)] = raw.rstrip(b"\0").decode(errors="replace").split("\0")
    return found


def stray_kernels(marker: str = f"TESTBED_OWNER={os.environ['TESTBED_OWNER']}") -> list[str]:
    """"PID ARGS" of each User-Mode Linux process with the marker as one of its arguments (a
    marker ending in "-", such as "umid=tb<pid>-", as an argument's beginning)."""
    def marked(argv: list[str]) -> bool:
        return any(word == marker or (marker.endswith("-") and word.startswith(marker))
                   for word in argv)
    return [f"{pid} {' '.join(argv)}" for pid, argv in sorted(command_lines().items())
            if argv[0].endswith("linux.uml") and marked(argv)]


def kernels_and_children(pid: int) -> str:
    """What a test that looked for a kernel and found none reports: every User-Mode Linux
    process's start of line, and the processes under `pid` (the program that should have
    started it)."""
    lines = command_lines()
    parents = {}
    for each in lines:
        try:
            parents[each] = int(Path(f"/proc/{each}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
    under, frontier = [], [pid]
    while frontier:
        frontier = [child for child, parent in parents.items() if parent in frontier]
        under += frontier
    kernels = [f"{each} {' '.join(argv)[:160]}" for each, argv in sorted(lines.items())
               if argv[0].endswith("linux.uml")]
    tree = [f"{each} {' '.join(lines.get(each, ['?']))[:200]}" for each in under]
    return ("User-Mode Linux processes:\n" + ("\n".join(kernels) or "none") +
            f"\nprocesses under {pid}:\n" + ("\n".join(tree) or "none"))


def pytest_sessionfinish(session, exitstatus):  # noqa: ARG001
    leftovers = stray_kernels()
    if leftovers:
        print("\nstray pinned-kernel processes after the test session:\n" + "\n".join(leftovers))
        session.exitstatus = 1


def failed_runs(root: Path) -> list[str]:
    """Every run record under `root` that did not count, with its reasons, one line each."""
    lines = []
    for record_file in sorted(root.glob("**/runs/*/result.json")):
        try:
            record = json.loads(record_file.read_text())
        except (OSError, ValueError):
            continue
        if record.get("status") != "ok":
            reasons = "; ".join(record.get("reasons", [])) or "no reason recorded"
            lines.append(f"{record_file.parent.relative_to(root)}: {reasons[-400:]}")
    return lines


@pytest.hookimpl(trylast=True)
def pytest_terminal_summary(terminalreporter, exitstatus, config):  # noqa: ARG001
    """The experiments the tests ran keep their runs in the session's temporary folder; a run
    that failed and was redone (as the harness's policy says) is named here with its reasons,
    because CI keeps no artifacts and such a run otherwise leaves no trace in its output.
    Some tests fail runs on purpose (a link that dies, a half-finished run): they are listed
    too."""
    factory = getattr(config, "_tmp_path_factory", None)
    if factory is None:
        return
    lines = failed_runs(factory.getbasetemp())
    if lines:
        terminalreporter.section(f"runs that did not count ({len(lines)})")
        for line in lines:
            terminalreporter.write_line(line)
