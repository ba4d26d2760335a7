"""Shared by every test folder: the repository importable, each test's kind as a mark, and a
check at the end of the session that no pinned-kernel process this test run started is still
alive. Every kernel the run starts, directly or through the programs it runs, carries the run's
TESTBED_OWNER on its command line (topology/kernel/uml.py): `.ci/run` sets one for the whole of
`make test`.

Kinds (pyproject.toml's markers): `unit`, `host`, `kernel`, and `slow` beside any of them. A
folder's tests get its kind from FOLDER_KINDS unless a file (`pytestmark`) or a test says
otherwise. A test not marked `kernel` runs with TESTBED_NO_KERNEL set, so one that boots a
pinned kernel, even through a program it starts, fails with the reason."""
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
# make test runs files two at a time (pytest-xdist): each worker's kernels carry its own mark,
# so a worker's end-of-session check sees its own kernels and not the other's
if os.environ.get("PYTEST_XDIST_WORKER"):
    os.environ["TESTBED_OWNER"] += f"-{os.environ['PYTEST_XDIST_WORKER']}"


KINDS = ("unit", "host", "kernel")
# What measures time, rates or load, and so runs alone after the rest (`serial`: make test runs
# the others two files at a time): the links' fidelity, the virtual clock against the real
# one, the real-time smoke's pcap-against-client agreement, goodput and cwnd traces, a
# kernel's halt within its limit, and the two tests that each start a Slurm cluster. The era
# stack's tests run in virtual time, so load cannot change what they check, but they boot
# kernels that keep both cores busy, and beside them the real-time tests of the other worker
# (a tcp-pipelined session under a sanitizer, the pcap-against-client agreements) missed
# their limits. The capture of headers' own time check is a virtual-time run's, but the
# wall-cpu clock charges busy time as the host spends it, so load moved it by 2.6 ms. The wall
# profile's stamps are the real-time smoke's too: beside it, one smoke run serves all four
# (the smoke fixture is per test session, and each phase is one).
SERIAL = ("core/test_fidelity_benchmark.py", "core/test_topologies.py", "virtual/",
          "harness/test_smoke.py", "harness/test_phases.py", "harness/test_wall_profile.py",
          "core/test_era_switches.py",
          "harness/test_era_stack_run.py", "harness/test_capture_of_headers.py",
          "unit/test_kernel_cancel.py", "bulkflow/test_kernel.py", "container/test_image.py",
          "slurm/")
FOLDER_KINDS = {"unit": "unit", "analysis": "unit", "fuzz": "host", "ftp": "host", "web": "host",
                "bulkflow": "host", "playbooks": "host", "container": "host", "core": "kernel",
                "harness": "kernel", "virtual": "kernel", "slurm": "kernel"}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        where = Path(str(item.fspath)).relative_to(REPO / "tests")
        if not any(item.get_closest_marker(kind) for kind in KINDS):
            item.add_marker(FOLDER_KINDS.get(where.parts[0], "kernel"))
        if where.as_posix().startswith(SERIAL):
            item.add_marker("serial")


def pytest_runtest_setup(item: pytest.Item) -> None:
    """Before the test's fixtures: unless it is marked `kernel`, no pinned kernel may boot."""
    from topology.kernel.uml import NO_KERNEL_ENV
    if item.get_closest_marker("kernel"):
        os.environ.pop(NO_KERNEL_ENV, None)
    else:
        os.environ[NO_KERNEL_ENV] = f"{item.nodeid} is not marked kernel"


def pytest_runtest_teardown(item: pytest.Item) -> None:
    from topology.kernel.uml import NO_KERNEL_ENV
    os.environ.pop(NO_KERNEL_ENV, None)


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
